// WorkQueue: a few threads that run the backend's API calls (create, bind, delete a pod) so that
// the host's calls return at once. The host gives each call a deadline of seconds, while one API
// call may back off for longer (429, 5xx), and a gang's pods should be created together rather
// than one after another. Jobs run in no particular order; Stop() drops what has not started and
// waits for what has.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

namespace tessera::kubernetes {

class WorkQueue {
 public:
  using Job = std::function<void(std::stop_token)>;

  explicit WorkQueue(int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this](std::stop_token stop) { Run(stop); });
    }
  }
  ~WorkQueue() { Stop(); }
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Push(Job job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
      jobs_.clear();
    }
    for (std::jthread& t : threads_) t.request_stop();
    cv_.notify_all();
    threads_.clear();  // joins.
  }

 private:
  void Run(std::stop_token stop) {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopped_ || !jobs_.empty(); });
        if (stopped_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job(stop);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;  // guarded by mu_
  bool stopped_ = false;  // guarded by mu_
  std::vector<std::jthread> threads_;
};

}  // namespace tessera::kubernetes
