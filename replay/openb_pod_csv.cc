// Implementation of the openb CSV reader declared in openb_pod_csv.h.
#include "openb_pod_csv.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <unordered_map>

#ifndef TESSERA_SOURCE_DIR
#define TESSERA_SOURCE_DIR "."
#endif

namespace tessera::replay {
namespace {

std::vector<std::string> SplitFields(const std::string& line, char separator) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t end = line.find(separator, start);
    fields.push_back(line.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return fields;
}

// A CSV file read whole: the header's column positions and the rows, with their line numbers
// for error messages.
struct CsvTable {
  std::string path;
  std::unordered_map<std::string, size_t> columns;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;

  std::string Where(size_t row) const { return path + ":" + std::to_string(lines[row]); }
};

StatusOr<CsvTable> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot open '" + path + "'");
  CsvTable table;
  table.path = path;
  std::string line;
  int number = 0;
  bool header = true;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> fields = SplitFields(line, ',');
    if (header) {
      for (size_t i = 0; i < fields.size(); ++i) table.columns[fields[i]] = i;
      header = false;
      continue;
    }
    table.rows.push_back(std::move(fields));
    table.lines.push_back(number);
  }
  if (header) return InvalidArgumentError("'" + path + "' is empty");
  return table;
}

// Column positions looked up once; a missing required column is an error naming the file.
class Columns {
 public:
  explicit Columns(const CsvTable& table) : table_(table) {}

  StatusOr<size_t> Required(const std::string& name) const {
    auto it = table_.columns.find(name);
    if (it == table_.columns.end()) {
      return InvalidArgumentError("'" + table_.path + "' has no column '" + name + "'");
    }
    return it->second;
  }
  std::optional<size_t> Optional(const std::string& name) const {
    auto it = table_.columns.find(name);
    if (it == table_.columns.end()) return std::nullopt;
    return it->second;
  }

 private:
  const CsvTable& table_;
};

const std::string& Field(const CsvTable& table, size_t row, size_t column) {
  static const std::string kEmpty;
  const std::vector<std::string>& fields = table.rows[row];
  return column < fields.size() ? fields[column] : kEmpty;
}

// An integer field; empty reads as nullopt.
StatusOr<std::optional<int64_t>> OptionalInt(const CsvTable& table, size_t row, size_t column,
                                             const std::string& name) {
  const std::string& text = Field(table, row, column);
  if (text.empty()) return std::optional<int64_t>();
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return InvalidArgumentError(table.Where(row) + ": " + name + ": '" + text +
                                "' is not an integer");
  }
  return std::optional<int64_t>(value);
}

StatusOr<int64_t> RequiredInt(const CsvTable& table, size_t row, size_t column,
                              const std::string& name) {
  TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> value, OptionalInt(table, row, column, name));
  if (!value) return InvalidArgumentError(table.Where(row) + ": " + name + ": empty");
  return *value;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

StatusOr<std::vector<OpenbNode>> ReadOpenbNodes(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(CsvTable table, ReadCsv(path));
  Columns columns(table);
  TESSERA_ASSIGN_OR_RETURN(size_t sn, columns.Required("sn"));
  TESSERA_ASSIGN_OR_RETURN(size_t cpu, columns.Required("cpu_milli"));
  TESSERA_ASSIGN_OR_RETURN(size_t memory, columns.Required("memory_mib"));
  TESSERA_ASSIGN_OR_RETURN(size_t gpu, columns.Required("gpu"));
  TESSERA_ASSIGN_OR_RETURN(size_t model, columns.Required("model"));
  std::vector<OpenbNode> nodes;
  nodes.reserve(table.rows.size());
  for (size_t r = 0; r < table.rows.size(); ++r) {
    OpenbNode& node = nodes.emplace_back();
    node.name = Field(table, r, sn);
    TESSERA_ASSIGN_OR_RETURN(node.cpu_milli, RequiredInt(table, r, cpu, "cpu_milli"));
    TESSERA_ASSIGN_OR_RETURN(node.memory_mib, RequiredInt(table, r, memory, "memory_mib"));
    TESSERA_ASSIGN_OR_RETURN(int64_t gpus, RequiredInt(table, r, gpu, "gpu"));
    node.gpus = static_cast<int>(gpus);
    node.model = Field(table, r, model);
    if (node.gpus > 0 && node.model.empty()) {
      return InvalidArgumentError(table.Where(r) + ": model: empty on a node with GPUs");
    }
  }
  return nodes;
}

StatusOr<std::vector<OpenbPod>> ReadOpenbPods(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(CsvTable table, ReadCsv(path));
  Columns columns(table);
  TESSERA_ASSIGN_OR_RETURN(size_t name, columns.Required("name"));
  TESSERA_ASSIGN_OR_RETURN(size_t cpu, columns.Required("cpu_milli"));
  TESSERA_ASSIGN_OR_RETURN(size_t memory, columns.Required("memory_mib"));
  TESSERA_ASSIGN_OR_RETURN(size_t num_gpu, columns.Required("num_gpu"));
  TESSERA_ASSIGN_OR_RETURN(size_t gpu_milli, columns.Required("gpu_milli"));
  const std::optional<size_t> spec = columns.Optional("gpu_spec");
  const std::optional<size_t> qos = columns.Optional("qos");
  const std::optional<size_t> phase = columns.Optional("pod_phase");
  const std::optional<size_t> creation = columns.Optional("creation_time");
  const std::optional<size_t> deletion = columns.Optional("deletion_time");
  const std::optional<size_t> scheduled = columns.Optional("scheduled_time");
  const bool has_times = creation && deletion && scheduled;

  std::vector<OpenbPod> pods;
  pods.reserve(table.rows.size());
  for (size_t r = 0; r < table.rows.size(); ++r) {
    OpenbPod& pod = pods.emplace_back();
    pod.name = Field(table, r, name);
    TESSERA_ASSIGN_OR_RETURN(pod.cpu_milli, RequiredInt(table, r, cpu, "cpu_milli"));
    TESSERA_ASSIGN_OR_RETURN(pod.memory_mib, RequiredInt(table, r, memory, "memory_mib"));
    TESSERA_ASSIGN_OR_RETURN(int64_t gpus, RequiredInt(table, r, num_gpu, "num_gpu"));
    pod.num_gpu = static_cast<int>(gpus);
    TESSERA_ASSIGN_OR_RETURN(int64_t milli, RequiredInt(table, r, gpu_milli, "gpu_milli"));
    pod.gpu_milli = static_cast<int>(milli);
    if (spec) {
      const std::string& text = Field(table, r, *spec);
      if (!text.empty()) {
        for (std::string& model : SplitFields(text, '|')) {
          if (!model.empty()) pod.gpu_models.push_back(std::move(model));
        }
      }
    }
    if (qos) pod.qos = Field(table, r, *qos);
    if (phase) pod.phase = Field(table, r, *phase);
    pod.has_times = has_times;
    if (has_times) {
      TESSERA_ASSIGN_OR_RETURN(pod.creation_s, RequiredInt(table, r, *creation, "creation_time"));
      TESSERA_ASSIGN_OR_RETURN(pod.deletion_s, OptionalInt(table, r, *deletion, "deletion_time"));
      TESSERA_ASSIGN_OR_RETURN(pod.scheduled_s,
                               OptionalInt(table, r, *scheduled, "scheduled_time"));
    }
  }
  return pods;
}

std::string OpenbDataDir(const std::string& override) {
  if (!override.empty()) return override;
  if (const char* env = std::getenv("TESSERA_OPENB_DIR"); env && *env) return env;
  // The data lives beside the repository (shared by every checkout), never inside it.
  return std::string(TESSERA_SOURCE_DIR) + "/../shared/data/openb";
}

StatusOr<std::string> ResolveOpenbFile(const std::string& name, const std::string& data_dir,
                                       const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (name.find('/') != std::string::npos || fs::is_regular_file(name, ec)) {
    if (fs::is_regular_file(name, ec)) return name;
    return NotFoundError("no file '" + name + "'");
  }
  const std::vector<std::string> candidates = {data_dir + "/" + prefix + name + ".csv",
                                               data_dir + "/" + name + ".csv",
                                               data_dir + "/" + name};
  for (const std::string& path : candidates) {
    if (fs::is_regular_file(path, ec)) return fs::weakly_canonical(path, ec).string();
  }
  std::string tried;
  for (const std::string& path : candidates) tried += (tried.empty() ? "" : ", ") + path;
  return NotFoundError("'" + name + "' is neither a file nor a trace in the data folder (tried " +
                       tried +
                       "; set TESSERA_OPENB_DIR, or the data folder flag: tessera-bench --data, "
                       "tessera-replay --openb-data)");
}

int64_t OpenbGpuMemoryMib(const std::string& model) {
  static const std::map<std::string, int64_t> kMemoryGib = {
      {"V100M16", 16}, {"V100M32", 32}, {"P100", 16}, {"T4", 16},
      {"A10", 24},     {"G1", 16},      {"G2", 16},   {"G3", 16},
  };
  auto it = kMemoryGib.find(model);
  return (it == kMemoryGib.end() ? 16 : it->second) * 1024;
}

v1::SimulatedCluster OpenbCluster(const std::vector<OpenbNode>& nodes) {
  using Shape = std::tuple<int64_t, int64_t, int, std::string>;
  std::map<Shape, int> group_of;  // shape -> index in cluster.groups.
  std::map<std::string, int> prefix_uses;
  v1::SimulatedCluster cluster;
  for (const OpenbNode& node : nodes) {
    const Shape shape{node.cpu_milli, node.memory_mib, node.gpus, node.model};
    auto [it, added] = group_of.emplace(shape, cluster.groups_size());
    if (!added) {
      v1::SimulatedNodeGroup* group = cluster.mutable_groups(it->second);
      group->set_count(group->count() + 1);
      continue;
    }
    v1::SimulatedNodeGroup* group = cluster.add_groups();
    const std::string kind =
        node.gpus > 0 ? Lower(node.model) + "x" + std::to_string(node.gpus) : std::string("cpu");
    std::string prefix = kind + "-" + std::to_string(node.cpu_milli / 1000) + "c-" +
                         std::to_string(node.memory_mib / 1024) + "g";
    // Shapes that differ below the rounding would share a prefix, and so node names.
    if (const int uses = prefix_uses[prefix]++; uses > 0) prefix += "-s" + std::to_string(uses);
    group->set_name_prefix(prefix);
    group->set_count(1);
    group->set_cpu_milli(node.cpu_milli);
    group->set_memory_mib(node.memory_mib);
    group->set_gpus(node.gpus);
    if (node.gpus > 0) {
      group->set_gpu_model(node.model);
      group->set_gpu_memory_mib(OpenbGpuMemoryMib(node.model));
    }
  }
  return cluster;
}

}  // namespace tessera::replay
