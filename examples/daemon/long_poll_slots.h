// LongPollSlots: how many event long polls (GET /v1/events with wait_ms) each token holds open,
// bounded by server.max_long_polls_per_token, so that one tenant cannot hold the daemon's
// connections and memory with waits. A poll over the bound is answered 429 at once.
//
// Thread safety: TryAcquire from any thread; a slot may be released on any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tesserad {

class LongPollSlots {
 public:
  explicit LongPollSlots(int max_per_token) : max_per_token_(max_per_token) {}

  // A slot for `holder` (a token's name), held until the returned handle is destroyed; null
  // when `holder` holds max_per_token() already. The LongPollSlots must outlive its handles.
  std::shared_ptr<void> TryAcquire(const std::string& holder);

  int max_per_token() const { return max_per_token_; }

 private:
  void Release(const std::string& holder);

  const int max_per_token_;
  std::mutex mu_;
  std::unordered_map<std::string, int> open_;
};

}  // namespace tesserad
