// The fake NVML's GPUs live in a JSON file named by TESSERA_FAKE_NVML_STATE, read and written
// under an exclusive flock at every call, so several processes (a backend, its restarted
// successor, a test) see one set of GPUs. Without the variable, or without the file, nvmlInit_v2
// answers DRIVER_NOT_LOADED, as on a machine with no driver. A test writes the file to set the
// scene:
//   {"gpus": [{"model": "H100-80GB", "mig_current": 1, "mig_pending": 1,
//              "processes": 0, "utilization": 35, "temperature_c": 61, "power_mw": 250000,
//              "ecc_uncorrectable": 0, "xid_events": [79],
//              "gpu_instances": [{"id": 1, "profile_id": 9, "start": 0, "processes": 0,
//                                 "compute_instances": [{"id": 0, "profile_id": 2,
//                                                        "start": 0, "size": 3}]}]}],
//    "root": true, "needs_reset": false,
//    "faults": [{"call": "nvmlDeviceCreateGpuInstanceWithPlacement", "after": 1, "error": 23}]}
// Omitted fields take those defaults (MIG off, no instances); a GPU's UUID is derived from its
// index and model (or given as "uuid"), so it is the same in every process. A compute instance
// created through NVML gets a MIG UUID of its own, new at each creation as the driver's are
// (they are random there), kept in the file as its "uuid"; one the test writes without a "uuid"
// has one derived from its GPU's and its instance ids.
//
// "faults" is the tests' own: the named call answers `error` once, after `after` calls of it
// (default 0) have gone through, as a driver does when something else took the room or the GPU
// fell over midway; the fault is then removed. The calls that consult it are those that change
// the GPU: nvmlDeviceCreateGpuInstance(WithPlacement), nvmlGpuInstanceDestroy,
// nvmlGpuInstanceCreateComputeInstance and nvmlComputeInstanceDestroy.
//
// Where it differs from the real driver: faults (no driver has them), processes are counts the test
// writes, not PIDs (there is no nvmlDeviceGetComputeRunningProcesses), and the file is the whole
// truth: a test may rewrite it between calls, which no real GPU does.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "nvml/nvml_api.h"
#include "nvml/testing/hardware_model.h"

namespace tessera::fake_nvml {

using json = nlohmann::json;

// The path TESSERA_FAKE_NVML_STATE names, or null.
const char* StatePath();

// The state, locked for the life of the object; Save() writes changes back.
class State {
 public:
  State();
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // False when the file is missing or cannot be opened (the driver is "not loaded").
  bool ok() const { return ok_; }
  json& doc() { return doc_; }
  unsigned gpu_count() const { return static_cast<unsigned>(doc_["gpus"].size()); }
  // The GPU at `index`, or null.
  json* gpu(unsigned index);
  bool root() const { return doc_.value("root", true); }
  bool needs_reset() const { return doc_.value("needs_reset", false); }

  // Rewrites the file in place, through the locked descriptor: the lock is on this inode, so a
  // rename would let another process read the old file while this one writes.
  void Save();

 private:
  std::string path_;
  int fd_ = -1;
  json doc_;
  bool ok_ = false;
};

// The error the state's "faults" inject into this call of `call` (counting it), or
// NVML_SUCCESS. Saves the state when it changed a fault.
nvmlReturn_t InjectedFault(State& state, const std::string& call);

// --- What the state says of one GPU.

const Model* ModelOf(const json& gpu);
std::string GpuUuid(unsigned index, const json& gpu);
std::string MigUuid(unsigned index, const json& gpu, unsigned gi, unsigned ci);
// A UUID for a MIG device made now on GPU `index`: never one given before in this state file.
std::string NewMigUuid(State& state, unsigned index, const json& gpu);
unsigned MigCurrent(const json& gpu);

// The GPU's instances, created empty when absent.
json& Instances(json& gpu);
json* FindGi(json& gpu, unsigned id);
json& ComputeInstances(json& gi);
json* FindCi(json& gi, unsigned id);

// (gpu instance id, compute instance id) of each MIG device of `gpu`, in the order the driver
// numbers MIG devices: by GPU instance placement, then compute instance id.
std::vector<std::pair<unsigned, unsigned>> MigDevices(json& gpu);

}  // namespace tessera::fake_nvml
