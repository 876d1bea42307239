#include "fgd_results.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace tessera::bench {
namespace {

std::vector<std::string> SplitCommas(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

}  // namespace

const std::vector<std::string>& FgdTraceNames() {
  static const std::vector<std::string> names = {
      "default",    "cpu050",     "cpu100",     "cpu200",     "cpu250",    "gpushare100",
      "gpushare40", "gpushare60", "gpushare80", "gpuspec10",  "gpuspec20", "gpuspec25",
      "gpuspec33",  "multigpu20", "multigpu30", "multigpu40", "multigpu50"};
  return names;
}

std::string OpenbTraceName(const std::string& path) {
  const std::string stem = std::filesystem::path(path).stem().string();
  const std::string prefix = "openb_pod_list_";
  return stem.starts_with(prefix) ? stem.substr(prefix.size()) : stem;
}

PublishedCurves ReadFgdResults(const std::string& data_dir) {
  PublishedCurves curves;
  const std::string path = data_dir + "/fgd_expected_results/analysis_allo_discrete.csv";
  std::ifstream in(path);
  if (!in) return curves;
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = SplitCommas(line);
  size_t workload = header.size(), policy = header.size(), first = header.size();
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "workload") workload = i;
    if (header[i] == "sc_policy") policy = i;
    if (header[i] == "0") first = i;
  }
  if (workload == header.size() || policy == header.size() || first == header.size()) {
    throw std::runtime_error(path + ": expected columns workload, sc_policy and 0..130");
  }
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    const std::vector<std::string> row = SplitCommas(line);
    if (row.size() <= first) continue;
    std::vector<double> values(131, std::numeric_limits<double>::quiet_NaN());
    for (size_t k = 0; k < values.size() && first + k < row.size(); ++k) {
      if (row[first + k].empty()) continue;
      try {
        values[k] = std::stod(row[first + k]);
      } catch (const std::exception&) {
        throw std::runtime_error(path + ":" + std::to_string(line_no) + ": bad number '" +
                                 row[first + k] + "'");
      }
    }
    std::string name = row[policy];  // "06-FGD" -> "FGD"
    if (size_t dash = name.find('-'); dash != std::string::npos) name = name.substr(dash + 1);
    curves[{OpenbTraceName(row[workload]), name}].push_back(std::move(values));
  }
  return curves;
}

}  // namespace tessera::bench
