#include "progress.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <iostream>

namespace tessera::cli {

Progress::Progress(std::string label, bool quiet)
    : label_(std::move(label)), quiet_(quiet), terminal_(isatty(STDERR_FILENO) == 1) {}

void Progress::Update(const std::string& detail) {
  const auto now = std::chrono::steady_clock::now();
  const auto interval =
      terminal_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
  if (shown_ && now - last_ < interval) return;
  Show(detail, false);
}

void Progress::Finish(const std::string& detail) { Show(detail, true); }

void Progress::Show(const std::string& detail, bool final) {
  if (quiet_) return;
  last_ = std::chrono::steady_clock::now();
  shown_ = true;
  if (terminal_) {
    // \r and "erase to end of line", so a shorter line leaves no tail of the longer one.
    std::cerr << '\r' << label_ << ": " << detail << "\x1b[K" << (final ? "\n" : "") << std::flush;
  } else {
    std::cerr << label_ << ": " << detail << '\n' << std::flush;
  }
}

std::string HumanBytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  } else if (bytes >= 1024) {
    std::snprintf(text, sizeof(text), "%.0f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(text, sizeof(text), "%llu B", static_cast<unsigned long long>(bytes));
  }
  return text;
}

}  // namespace tessera::cli
