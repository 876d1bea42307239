// CSV traces through a column map (trace_input.h, docs/replay.md). The first line is the header.
// Fields may be quoted with '"' ("" inside a quoted field is one quote); a field may not span
// lines. Each data row becomes one job:
//
//   submit        seconds or ISO 8601 (required)
//   duration_s    seconds the job runs, > 0 (required)
//   gpus          whole GPUs per task (default 0)
//   gpu_milli     share of one GPU per task, 1..1000, for fractional jobs (gpus must be 0 or 1)
//   cpu_milli     cpu per task in milli-cores (default 1000)
//   memory_mib    memory per task in MiB (default 1024)
//   tasks         replicas, all started together (default 1)
//   priority_class  a configured class name (default: the config's default class)
//   queue, user   the leaf queue: <parent>/<queue>/<user>, each segment sanitised
//   name          the job's name (default: "line-<n>")
//
// An empty cell means "not given" (the default applies); a cell that does not parse makes the
// row bad.
#include <algorithm>
#include <fstream>
#include <optional>

#include "trace_input.h"

namespace tessera::replay {
namespace {

const std::vector<std::string>& KnownFields() {
  static const std::vector<std::string> kFields = {
      "submit", "duration_s",     "gpus",  "gpu_milli", "cpu_milli", "memory_mib",
      "tasks",  "priority_class", "queue", "user",      "name"};
  return kFields;
}

constexpr int64_t kDefaultCpuMilli = 1000;
constexpr int64_t kDefaultMemoryMib = 1024;

// Splits one CSV line; false when a quote is left open.
bool SplitCsvLine(const std::string& line, std::vector<std::string>* fields) {
  fields->clear();
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields->push_back(std::move(field));
      field.clear();
    } else {
      field.push_back(c);
    }
  }
  fields->push_back(std::move(field));
  return !quoted;
}

std::string Trim(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// Column index of each field the header has, from the map.
using ColumnIndex = std::map<std::string, size_t>;

StatusOr<ColumnIndex> IndexHeader(const std::vector<std::string>& header, const CsvColumns& columns,
                                  const std::string& path) {
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < header.size(); ++i) position.emplace(Trim(header[i]), i);
  ColumnIndex index;
  for (const std::string& field : KnownFields()) {
    auto mapped = columns.column_of.find(field);
    const std::string column = mapped == columns.column_of.end() ? field : mapped->second;
    auto found = position.find(column);
    if (found != position.end()) {
      index[field] = found->second;
    } else if (mapped != columns.column_of.end()) {
      return InvalidArgumentError(path + ":1: --columns maps " + field + " to column '" + column +
                                  "', which the header does not have");
    }
  }
  for (const char* required : {"submit", "duration_s"}) {
    if (!index.count(required)) {
      return InvalidArgumentError(path + ":1: no column for " + std::string(required) +
                                  " (map one with --columns " + required + "=<header name>)");
    }
  }
  return index;
}

Status ReadRow(const std::vector<std::string>& cells, const ColumnIndex& index,
               const std::string& queue_parent, int64_t line, double* submit_s, v1::JobSpec* spec) {
  auto cell = [&](const std::string& field) -> std::string {
    auto it = index.find(field);
    if (it == index.end() || it->second >= cells.size()) return "";
    return Trim(cells[it->second]);
  };
  auto integer = [&](const std::string& field, int64_t fallback) -> StatusOr<int64_t> {
    const std::string text = cell(field);
    if (text.empty()) return fallback;
    return ParseInteger(text, field);
  };
  size_t needed = 0;
  for (const auto& [field, column] : index) needed = std::max(needed, column + 1);
  if (cells.size() < needed) {
    return InvalidArgumentError(std::to_string(cells.size()) + " cells, the mapped columns need " +
                                std::to_string(needed));
  }
  const std::string submit = cell("submit");
  if (submit.empty()) return InvalidArgumentError("submit: empty");
  TESSERA_ASSIGN_OR_RETURN(*submit_s, ParseTraceSeconds(submit));
  const std::string duration = cell("duration_s");
  if (duration.empty()) return InvalidArgumentError("duration_s: empty");
  TESSERA_ASSIGN_OR_RETURN(double duration_s, ParseNumber(duration, "duration_s"));
  TESSERA_RETURN_IF_ERROR(SetDurationSeconds(duration_s, spec));

  v1::TaskResources* task = spec->mutable_task();
  TESSERA_ASSIGN_OR_RETURN(int64_t cpu, integer("cpu_milli", kDefaultCpuMilli));
  TESSERA_ASSIGN_OR_RETURN(int64_t memory, integer("memory_mib", kDefaultMemoryMib));
  TESSERA_ASSIGN_OR_RETURN(int64_t gpus, integer("gpus", 0));
  TESSERA_ASSIGN_OR_RETURN(int64_t gpu_milli, integer("gpu_milli", 0));
  TESSERA_ASSIGN_OR_RETURN(int64_t tasks, integer("tasks", 1));
  if (cpu <= 0) return InvalidArgumentError("cpu_milli: must be > 0, got " + std::to_string(cpu));
  if (memory <= 0) {
    return InvalidArgumentError("memory_mib: must be > 0, got " + std::to_string(memory));
  }
  if (gpus < 0) return InvalidArgumentError("gpus: must be >= 0, got " + std::to_string(gpus));
  if (gpu_milli < 0 || gpu_milli > 1000) {
    return InvalidArgumentError("gpu_milli: must be 0..1000, got " + std::to_string(gpu_milli));
  }
  if (gpu_milli > 0 && gpu_milli < 1000 && gpus > 1) {
    return InvalidArgumentError("gpu_milli: a share of a GPU needs gpus 0 or 1, got " +
                                std::to_string(gpus));
  }
  if (tasks < 1) return InvalidArgumentError("tasks: must be >= 1, got " + std::to_string(tasks));
  task->set_cpu_milli(cpu);
  task->set_memory_mib(memory);
  if (gpu_milli > 0 && gpu_milli < 1000) {
    task->set_gpu_count(1);
    task->set_gpu_milli(static_cast<int32_t>(gpu_milli));
  } else {
    task->set_gpu_count(static_cast<int32_t>(gpus));
  }
  if (tasks > 1) spec->set_tasks(static_cast<int32_t>(tasks));
  if (const std::string pc = cell("priority_class"); !pc.empty()) spec->set_priority_class(pc);

  std::string queue = queue_parent;
  const std::string raw_queue = cell("queue");
  const std::string raw_user = cell("user");
  if (!raw_queue.empty()) queue = JoinQueue(queue, SanitizeQueueSegment(raw_queue));
  if (!raw_user.empty()) queue = JoinQueue(queue, SanitizeQueueSegment(raw_user));
  if (raw_queue.empty() && raw_user.empty()) queue = JoinQueue(queue, "all");
  spec->set_queue(queue);
  const std::string name = cell("name");
  spec->set_name(name.empty() ? "line-" + std::to_string(line) : name.substr(0, 253));
  return Status::Ok();
}

}  // namespace

StatusOr<CsvColumns> ParseCsvColumns(const std::string& spec) {
  CsvColumns columns;
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      return InvalidArgumentError("--columns: '" + item + "' is not field=column");
    }
    const std::string field = item.substr(0, eq);
    const std::vector<std::string>& known = KnownFields();
    if (std::find(known.begin(), known.end(), field) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return InvalidArgumentError("--columns: unknown field '" + field + "'; known: " + list);
    }
    if (!columns.column_of.emplace(field, item.substr(eq + 1)).second) {
      return InvalidArgumentError("--columns: " + field + " mapped twice");
    }
  }
  return columns;
}

StatusOr<Trace> ReadCsvTrace(const std::string& path, const CsvColumns& columns,
                             const std::string& queue_parent) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot open trace '" + path + "'");
  std::string line;
  std::vector<std::string> cells;
  int64_t number = 0;
  std::optional<ColumnIndex> index;
  TraceBuilder builder;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (Trim(line).empty()) continue;
    if (!index) {
      if (!SplitCsvLine(line, &cells)) {
        return InvalidArgumentError(path + ":" + std::to_string(number) +
                                    ": header has an unclosed quote");
      }
      TESSERA_ASSIGN_OR_RETURN(index, IndexHeader(cells, columns, path));
      continue;
    }
    builder.CountRow();
    if (!SplitCsvLine(line, &cells)) {
      builder.Bad(number, "unclosed quote");
      continue;
    }
    double submit_s = 0;
    v1::JobSpec spec;
    if (Status status = ReadRow(cells, *index, queue_parent, number, &submit_s, &spec);
        !status.ok()) {
      builder.Bad(number, status.message());
      continue;
    }
    builder.Add(submit_s, std::move(spec));
  }
  if (!index) return InvalidArgumentError(path + ": empty file (no header line)");
  return builder.Finish();
}

}  // namespace tessera::replay
