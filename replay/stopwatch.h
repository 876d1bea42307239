// Stopwatch: a wall-clock interval on the monotonic clock, for measuring how long a replay (or a
// benchmark) took in real time, as opposed to the virtual time it simulated.
//
// Thread safety: a value; one thread at a time.
#pragma once

#include <chrono>

namespace tessera::replay {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void Restart() { start_ = std::chrono::steady_clock::now(); }
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  double Millis() const { return Seconds() * 1e3; }
  std::chrono::steady_clock::time_point start() const { return start_; }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tessera::replay
