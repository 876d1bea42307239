// openb_pod_csv: reads the node and pod lists of the openb trace (Alibaba cluster-trace-gpu-v2023,
// see ../shared/data/openb/README.md) into plain structs, finds those files by short name, and
// turns a node list into a SimulatedCluster. Only reading and mapping live here; what a benchmark
// does with the pods (time-based replay, sampling) is up to it.
//
// The files are plain comma-separated values without quoting; columns are found by their header
// names, so files with extra or reordered columns read the same. The multigpu*.csv pod lists lack
// the time columns: they read fine, with has_times false.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/status.h"
#include "tessera/v1/node.pb.h"

namespace tessera::replay {

// One row of openb_node_list_*.csv.
struct OpenbNode {
  std::string name;  // sn
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpus = 0;
  std::string model;  // empty for CPU-only nodes.
};

// One row of openb_pod_list_*.csv. Times are seconds from the start of the trace.
struct OpenbPod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;
  int gpu_milli = 0;                    // per GPU; 1..999 only when num_gpu == 1.
  std::vector<std::string> gpu_models;  // gpu_spec split on '|'; empty = any model.
  std::string qos;                      // LS, BE, Burstable, Guaranteed; may be empty.
  std::string phase;                    // pod_phase.
  bool has_times = false;               // the file has creation/deletion/scheduled columns.
  int64_t creation_s = 0;
  std::optional<int64_t> deletion_s;
  std::optional<int64_t> scheduled_s;  // empty for pods the trace never scheduled (Pending).
};

// Errors: NOT_FOUND (file), INVALID_ARGUMENT (missing column or bad number; names file:line).
StatusOr<std::vector<OpenbNode>> ReadOpenbNodes(const std::string& path);
StatusOr<std::vector<OpenbPod>> ReadOpenbPods(const std::string& path);

// The openb data folder: `override` when not empty, else $TESSERA_OPENB_DIR, else
// ../shared/data/openb next to the source tree this program was built from.
std::string OpenbDataDir(const std::string& override);

// Finds a trace file. `name` is a path when it names an existing file or contains a '/';
// otherwise it is looked up in `data_dir` as "<prefix><name>.csv", "<name>.csv" and "<name>", so
// `default` finds openb_pod_list_default.csv with prefix "openb_pod_list_".
// Errors: NOT_FOUND, naming every place tried.
StatusOr<std::string> ResolveOpenbFile(const std::string& name, const std::string& data_dir,
                                       const std::string& prefix);

// GPU memory per device of an openb model, in MiB. The trace does not give it; these are the
// vendors' figures for the disclosed models (V100M16, V100M32, P100, T4: 16 or 32 GiB; A10:
// 24 GiB). G1/G2/G3 are undisclosed: 16 GiB, the smallest disclosed size, is assumed. The value
// never limits placement in a replay of trace pods, which ask for no GPU memory (a share then
// reserves the same fraction of the device's memory as of its compute), so it only scales the
// reported GPU memory capacity. Unknown names get 16 GiB too.
int64_t OpenbGpuMemoryMib(const std::string& model);

// One SimulatedNodeGroup per distinct node shape (cpu, memory, GPUs, model), in order of first
// appearance, named after the shape ("v100m16x4-96c-512g"); CPU-only rows become "cpu-..."
// groups. Nodes are interchangeable within a shape, so grouping loses nothing a placement
// policy looks at, and node names only change. All GPUs of a node share one NVLink domain.
v1::SimulatedCluster OpenbCluster(const std::vector<OpenbNode>& nodes);

}  // namespace tessera::replay
