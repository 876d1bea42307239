#include "plugins/plugin_worker.h"

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <optional>

namespace tessera {

struct PluginWorker::State {
  std::string plugin;
  std::chrono::milliseconds deadline;  // for calls queued without one.
  std::function<void(const std::string&)> on_hung;

  struct Queued {
    std::string what;
    Call call;
    std::chrono::milliseconds deadline;
  };
  struct Running {
    std::string what;
    std::chrono::steady_clock::time_point due;
    std::chrono::milliseconds deadline;
  };

  mutable std::mutex mu;
  std::condition_variable wake;   // the worker: a call was queued, or stop.
  std::condition_variable watch;  // the watchdog: a call started or finished, or stop.
  std::deque<Queued> queue;
  std::optional<Running> running;
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
    Call next;
    {
      std::unique_lock<std::mutex> lock(s->mu);
      s->wake.wait(lock, [&] { return s->stopping || s->hung || !s->queue.empty(); });
      if (s->stopping || s->hung) {
        s->queue.clear();  // queued calls are dropped: their closures report nothing.
        return;
      }
      State::Queued queued = std::move(s->queue.front());
      s->queue.pop_front();
      s->running =
          State::Running{std::move(queued.what), std::chrono::steady_clock::now() + queued.deadline,
                         queued.deadline};
      next = std::move(queued.call);
      ++s->calls_started;
    }
    s->watch.notify_all();
    next();
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
    const auto due = s->running->due;
    s->watch.wait_until(lock, due,
                        [&] { return s->stopping || !s->running || s->calls_started != call; });
    if (s->running && s->calls_started == call && std::chrono::steady_clock::now() >= due) {
      s->hung = true;
      s->reporting_hang = true;
      const std::string why =
          "plugin '" + s->plugin + "': " + s->running->what + " did not return within " +
          std::to_string(s->running->deadline.count()) + " ms; the call is abandoned";
      lock.unlock();
      s->wake.notify_all();
      if (s->on_hung) s->on_hung(why);
      lock.lock();
      s->reporting_hang = false;
      return;
    }
  }
}

std::optional<std::chrono::milliseconds> PluginWorker::Enqueue(std::string what, Call call,
                                                               std::chrono::milliseconds deadline) {
  if (deadline.count() <= 0) deadline = state_->deadline;
  std::chrono::milliseconds wait = deadline;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->hung || state_->stopping) return std::nullopt;
    for (const State::Queued& ahead : state_->queue) wait += ahead.deadline;
    if (state_->running) wait += state_->running->deadline;
    state_->queue.push_back(State::Queued{std::move(what), std::move(call), deadline});
  }
  state_->wake.notify_one();
  return wait;
}

bool PluginWorker::Post(std::string what, Call call, std::chrono::milliseconds deadline) {
  return Enqueue(std::move(what), std::move(call), deadline).has_value();
}

Status PluginWorker::RunAndWait(std::string what, Call call, std::chrono::milliseconds deadline) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  const std::string name = what;
  const std::optional<std::chrono::milliseconds> wait = Enqueue(
      std::move(what),
      [call = std::move(call), done] {
        call();
        done->set_value();
      },
      deadline);
  if (!wait) {
    return UnavailableError("plugin '" + state_->plugin + "' is unhealthy; " + name +
                            " was not called");
  }
  if (finished.wait_for(*wait) != std::future_status::ready) {
    const auto own = deadline.count() > 0 ? deadline : state_->deadline;
    return UnavailableError("plugin '" + state_->plugin + "': " + name + " did not return within " +
                            std::to_string(own.count()) + " ms");
  }
  return Status::Ok();
}

bool PluginWorker::PostAndWait(std::string what, Call call, std::chrono::milliseconds deadline) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  const std::optional<std::chrono::milliseconds> wait = Enqueue(
      std::move(what),
      [call = std::move(call), done] {
        call();
        done->set_value();
      },
      deadline);
  if (!wait) return false;
  // A call that outlives the wait is the watchdog's to report.
  finished.wait_for(*wait);
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
