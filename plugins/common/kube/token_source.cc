#include "kube/token_source.h"

#include "kube/file_text.h"

namespace tessera::kube {

TokenSource::TokenSource(std::string token, std::string token_file, std::chrono::seconds max_age,
                         Clock clock)
    : static_token_(std::move(token)),
      token_file_(std::move(token_file)),
      max_age_(max_age),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })) {}

KubeOutcome<std::string> TokenSource::Token() {
  if (token_file_.empty()) return static_token_;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = clock_();
  const bool fresh = read_at_.has_value() && !invalidated_ && now - *read_at_ < max_age_;
  if (fresh) return token_;
  std::string text, error;
  ++reads_;
  if (!ReadFileText(token_file_, &text, &error)) {
    if (!token_.empty()) return token_;
    return MakeError(KubeErrorKind::kConfig, "token file " + token_file_ + ": " + error);
  }
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  if (text.empty()) {
    if (!token_.empty()) return token_;
    return MakeError(KubeErrorKind::kConfig, "token file " + token_file_ + ": empty");
  }
  token_ = std::move(text);
  read_at_ = now;
  invalidated_ = false;
  return token_;
}

void TokenSource::Invalidate() {
  std::lock_guard<std::mutex> lock(mutex_);
  invalidated_ = true;
}

int TokenSource::ReadsForTest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reads_;
}

}  // namespace tessera::kube
