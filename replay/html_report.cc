// Implementation of the HTML replay report (html_report.h).
#include "html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "tessera/job.h"

namespace tessera::replay {
namespace {

constexpr int kBuckets = 200;
constexpr int kMaxQueuesDrawn = 10;  // the rest are drawn together as "other".
constexpr double kWidth = 640, kHeight = 220, kLeft = 56, kBottom = 28, kTop = 10, kRight = 150;

const char* const kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#666666"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '"') {
      out += "&quot;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Num(double v, const char* format = "%.4g") {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, v);
  return buffer;
}

// Time-averaged GPU milli held per bucket, per queue, over [epoch, end].
std::map<std::string, std::vector<double>> HeldPerBucket(const ReplayResult& r) {
  std::map<std::string, std::vector<double>> held;
  const double span = static_cast<double>(std::max<TimestampUs>(1, r.end_us - r.epoch_us));
  const double width = span / kBuckets;
  for (const ReplayedJob& job : r.jobs) {
    if (job.id == 0 || job.start_us <= 0 || job.gpu_milli == 0) continue;
    std::vector<double>& q = held[job.queue];
    if (q.empty()) q.assign(kBuckets, 0.0);
    const double s = static_cast<double>(job.start_us - r.epoch_us);
    const double e = static_cast<double>((job.end_us > 0 ? job.end_us : r.end_us) - r.epoch_us);
    int first = std::clamp(static_cast<int>(s / width), 0, kBuckets - 1);
    int last = std::clamp(static_cast<int>(e / width), 0, kBuckets - 1);
    for (int b = first; b <= last; ++b) {
      const double lo = std::max(s, b * width);
      const double hi = std::min(e, (b + 1) * width);
      if (hi > lo) q[b] += static_cast<double>(job.gpu_milli) * (hi - lo) / width;
    }
  }
  return held;
}

struct Axes {
  double x_max;
  double y_max;
  double X(double x) const { return kLeft + (kWidth - kLeft - kRight) * x / x_max; }
  double Y(double y) const { return kTop + (kHeight - kTop - kBottom) * (1 - y / y_max); }
};

void OpenSvg(std::ostream& out, const Axes& a, const std::string& x_label,
             const std::string& y_label, bool log_x = false) {
  out << "<svg width='" << kWidth << "' height='" << kHeight
      << "' xmlns='http://www.w3.org/2000/svg'"
      << " font-family='sans-serif' font-size='10'>\n";
  out << "<line x1='" << kLeft << "' y1='" << a.Y(0) << "' x2='" << a.X(a.x_max) << "' y2='"
      << a.Y(0) << "' stroke='black'/>\n";
  out << "<line x1='" << kLeft << "' y1='" << a.Y(0) << "' x2='" << kLeft << "' y2='"
      << a.Y(a.y_max) << "' stroke='black'/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double y = a.y_max * i / 4;
    out << "<text x='" << kLeft - 4 << "' y='" << a.Y(y) + 3 << "' text-anchor='end'>"
        << Num(y, "%.3g") << "</text>\n";
    const double x = a.x_max * i / 4;
    const double label = log_x ? std::pow(10.0, x) - 1 : x;
    out << "<text x='" << a.X(x) << "' y='" << a.Y(0) + 12 << "' text-anchor='middle'>"
        << Num(label, "%.3g") << "</text>\n";
  }
  out << "<text x='" << (kLeft + kWidth - kRight) / 2 << "' y='" << kHeight - 4
      << "' text-anchor='middle'>" << Escape(x_label) << "</text>\n";
  out << "<text x='12' y='" << (kTop + kHeight - kBottom) / 2 << "' transform='rotate(-90 12,"
      << (kTop + kHeight - kBottom) / 2 << ")' text-anchor='middle'>" << Escape(y_label)
      << "</text>\n";
}

void Legend(std::ostream& out, int index, const std::string& name) {
  const double y = kTop + 12 * index;
  out << "<rect x='" << kWidth - kRight + 8 << "' y='" << y << "' width='10' height='8' fill='"
      << kColours[std::min(index, 10)] << "'/><text x='" << kWidth - kRight + 22 << "' y='" << y + 8
      << "'>" << Escape(name) << "</text>\n";
}

// The queues to draw: the kMaxQueuesDrawn that held the most GPU time, then "other".
std::vector<std::string> TopQueues(const std::map<std::string, std::vector<double>>& held) {
  std::vector<std::pair<double, std::string>> totals;
  for (const auto& [name, v] : held) {
    double sum = 0;
    for (double x : v) sum += x;
    totals.push_back({-sum, name});
  }
  std::sort(totals.begin(), totals.end());
  std::vector<std::string> names;
  for (size_t i = 0; i < totals.size() && i < kMaxQueuesDrawn; ++i)
    names.push_back(totals[i].second);
  return names;
}

void UtilisationPlot(std::ostream& out, const ReplayResult& r, int64_t capacity_milli,
                     const std::map<std::string, std::vector<double>>& held) {
  const double days = static_cast<double>(r.end_us - r.epoch_us) / 86400e6;
  Axes a{std::max(days, 1e-9), 100};
  OpenSvg(out, a, "days", "GPU utilisation %");
  out << "<polyline fill='none' stroke='" << kColours[0] << "' points='";
  for (int b = 0; b < kBuckets; ++b) {
    double total = 0;
    for (const auto& [name, v] : held) total += v[b];
    const double pct = capacity_milli > 0 ? 100.0 * total / static_cast<double>(capacity_milli) : 0;
    out << a.X(days * (b + 0.5) / kBuckets) << ',' << a.Y(pct) << ' ';
  }
  out << "'/>\n</svg>\n";
}

void SharePlot(std::ostream& out, const ReplayResult& r, int64_t capacity_milli,
               const std::map<std::string, std::vector<double>>& held) {
  const double days = static_cast<double>(r.end_us - r.epoch_us) / 86400e6;
  Axes a{std::max(days, 1e-9), 1};
  OpenSvg(out, a, "days", "share of the GPUs (stacked)");
  const std::vector<std::string> top = TopQueues(held);
  std::vector<std::vector<double>> layers;
  std::vector<std::string> names;
  for (const std::string& name : top) {
    layers.push_back(held.at(name));
    names.push_back(name);
  }
  if (held.size() > top.size()) {
    std::vector<double> other(kBuckets, 0.0);
    for (const auto& [name, v] : held) {
      if (std::find(top.begin(), top.end(), name) != top.end()) continue;
      for (int b = 0; b < kBuckets; ++b) other[b] += v[b];
    }
    layers.push_back(other);
    names.push_back("other");
  }
  std::vector<double> below(kBuckets, 0.0);
  for (size_t l = 0; l < layers.size(); ++l) {
    std::vector<double> above(kBuckets);
    for (int b = 0; b < kBuckets; ++b) {
      above[b] = below[b] + (capacity_milli > 0 ? layers[l][b] / capacity_milli : 0);
    }
    out << "<polygon fill='" << kColours[std::min<size_t>(l, 10)] << "' points='";
    for (int b = 0; b < kBuckets; ++b) {
      out << a.X(days * (b + 0.5) / kBuckets) << ',' << a.Y(std::min(1.0, above[b])) << ' ';
    }
    for (int b = kBuckets - 1; b >= 0; --b) {
      out << a.X(days * (b + 0.5) / kBuckets) << ',' << a.Y(std::min(1.0, below[b])) << ' ';
    }
    out << "'/>\n";
    Legend(out, static_cast<int>(l), names[l]);
    below = above;
  }
  out << "</svg>\n";
}

void WaitCdfPlot(std::ostream& out, const ReplayResult& r) {
  std::map<std::string, std::vector<double>> waits;
  for (const ReplayedJob& job : r.jobs) {
    if (job.id == 0 || job.start_us <= 0) continue;
    waits[job.queue].push_back(static_cast<double>(job.start_us - job.submit_us) / 1e6);
  }
  double max_wait = 1;
  for (auto& [name, v] : waits) {
    std::sort(v.begin(), v.end());
    max_wait = std::max(max_wait, v.back());
  }
  // x = log10(1 + wait), so that waits of 0 sit at the left edge and long tails stay visible.
  Axes a{std::log10(1 + max_wait), 1};
  OpenSvg(out, a, "wait (s, log scale)", "share of the queue's jobs", /*log_x=*/true);
  std::vector<std::pair<double, std::string>> by_size;
  for (const auto& [name, v] : waits) by_size.push_back({-static_cast<double>(v.size()), name});
  std::sort(by_size.begin(), by_size.end());
  for (size_t q = 0; q < by_size.size() && q < kMaxQueuesDrawn; ++q) {
    const std::vector<double>& v = waits[by_size[q].second];
    out << "<polyline fill='none' stroke='" << kColours[q] << "' points='";
    const size_t step = std::max<size_t>(1, v.size() / 400);
    for (size_t i = 0; i < v.size(); i += step) {
      out << a.X(std::log10(1 + v[i])) << ',' << a.Y(static_cast<double>(i + 1) / v.size()) << ' ';
    }
    out << a.X(std::log10(1 + v.back())) << ',' << a.Y(1) << "'/>\n";
    Legend(out, static_cast<int>(q), by_size[q].second);
  }
  out << "</svg>\n";
}

}  // namespace

void WriteHtmlReport(std::ostream& out, const std::string& title, const Trace& trace,
                     const std::vector<ReportRun>& runs) {
  out << "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>" << Escape(title)
      << "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#eee}"
         ".runs{display:flex;flex-wrap:wrap;gap:2em}</style></head><body>\n";
  out << "<h1>" << Escape(title) << "</h1>\n<p>" << trace.jobs.size() << " jobs (" << trace.bad_rows
      << " bad rows), " << runs.size() << " replay(s).</p>\n";
  const char* fields[] = {"avg_jct_s",
                          "p50_jct_s",
                          "p95_jct_s",
                          "p99_jct_s",
                          "avg_wait_s",
                          "p95_wait_s",
                          "makespan_s",
                          "gpu_util_pct",
                          "jain_fairness",
                          "max_finish_time_fairness",
                          "avg_finish_time_fairness",
                          "preemptions",
                          "lost_gpu_hours",
                          "finished",
                          "unfinished",
                          "speedup"};
  out << "<table><tr><th>figure</th>";
  for (const ReportRun& run : runs) out << "<th>" << Escape(run.label) << "</th>";
  out << "</tr>\n";
  for (const char* field : fields) {
    out << "<tr><td style='text-align:left'>" << field << "</td>";
    for (const ReportRun& run : runs) {
      const nlohmann::json& v = run.summary[field];
      out << "<td>" << (v.is_number() ? Num(v.get<double>(), "%.6g") : std::string("")) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table>\n";
  const std::pair<const char*, int> sections[] = {{"GPU utilisation over time", 0},
                                                  {"Share of the GPUs per queue over time", 1},
                                                  {"Wait-time CDF per queue", 2}};
  for (const auto& [heading, kind] : sections) {
    out << "<h2>" << heading << "</h2>\n<div class='runs'>\n";
    for (const ReportRun& run : runs) {
      out << "<div><h3>" << Escape(run.label) << "</h3>\n";
      const ReplayResult& r = run.run->result;
      const int64_t capacity = run.run->gpus * 1000;
      const auto held = HeldPerBucket(r);
      if (kind == 0) UtilisationPlot(out, r, capacity, held);
      if (kind == 1) SharePlot(out, r, capacity, held);
      if (kind == 2) WaitCdfPlot(out, r);
      out << "</div>\n";
    }
    out << "</div>\n";
  }
  out << "</body></html>\n";
}

}  // namespace tessera::replay
