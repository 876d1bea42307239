// Within: runs a call and ends the whole test run loudly (naming the call) if it has not
// returned by its deadline. A call that never answers is the bug under test, and a test that
// hangs would only be cut off by the CI timeout, without saying where.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>

namespace tessera::testing {

class Watchdog {
 public:
  Watchdog(std::chrono::milliseconds limit, const char* what)
      : thread_([this, limit, what] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "FATAL: %s did not return within %lld ms\n", what,
                         static_cast<long long>(limit.count()));
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

template <typename F>
auto Within(std::chrono::milliseconds limit, const char* what, F&& fn) {
  Watchdog watchdog(limit, what);
  return std::forward<F>(fn)();
}

}  // namespace tessera::testing
