// The FGD authors' published results for the openb traces (../shared/data/openb/
// fgd_expected_results/analysis_allo_discrete.csv, from hkust-adsl/kubernetes-scheduler-simulator
// experiments/analysis/expected_results): per trace, policy and seed, the GPU allocation % at
// each 1 % of arrived load. Used by the openb benchmark to compare a replay with the paper.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessera::bench {

// The 17 pod lists of the FGD evaluation, by short name ("default", "cpu050", ...).
const std::vector<std::string>& FgdTraceNames();

// The short name of a pod list ("openb_pod_list_gpuspec33.csv" or a path to it -> "gpuspec33").
std::string OpenbTraceName(const std::string& path);

// (trace short name, policy) -> one row per seed of 131 values: the GPU allocation % at k %
// arrived load, k = 0..130 (NaN where the file has none). Policies are named without their
// number ("BestFit", "FGD", "Random", "DotProd", "GpuClustering", "GpuPacking").
using PublishedCurves =
    std::map<std::pair<std::string, std::string>, std::vector<std::vector<double>>>;

// Reads <data_dir>/fgd_expected_results/analysis_allo_discrete.csv; empty when it is missing.
// Throws std::runtime_error on a malformed file.
PublishedCurves ReadFgdResults(const std::string& data_dir);

}  // namespace tessera::bench
