// TokenSource: the bearer token to send, fixed or read from a file that is replaced as it
// rotates (a projected service-account token is renewed by the kubelet about hourly, and the
// old one stops working). A file token is re-read when the copy in hand is older than
// `max_age` (a minute by default, as client-go's cached file token source), and at once after
// Invalidate(), which the client calls when the server answers 401. Whitespace around the token
// is dropped. When a re-read fails but an earlier token is in hand, that one is kept (the file
// may be mid-replacement) and the read is tried again on the next call.
//
// Thread-safe: Token() and Invalidate() may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "kube/kube_error.h"

namespace tessera::kube {

class TokenSource {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // `token` is used when `token_file` is empty; neither set means no Authorization header.
  TokenSource(std::string token, std::string token_file,
              std::chrono::seconds max_age = std::chrono::seconds(60), Clock clock = {});

  // The token, or "" when none is configured; kConfig naming the file when it cannot be read
  // and no earlier token is in hand.
  KubeOutcome<std::string> Token();
  // Forget the token in hand, so the next Token() reads the file again (after a 401).
  void Invalidate();
  // How many times the file was read (tests).
  int ReadsForTest() const;

 private:
  const std::string static_token_;
  const std::string token_file_;
  const std::chrono::seconds max_age_;
  const Clock clock_;

  mutable std::mutex mutex_;
  std::string token_;                                             // guarded by mutex_
  std::optional<std::chrono::steady_clock::time_point> read_at_;  // guarded by mutex_
  bool invalidated_ = false;                                      // guarded by mutex_
  int reads_ = 0;                                                 // guarded by mutex_
};

}  // namespace tessera::kube
