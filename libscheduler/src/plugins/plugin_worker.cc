#include "plugins/plugin_worker.h"

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <optional>

namespace tessera {

struct PluginWorker::State {
  std::string plugin;
  std::chrono::milliseconds deadline;
  std::function<void(const std::string&)> on_hung;

  mutable std::mutex mu;
  std::condition_variable wake;   // the worker: a call was queued, or stop.
  std::condition_variable watch;  // the watchdog: a call started or finished, or stop.
  std::deque<std::pair<std::string, Call>> queue;
  std::optional<std::pair<std::string, std::chrono::steady_clock::time_point>> running;
  uint64_t calls_started = 0;
  bool hung = false;
  bool reporting_hang = false;  // on_hung is running: its follow-ups are not posted yet.
  bool stopping = false;
};

PluginWorker::PluginWorker(std::string plugin, std::chrono::milliseconds deadline,
                           std::function<void(const std::string& why)> on_hung)
    : state_(std::make_shared<State>()) {
  state_->plugin = std::move(plugin);
  state_->deadline = deadline;
  state_->on_hung = std::move(on_hung);
  worker_ = std::thread(&PluginWorker::Run, state_);
  watchdog_ = std::thread(&PluginWorker::Watch, state_);
}

PluginWorker::~PluginWorker() {
  bool hung;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
    hung = state_->hung;
  }
  state_->wake.notify_all();
  state_->watch.notify_all();
  watchdog_.join();
  // A hung call may never return: leave its thread behind rather than hang the scheduler.
  if (hung) {
    worker_.detach();
  } else {
    worker_.join();
  }
}

void PluginWorker::Run(std::shared_ptr<State> s) {
  pthread_setname_np(pthread_self(), "tessera-plugin");
  while (true) {
    std::pair<std::string, Call> next;
    {
      std::unique_lock<std::mutex> lock(s->mu);
      s->wake.wait(lock, [&] { return s->stopping || s->hung || !s->queue.empty(); });
      if (s->stopping || s->hung) {
        s->queue.clear();  // queued calls are dropped: their closures report nothing.
        return;
      }
      next = std::move(s->queue.front());
      s->queue.pop_front();
      s->running.emplace(next.first, std::chrono::steady_clock::now());
      ++s->calls_started;
    }
    s->watch.notify_all();
    next.second();
    {
      std::lock_guard<std::mutex> lock(s->mu);
      s->running.reset();
      if (s->hung) return;  // abandoned while it ran: the watchdog has reported it.
    }
    s->watch.notify_all();
  }
}

void PluginWorker::Watch(std::shared_ptr<State> s) {
  std::unique_lock<std::mutex> lock(s->mu);
  while (!s->stopping && !s->hung) {
    if (!s->running) {
      s->watch.wait(lock);
      continue;
    }
    const uint64_t call = s->calls_started;
    const auto due = s->running->second + s->deadline;
    s->watch.wait_until(lock, due,
                        [&] { return s->stopping || !s->running || s->calls_started != call; });
    if (s->running && s->calls_started == call && std::chrono::steady_clock::now() >= due) {
      s->hung = true;
      s->reporting_hang = true;
      const std::string why = "plugin '" + s->plugin + "': " + s->running->first +
                              " did not return within " + std::to_string(s->deadline.count()) +
                              " ms; the call is abandoned";
      lock.unlock();
      s->wake.notify_all();
      if (s->on_hung) s->on_hung(why);
      lock.lock();
      s->reporting_hang = false;
      return;
    }
  }
}

bool PluginWorker::Post(std::string what, Call call) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->hung || state_->stopping) return false;
    state_->queue.emplace_back(std::move(what), std::move(call));
  }
  state_->wake.notify_one();
  return true;
}

Status PluginWorker::RunAndWait(std::string what, Call call) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  const std::string name = what;
  if (!Post(std::move(what), [call = std::move(call), done] {
        call();
        done->set_value();
      })) {
    return UnavailableError("plugin '" + state_->plugin + "' is unhealthy; " + name +
                            " was not called");
  }
  // The queue may hold calls ahead of this one, each with its own deadline.
  const auto limit = state_->deadline * (1 + static_cast<int>(InFlight()));
  if (finished.wait_for(limit) != std::future_status::ready) {
    return UnavailableError("plugin '" + state_->plugin + "': " + name + " did not return within " +
                            std::to_string(state_->deadline.count()) + " ms");
  }
  return Status::Ok();
}

bool PluginWorker::PostAndWait(std::string what, Call call) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  if (!Post(std::move(what), [call = std::move(call), done] {
        call();
        done->set_value();
      })) {
    return false;
  }
  // As RunAndWait: the calls queued ahead have their deadlines too. A call that outlives the
  // wait is the watchdog's to report.
  finished.wait_for(state_->deadline * (1 + static_cast<int>(InFlight())));
  return true;
}

size_t PluginWorker::InFlight() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  // A hung call no longer counts, but reporting the hang does: whoever waits for quiet must
  // see what on_hung sets off.
  if (state_->hung) return state_->reporting_hang ? 1 : 0;
  return state_->queue.size() + (state_->running ? 1 : 0);
}

bool PluginWorker::hung() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->hung;
}

}  // namespace tessera
