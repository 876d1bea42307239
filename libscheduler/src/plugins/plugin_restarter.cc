#include "plugins/plugin_restarter.h"

#include <pthread.h>

#include "common/log.h"

namespace tessera {
namespace {

constexpr std::chrono::milliseconds kFirstBackoff{100};
constexpr std::chrono::minutes kWindow{1};

}  // namespace

PluginRestarter::PluginRestarter(std::string plugin, int max_restarts_per_minute,
                                 std::function<StatusOr<Restarted>()> start,
                                 std::function<void(Restarted)> install, LogOptions log)
    : plugin_(std::move(plugin)),
      log_(std::move(log)),
      max_per_minute_(max_restarts_per_minute),
      start_(std::move(start)),
      install_(std::move(install)) {
  thread_ = std::thread([this] { Loop(); });
}

void PluginRestarter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  std::lock_guard<std::mutex> lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

void PluginRestarter::Schedule(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_ || stopping_) return;
    pending_ = true;
  }
  LogWarning(log_, "plugin '{}': restarting it ({})", plugin_, why);
  wake_.notify_all();
}

bool PluginRestarter::Busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !stopping_ && (pending_ || running_);
}

int PluginRestarter::restarts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return restarts_;
}

void PluginRestarter::Loop() {
  pthread_setname_np(pthread_self(), "tessera-restart");
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || pending_; });
    if (stopping_) return;
    const auto now = std::chrono::steady_clock::now();
    while (!recent_.empty() && now - recent_.front() >= kWindow) recent_.pop_front();
    if (static_cast<int>(recent_.size()) >= max_per_minute_) {
      LogError(log_,
               "plugin '{}': restarted {} times within a minute; giving up, it stays unhealthy "
               "until the scheduler is reopened",
               plugin_, recent_.size());
      pending_ = false;
      continue;
    }
    const auto backoff = kFirstBackoff * (1 << recent_.size());
    if (wake_.wait_for(lock, backoff, [&] { return stopping_; })) return;
    recent_.push_back(std::chrono::steady_clock::now());
    ++restarts_;
    // A Schedule from now on (the new instance failing already) asks for another restart.
    pending_ = false;
    running_ = true;
    lock.unlock();
    StatusOr<Restarted> started = start_();
    if (started.ok()) {
      LogInfo(log_, "plugin '{}': restarted; {} nodes, {} live tasks", plugin_,
              started->inventory.size(), started->live.size());
      install_(std::move(*started));
    } else {
      LogError(log_, "plugin '{}': restart failed: {}", plugin_, started.status().message());
    }
    lock.lock();
    running_ = false;
    if (!started.ok()) pending_ = true;  // tried again, within the budget.
  }
}

}  // namespace tessera
