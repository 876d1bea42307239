#include "mps/mps_limits.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

namespace tessera::mps {
namespace {

std::string Trimmed(const std::string& text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

}  // namespace

plugin::PluginStatus CheckLimits(const MpsLimits& limits, const std::string& what) {
  if (limits.active_thread_pct < 1 || limits.active_thread_pct > 100) {
    return plugin::PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                       what + ".active_thread_pct: must be 1..100, got " +
                                           std::to_string(limits.active_thread_pct));
  }
  if (limits.pinned_memory_mib < 0) {
    return plugin::PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                       what +
                                           ".pinned_memory_mib: must be 0 (no limit) or more, "
                                           "got " +
                                           std::to_string(limits.pinned_memory_mib));
  }
  return plugin::PluginStatus::Ok();
}

MpsLimits EffectiveLimits(const MpsLimits& client, const MpsLimits& ceiling) {
  MpsLimits effective;
  effective.active_thread_pct = std::min(client.active_thread_pct, ceiling.active_thread_pct);
  if (client.pinned_memory_mib == 0 || ceiling.pinned_memory_mib == 0) {
    effective.pinned_memory_mib = std::max(client.pinned_memory_mib, ceiling.pinned_memory_mib);
  } else {
    effective.pinned_memory_mib = std::min(client.pinned_memory_mib, ceiling.pinned_memory_mib);
  }
  return effective;
}

std::string PinnedMemoryValue(int64_t mib) { return std::to_string(mib) + "M"; }

std::optional<double> ParseThreadPercentage(const std::string& answer) {
  const std::string text = Trimmed(answer);
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

std::optional<int64_t> ParsePinnedMemoryMib(const std::string& answer) {
  std::string text = Trimmed(answer);
  if (!text.empty() && (text.back() == 'B' || text.back() == 'b')) text.pop_back();
  if (text.empty()) return std::nullopt;
  int64_t scale_bytes = 1;  // a bare number is bytes.
  const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (unit == 'M' || unit == 'G' || unit == 'K') {
    scale_bytes = unit == 'K' ? 1024 : unit == 'M' ? (1 << 20) : (int64_t{1} << 30);
    text.pop_back();
  }
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value * scale_bytes / (1 << 20);
}

}  // namespace tessera::mps
