#include "scenario/scenario.h"

#include <google/protobuf/text_format.h>

#include <sstream>

namespace tessera::scenario {
namespace {

std::string OneLine(const google::protobuf::Message& message) {
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  printer.PrintToString(message, &text);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

bool ParseMessage(const std::string& text, google::protobuf::Message& message) {
  return google::protobuf::TextFormat::ParseFromString(text, &message);
}

// The rest of `line` after `n` space-separated words.
std::string After(const std::string& line, int n) {
  size_t at = 0;
  for (int i = 0; i < n && at != std::string::npos; ++i) {
    at = line.find(' ', at);
    if (at != std::string::npos) ++at;
  }
  return at == std::string::npos ? "" : line.substr(at);
}

}  // namespace

std::string Print(const Scenario& s) {
  std::ostringstream out;
  out << "seed " << s.seed << "\n";
  out << "cluster " << OneLine(s.cluster) << "\n";
  for (const v1::QueueSpec& q : s.queues) out << "queue " << OneLine(q) << "\n";
  out << "preemption min_runtime_s=" << s.min_runtime_s << " cooldown_s=" << s.cooldown_s << "\n";
  for (const Step& step : s.steps) {
    out << "at " << step.at_ms << " ";
    switch (step.kind) {
      case StepKind::kSubmit:
        out << "submit " << OneLine(step.job);
        break;
      case StepKind::kCancel:
        out << "cancel " << step.target;
        break;
      case StepKind::kFailGpu:
        out << "fail_gpu " << step.node << " " << step.gpu;
        break;
      case StepKind::kRecover:
        out << "recover " << step.node;
        break;
      case StepKind::kDrain:
        out << "drain " << step.node;
        break;
      case StepKind::kRestart:
        out << "restart";
        break;
    }
    out << "\n";
  }
  return out.str();
}

bool Parse(const std::string& text, Scenario& s, std::string& error) {
  s = Scenario{};
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    while (!line.empty() && (line.front() == ' ')) line.erase(0, 1);
    if (line.empty()) continue;
    std::istringstream words(line);
    std::string word;
    words >> word;
    bool ok = true;
    if (word == "seed") {
      ok = static_cast<bool>(words >> s.seed);
    } else if (word == "cluster") {
      ok = ParseMessage(After(line, 1), s.cluster);
    } else if (word == "queue") {
      ok = ParseMessage(After(line, 1), s.queues.emplace_back());
    } else if (word == "preemption") {
      std::string a, b;
      words >> a >> b;
      ok = a.rfind("min_runtime_s=", 0) == 0 && b.rfind("cooldown_s=", 0) == 0;
      if (ok) {
        s.min_runtime_s = std::stoll(a.substr(14));
        s.cooldown_s = std::stoll(b.substr(11));
      }
    } else if (word == "at") {
      Step step;
      std::string kind;
      ok = static_cast<bool>(words >> step.at_ms >> kind);
      if (kind == "submit") {
        step.kind = StepKind::kSubmit;
        ok = ok && ParseMessage(After(line, 3), step.job);
      } else if (kind == "cancel") {
        step.kind = StepKind::kCancel;
        ok = ok && static_cast<bool>(words >> step.target);
      } else if (kind == "fail_gpu") {
        step.kind = StepKind::kFailGpu;
        ok = ok && static_cast<bool>(words >> step.node >> step.gpu);
      } else if (kind == "recover" || kind == "drain") {
        step.kind = kind == "recover" ? StepKind::kRecover : StepKind::kDrain;
        ok = ok && static_cast<bool>(words >> step.node);
      } else if (kind == "restart") {
        step.kind = StepKind::kRestart;
      } else {
        ok = false;
      }
      if (ok) s.steps.push_back(std::move(step));
    } else {
      ok = false;
    }
    if (!ok) {
      error = "line " + std::to_string(number) + ": cannot read '" + line + "'";
      return false;
    }
  }
  return true;
}

}  // namespace tessera::scenario
