// TokenBucket: the client-side request rate limit, as client-go's flowcontrol token bucket:
// tokens accrue at `qps` per second up to `burst`, each request takes one, and a request that
// finds none waits until one has accrued. Reservations are handed out in order, so waiting
// callers are served first come, first served, and a burst after a quiet spell goes through at
// once. client-go defaults to 5 QPS / 10 burst, far too low for a scheduler binding hundreds
// of pods a second; KubeClientOptions (kube_client.h) defaults to 500 / 1000, what the
// Kubernetes backend should use against a real API server (whose own priority-and-fairness
// limits then apply). qps <= 0 means no limit.
//
// Reserve() is the arithmetic (now in, wait out), tested alone with a fake clock; Acquire()
// sleeps for it. Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <stop_token>

namespace tessera::kube {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  TokenBucket(double qps, int burst);

  // Takes a token at `now` and says how long the caller must wait before using it (zero when
  // one was in hand). The wait is the caller's to honour.
  Clock::duration Reserve(Clock::time_point now);
  // Takes a token and sleeps until it may be used. False (and the token is given back) when the
  // wait would pass `deadline` or `stop` is requested while waiting. `waited`, when not null,
  // says whether it had to wait.
  bool Acquire(Clock::time_point deadline, const std::stop_token& stop, bool* waited = nullptr);

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void GiveBack();

  const double qps_;
  const int burst_;
  std::mutex mutex_;
  double tokens_;           // guarded by mutex_; negative: reservations waiting for tokens
  Clock::time_point last_;  // guarded by mutex_; when tokens_ was last brought up to date
  bool started_ = false;    // guarded by mutex_
};

}  // namespace tessera::kube
