// Implementation of the shared trace-reading pieces declared in trace_input.h.
#include "trace_input.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

namespace tessera::replay {
namespace {

// Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian), after Howard Hinnant's
// days_from_civil.
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// Reads exactly `width` digits at text[*pos].
bool Digits(const std::string& text, size_t* pos, size_t width, int64_t* out) {
  if (*pos + width > text.size()) return false;
  int64_t v = 0;
  for (size_t i = 0; i < width; ++i) {
    const char c = text[*pos + i];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *pos += width;
  *out = v;
  return true;
}

bool Expect(const std::string& text, size_t* pos, char c) {
  if (*pos >= text.size() || text[*pos] != c) return false;
  ++*pos;
  return true;
}

std::optional<double> ParseIso8601(const std::string& text) {
  size_t pos = 0;
  int64_t year, month, day, hour = 0, minute = 0, second = 0;
  if (!Digits(text, &pos, 4, &year) || !Expect(text, &pos, '-') || !Digits(text, &pos, 2, &month) ||
      !Expect(text, &pos, '-') || !Digits(text, &pos, 2, &day)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31) return std::nullopt;
  double fraction = 0;
  if (pos < text.size()) {
    if (text[pos] != 'T' && text[pos] != ' ') return std::nullopt;
    ++pos;
    if (!Digits(text, &pos, 2, &hour) || !Expect(text, &pos, ':') ||
        !Digits(text, &pos, 2, &minute)) {
      return std::nullopt;
    }
    if (pos < text.size() && text[pos] == ':') {
      ++pos;
      if (!Digits(text, &pos, 2, &second)) return std::nullopt;
      if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
        ++pos;
        double scale = 0.1;
        const size_t start = pos;
        while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
          fraction += (text[pos] - '0') * scale;
          scale /= 10;
          ++pos;
        }
        if (pos == start) return std::nullopt;
      }
    }
    if (hour > 23 || minute > 59 || second > 60) return std::nullopt;
  }
  int64_t offset_s = 0;
  if (pos < text.size()) {
    if (text[pos] == 'Z') {
      ++pos;
    } else if (text[pos] == '+' || text[pos] == '-') {
      const int sign = text[pos] == '+' ? 1 : -1;
      ++pos;
      int64_t oh, om = 0;
      if (!Digits(text, &pos, 2, &oh)) return std::nullopt;
      if (pos < text.size() && text[pos] == ':') ++pos;
      if (pos < text.size() && !Digits(text, &pos, 2, &om)) return std::nullopt;
      offset_s = sign * (oh * 3600 + om * 60);
    } else {
      return std::nullopt;
    }
  }
  if (pos != text.size()) return std::nullopt;
  const int64_t seconds =
      DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  return static_cast<double>(seconds) + fraction;
}

}  // namespace

void TraceBuilder::Add(double submit_s, v1::JobSpec spec) {
  rows_.push_back(Row{submit_s, std::move(spec)});
}

void TraceBuilder::Bad(int64_t line, std::string reason) {
  ++trace_.bad_rows;
  if (trace_.first_bad.size() < kBadRowsKept) {
    trace_.first_bad.push_back(BadRow{line, std::move(reason)});
  }
}

Trace TraceBuilder::Finish() {
  for (size_t i = 1; i < rows_.size(); ++i) {
    if (rows_[i].submit_s < rows_[i - 1].submit_s) ++trace_.out_of_order;
  }
  std::stable_sort(rows_.begin(), rows_.end(),
                   [](const Row& a, const Row& b) { return a.submit_s < b.submit_s; });
  trace_.first_submit_s = rows_.empty() ? 0 : rows_.front().submit_s;
  std::set<std::string> seen;
  trace_.jobs.reserve(rows_.size());
  for (Row& row : rows_) {
    ReplayJob& job = trace_.jobs.emplace_back();
    job.submit_offset_us = std::llround((row.submit_s - trace_.first_submit_s) * 1e6);
    if (seen.insert(row.spec.queue()).second) trace_.queues.push_back(row.spec.queue());
    job.spec = std::move(row.spec);
  }
  rows_.clear();
  return std::move(trace_);
}

StatusOr<double> ParseNumber(const std::string& text, const std::string& field) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(*begin))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(end[-1]))) --end;
  double value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (begin == end || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    return InvalidArgumentError(field + ": not a number '" + text + "'");
  }
  return value;
}

StatusOr<int64_t> ParseInteger(const std::string& text, const std::string& field) {
  TESSERA_ASSIGN_OR_RETURN(double value, ParseNumber(text, field));
  if (value != std::floor(value) || std::fabs(value) > 9e15) {
    return InvalidArgumentError(field + ": not a whole number '" + text + "'");
  }
  return static_cast<int64_t>(value);
}

StatusOr<double> ParseTraceSeconds(const std::string& text) {
  if (StatusOr<double> number = ParseNumber(text, "submit"); number.ok()) return *number;
  if (std::optional<double> iso = ParseIso8601(text)) return *iso;
  return InvalidArgumentError("submit: '" + text +
                              "' is neither seconds nor an ISO 8601 time (2023-11-14T10:00:00Z)");
}

std::string SanitizeQueueSegment(const std::string& raw) {
  std::string out;
  for (char c : raw) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    out.push_back(ok ? c : '-');
  }
  if (out.empty()) return "unknown";
  if (!std::isalnum(static_cast<unsigned char>(out[0]))) out = "q" + out;
  if (out.size() > 63) out.resize(63);
  return out;
}

std::string JoinQueue(const std::string& parent, const std::string& segment) {
  return parent.empty() ? segment : parent + "/" + segment;
}

Status SetDurationSeconds(double seconds, v1::JobSpec* spec) {
  if (!(seconds > 0)) {
    return InvalidArgumentError("duration_s: must be > 0, got " + std::to_string(seconds));
  }
  spec->mutable_simulation()->set_duration_ms(std::max<int64_t>(1, std::llround(seconds * 1e3)));
  return Status::Ok();
}

}  // namespace tessera::replay
