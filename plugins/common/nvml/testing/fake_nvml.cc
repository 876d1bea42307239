// A stand-in for libnvidia-ml.so.1, for tests on machines without an NVIDIA driver. It exports
// the versioned symbols of nvml_api.h and models what Tessera relies on the way the driver does:
//   - A100-40GB, A100-80GB, H100-80GB and H200-141GB GPUs with NVML's GPU instance profiles:
//     asked for by enum index, answered with the profile ID (1_SLICE is 19, 7_SLICE is 0), the
//     placements of `nvidia-smi mig -lgipp` (memory slices, 8 per GPU), instance counts, and
//     the memory sizes NVML reports on A100 (backends-reference.md section 1);
//   - creation checked as the driver checks it: MIG mode off -> NOT_SUPPORTED, a start a profile
//     cannot use -> INVALID_ARGUMENT, overlapping slices, a profile's instance limit or no
//     compute slices left -> INSUFFICIENT_RESOURCES; destroying a GPU instance that still has
//     compute instances, or either with processes on it -> IN_USE;
//   - MIG mode current and pending: a change applies at once on an idle GPU (as nvidia-smi's
//     reset does), stays pending with IN_USE while processes run, or, with "needs_reset", stays
//     pending with RESET_REQUIRED until the state file says otherwise; without "root",
//     NO_PERMISSION;
//   - MIG device handles (one per compute instance) with their own `MIG-` UUIDs, GPU and
//     compute instance ids, memory and name; XID errors through event sets; telemetry.
//
// State lives in the JSON file named by TESSERA_FAKE_NVML_STATE, read and written under an
// exclusive flock at every call, so several processes (a backend, its restarted successor, a
// test) see one set of GPUs. Without the variable, or without the file, nvmlInit_v2 answers
// DRIVER_NOT_LOADED, as on a machine with no driver. A test writes the file to set the scene:
//   {"gpus": [{"model": "H100-80GB", "mig_current": 1, "mig_pending": 1,
//              "processes": 0, "utilization": 35, "temperature_c": 61, "power_mw": 250000,
//              "ecc_uncorrectable": 0, "xid_events": [79],
//              "gpu_instances": [{"id": 1, "profile_id": 9, "start": 0, "processes": 0,
//                                 "compute_instances": [{"id": 0, "profile_id": 2,
//                                                        "start": 0, "size": 3}]}]}],
//    "root": true, "needs_reset": false}
// Omitted fields take those defaults (MIG off, no instances); a GPU's UUID is derived from its
// index and model, so it is the same in every process.
//
// Where it differs from the real driver (each a guess where no public figure exists):
//   - H100-80GB reports the A100-80GB memory sizes, the H200-141GB sizes derived from its memory
//     (141 GiB x memory slices / 8), and H100/H200 multiprocessor counts are those of
//     `nvidia-smi mig -lgip` on H100 (4g: 64, not published); engine counts are 0;
//   - GPU instance ids are the lowest free id from 1 and a creation without placement takes the
//     lowest free start: the driver chooses both its own way, which callers must not assume;
//   - compute instances are placed first fit within their GPU instance, and only the CI profiles
//     of 1, 2, 3, 4 and 7 slices exist (3 slices only in a 3- or 7-slice instance);
//   - processes are counts the test writes, not PIDs; there is no nvmlDeviceGetComputeRunning
//     Processes, no clocks, fans, NVLink or vGPU calls, and MIG mode toggles no real reset.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "nvml/nvml_api.h"

using json = nlohmann::json;

namespace {

// --- The hardware model.

constexpr int kMemorySlices = 8;
constexpr int kComputeSlices = 7;

struct ProfileRow {
  unsigned enum_index;
  unsigned id;
  unsigned compute_slices;  // sliceCount
  unsigned memory_slices;   // placement size
  unsigned instance_count;
  unsigned starts;  // bit s: may start at memory slice s
  const char* suffix;
};

// By NVML enum; the IDs, sizes and placements are the same on every model.
constexpr ProfileRow kRows[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 1, 7, 0b0111'1111, ""},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, 0b0111'1111, "+me"},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, 0b0101'0101, ""},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 2, 3, 0b0001'0101, ""},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 4, 2, 0b0001'0001, ""},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 4, 1, 0b0000'0001, ""},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 8, 1, 0b0000'0001, ""},
};
constexpr int kNumRows = sizeof(kRows) / sizeof(kRows[0]);

struct Model {
  const char* key;   // as the state file names it
  const char* name;  // nvmlDeviceGetName
  unsigned long long memory_mib;
  unsigned pci_device_id;
  // By row of kRows.
  const char* profile_names[kNumRows];
  unsigned long long memory_mb[kNumRows];
  unsigned sms[kNumRows];
};

const Model kModels[] = {
    {"A100-40GB",
     "NVIDIA A100-SXM4-40GB",
     40960,
     0x20B010DE,
     {"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
     {4864, 4864, 9856, 9856, 19968, 19968, 40192},
     {14, 14, 14, 28, 42, 56, 98}},
    {"A100-80GB",
     "NVIDIA A100-SXM4-80GB",
     81920,
     0x20B210DE,
     {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
     {9856, 9856, 19968, 19968, 40192, 40192, 80384},
     {14, 14, 14, 28, 42, 56, 98}},
    {"H100-80GB",
     "NVIDIA H100 80GB HBM3",
     81559,
     0x233010DE,
     {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
     {9856, 9856, 19968, 19968, 40192, 40192, 80384},
     {16, 16, 26, 32, 60, 64, 132}},
    {"H200-141GB",
     "NVIDIA H200",
     144384,
     0x233510DE,
     {"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
     {18048, 18048, 36096, 36096, 72192, 72192, 144384},
     {16, 16, 26, 32, 60, 64, 132}},
};

const Model* FindModel(const std::string& key) {
  for (const Model& m : kModels) {
    if (key == m.key) return &m;
  }
  return nullptr;
}

const ProfileRow* RowByEnum(unsigned index) {
  for (const ProfileRow& r : kRows) {
    if (r.enum_index == index) return &r;
  }
  return nullptr;
}

int RowOfId(unsigned id) {
  for (int i = 0; i < kNumRows; ++i) {
    if (kRows[i].id == id) return i;
  }
  return -1;
}

// A UUID that depends only on its inputs, in the driver's text form.
std::string DerivedUuid(const std::string& prefix, const std::string& seed) {
  uint64_t a = 1469598103934665603ULL, b = 1099511628211ULL;
  for (char c : seed) {
    a = (a ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    b = (b + static_cast<unsigned char>(c)) * 6364136223846793005ULL;
  }
  char text[64];
  std::snprintf(text, sizeof(text), "%s%08x-%04x-%04x-%04x-%012llx", prefix.c_str(),
                static_cast<unsigned>(a >> 32), static_cast<unsigned>((a >> 16) & 0xffff),
                static_cast<unsigned>(a & 0xffff), static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return text;
}

// --- Handles: small objects that name a GPU, a GPU instance, a compute instance, or a MIG
// device (a compute instance seen as a device), kept for the life of the process.

enum class Kind { kGpu, kGpuInstance, kComputeInstance, kMigDevice };

struct Handle {
  Kind kind;
  unsigned gpu;
  unsigned gi = 0;
  unsigned ci = 0;
};

std::mutex handles_mu;
std::deque<Handle> handles;  // stable addresses.

Handle* HandleFor(Kind kind, unsigned gpu, unsigned gi = 0, unsigned ci = 0) {
  std::lock_guard lock(handles_mu);
  for (Handle& h : handles) {
    if (h.kind == kind && h.gpu == gpu && h.gi == gi && h.ci == ci) return &h;
  }
  handles.push_back({kind, gpu, gi, ci});
  return &handles.back();
}

const Handle* Get(const void* handle) {
  std::lock_guard lock(handles_mu);
  for (const Handle& h : handles) {
    if (&h == handle) return &h;
  }
  return nullptr;
}

std::mutex init_mu;
int init_count = 0;

bool Initialized() {
  std::lock_guard lock(init_mu);
  return init_count > 0;
}

// --- The state file.

const char* StatePath() { return std::getenv("TESSERA_FAKE_NVML_STATE"); }

// The state, locked for the life of the object; Save() writes changes back.
class State {
 public:
  State() {
    const char* path = StatePath();
    if (path == nullptr) return;
    path_ = path;
    fd_ = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd_ < 0) return;
    ::flock(fd_, LOCK_EX);
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    doc_ = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (doc_.is_discarded() || !doc_.is_object()) doc_ = json::object();
    if (!doc_.contains("gpus")) doc_["gpus"] = json::array();
    ok_ = true;
  }
  ~State() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  bool ok() const { return ok_; }
  json& doc() { return doc_; }
  unsigned gpu_count() const { return static_cast<unsigned>(doc_["gpus"].size()); }
  json* gpu(unsigned index) {
    if (index >= gpu_count()) return nullptr;
    return &doc_["gpus"][index];
  }
  bool root() const { return doc_.value("root", true); }
  bool needs_reset() const { return doc_.value("needs_reset", false); }

  // Rewrites the file in place, through the locked descriptor: the lock is on this inode, so a
  // rename would let another process read the old file while this one writes.
  void Save() {
    const std::string text = doc_.dump(2);
    if (::ftruncate(fd_, 0) != 0) return;
    ::lseek(fd_, 0, SEEK_SET);
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  json doc_;
  bool ok_ = false;
};

const Model* ModelOf(const json& gpu) { return FindModel(gpu.value("model", "A100-40GB")); }

std::string GpuUuid(unsigned index, const json& gpu) {
  if (gpu.contains("uuid")) return gpu["uuid"].get<std::string>();
  return DerivedUuid("GPU-", std::to_string(index) + "/" + gpu.value("model", "A100-40GB"));
}

std::string MigUuid(unsigned index, const json& gpu, unsigned gi, unsigned ci) {
  return DerivedUuid("MIG-",
                     GpuUuid(index, gpu) + "/" + std::to_string(gi) + "/" + std::to_string(ci));
}

unsigned MigCurrent(const json& gpu) { return gpu.value("mig_current", 0u); }

json& Instances(json& gpu) {
  if (!gpu.contains("gpu_instances")) gpu["gpu_instances"] = json::array();
  return gpu["gpu_instances"];
}

json* FindGi(json& gpu, unsigned id) {
  for (json& gi : Instances(gpu)) {
    if (gi.value("id", 0u) == id) return &gi;
  }
  return nullptr;
}

json& ComputeInstances(json& gi) {
  if (!gi.contains("compute_instances")) gi["compute_instances"] = json::array();
  return gi["compute_instances"];
}

json* FindCi(json& gi, unsigned id) {
  for (json& ci : ComputeInstances(gi)) {
    if (ci.value("id", 0u) == id) return &ci;
  }
  return nullptr;
}

uint32_t SliceMask(unsigned start, unsigned size) { return ((1u << size) - 1) << start; }

// Memory slices and compute slices the GPU's instances hold.
std::pair<uint32_t, unsigned> Used(json& gpu) {
  uint32_t memory = 0;
  unsigned compute = 0;
  for (json& gi : Instances(gpu)) {
    const int row = RowOfId(gi.value("profile_id", 0u));
    if (row < 0) continue;
    memory |= SliceMask(gi.value("start", 0u), kRows[row].memory_slices);
    compute += kRows[row].compute_slices;
  }
  return {memory, compute};
}

unsigned CountOfProfile(json& gpu, unsigned id) {
  unsigned n = 0;
  for (json& gi : Instances(gpu)) n += gi.value("profile_id", ~0u) == id ? 1 : 0;
  return n;
}

// Whether a new instance of row `r` may start at `start` now.
nvmlReturn_t CheckRoom(json& gpu, const ProfileRow& r, unsigned start) {
  if (start >= kMemorySlices || !((r.starts >> start) & 1u)) return NVML_ERROR_INVALID_ARGUMENT;
  auto [memory, compute] = Used(gpu);
  if (memory & SliceMask(start, r.memory_slices)) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if (compute + r.compute_slices > kComputeSlices) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if (CountOfProfile(gpu, r.id) >= r.instance_count) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  return NVML_SUCCESS;
}

// Compute instance profiles of a GPU instance with `gi_slices` compute slices.
bool CiProfileAllowed(unsigned ci_slices, unsigned gi_slices) {
  if (ci_slices > gi_slices) return false;
  switch (ci_slices) {
    case 1:
    case 2:
    case 4:
      return true;
    case 3:
      return gi_slices == 3 || gi_slices == 7;
    case 7:
      return gi_slices == 7;
    default:
      return false;
  }
}

unsigned CiSlicesOfProfile(unsigned profile) {
  switch (profile) {
    case NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE:
      return 1;
    case NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE:
      return 2;
    case NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE:
      return 3;
    case NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE:
      return 4;
    case NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE:
      return 7;
    default:
      return 0;
  }
}

// (gpu instance id, compute instance id) of each MIG device of `gpu`, in the order the driver
// numbers MIG devices: by GPU instance placement, then compute instance id.
std::vector<std::pair<unsigned, unsigned>> MigDevices(json& gpu) {
  std::vector<std::tuple<unsigned, unsigned, unsigned>> found;
  for (json& gi : Instances(gpu)) {
    for (json& ci : ComputeInstances(gi)) {
      found.emplace_back(gi.value("start", 0u), gi.value("id", 0u), ci.value("id", 0u));
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::pair<unsigned, unsigned>> out;
  for (auto& [start, gi, ci] : found) out.emplace_back(gi, ci);
  return out;
}

nvmlReturn_t CopyString(const std::string& text, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

// A call's common start: initialised, the state readable, the handle known.
#define FAKE_NVML_BEGIN(state)                         \
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED; \
  State state;                                         \
  if (!state.ok()) return NVML_ERROR_DRIVER_NOT_LOADED

// The GPU (and, for instance handles, the instance JSON) a handle names, or an error.
struct Resolved {
  const Handle* handle = nullptr;
  json* gpu = nullptr;
  json* gi = nullptr;
  json* ci = nullptr;
};

nvmlReturn_t Resolve(State& state, const void* raw, Resolved* out) {
  const Handle* h = Get(raw);
  if (h == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  out->handle = h;
  out->gpu = state.gpu(h->gpu);
  if (out->gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (h->kind == Kind::kGpu) return NVML_SUCCESS;
  out->gi = FindGi(*out->gpu, h->gi);
  if (out->gi == nullptr) return NVML_ERROR_INVALID_ARGUMENT;  // destroyed since.
  if (h->kind == Kind::kGpuInstance) return NVML_SUCCESS;
  out->ci = FindCi(*out->gi, h->ci);
  if (out->ci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

// Event sets: which devices each watches, and the XIDs already delivered from each.
struct EventSet {
  std::vector<unsigned> gpus;
  std::map<unsigned, size_t> delivered;
};
std::mutex events_mu;
std::deque<EventSet> event_sets;

}  // namespace

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  const char* path = StatePath();
  if (path == nullptr || ::access(path, R_OK | W_OK) != 0) return NVML_ERROR_DRIVER_NOT_LOADED;
  std::lock_guard lock(init_mu);
  ++init_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard lock(init_mu);
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --init_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires reset";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient resources";
    default:
      return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  FAKE_NVML_BEGIN(state);
  return CopyString(state.doc().value("driver_version", "550.54.15"), version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = state.gpu_count();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                            nvmlDevice_t* device) {
  FAKE_NVML_BEGIN(state);
  if (device == nullptr || index >= state.gpu_count()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, index));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  FAKE_NVML_BEGIN(state);
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < state.gpu_count(); ++i) {
    json& gpu = *state.gpu(i);
    if (GpuUuid(i, gpu) == uuid) {
      *device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, i));
      return NVML_SUCCESS;
    }
    for (auto [gi, ci] : MigDevices(gpu)) {
      if (MigUuid(i, gpu, gi, ci) == uuid) {
        *device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kMigDevice, i, gi, ci));
        return NVML_SUCCESS;
      }
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                unsigned int length) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (r.handle->kind != Kind::kGpu && r.handle->kind != Kind::kMigDevice) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const std::string text = r.handle->kind == Kind::kMigDevice
                               ? MigUuid(r.handle->gpu, *r.gpu, r.handle->gi, r.handle->ci)
                               : GpuUuid(r.handle->gpu, *r.gpu);
  return CopyString(text, uuid, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                unsigned int length) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  const Model* model = ModelOf(*r.gpu);
  if (model == nullptr) return NVML_ERROR_UNKNOWN;
  std::string text = model->name;
  if (r.handle->kind == Kind::kMigDevice) {
    const int row = RowOfId(r.gi->value("profile_id", 0u));
    text += std::string(" MIG ") + (row >= 0 ? model->profile_names[row] : "?");
  }
  return CopyString(text, name, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const Model* model = ModelOf(*r.gpu);
  if (model == nullptr) return NVML_ERROR_UNKNOWN;
  unsigned long long total = model->memory_mib << 20;
  if (r.handle->kind == Kind::kMigDevice) {
    const int row = RowOfId(r.gi->value("profile_id", 0u));
    total = row >= 0 ? model->memory_mb[row] << 20 : 0;
  }
  const unsigned long long used =
      std::min<unsigned long long>(r.gpu->value("memory_used_mib", 0ull) << 20, total);
  *memory = {total, total - used, used};
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (pci == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  const Model* model = ModelOf(*r.gpu);
  std::memset(pci, 0, sizeof(*pci));
  pci->bus = 0x10 + r.handle->gpu;
  pci->pciDeviceId = model ? model->pci_device_id : 0;
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", pci->bus);
  std::snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", pci->bus);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                            nvmlUtilization_t* utilization) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  // The driver gives no utilisation for a MIG device.
  if (r.handle->kind != Kind::kGpu || MigCurrent(*r.gpu) == NVML_DEVICE_MIG_ENABLE) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  utilization->gpu = r.gpu->value("utilization", 0u);
  utilization->memory = r.gpu->value("memory_utilization", 0u);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor,
                                                       unsigned int* celsius) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (celsius == nullptr || sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  if (r.handle->kind != Kind::kGpu) return NVML_ERROR_NOT_SUPPORTED;
  *celsius = r.gpu->value("temperature_c", 40u);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device,
                                                      unsigned int* milliwatts) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (milliwatts == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (r.handle->kind != Kind::kGpu) return NVML_ERROR_NOT_SUPPORTED;
  *milliwatts = r.gpu->value("power_mw", 60000u);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int error_type,
                                                          int counter_type,
                                                          unsigned long long* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr ||
      (counter_type != NVML_VOLATILE_ECC && counter_type != NVML_AGGREGATE_ECC)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED) {
    *count = r.gpu->value("ecc_uncorrectable", 0ull);
  } else if (error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED) {
    *count = r.gpu->value("ecc_correctable", 0ull);
  } else {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}

// --- MIG mode.

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                                   unsigned int* pending) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (current == nullptr || pending == nullptr || r.handle->kind != Kind::kGpu) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *current = MigCurrent(*r.gpu);
  *pending = r.gpu->value("mig_pending", *current);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                                   nvmlReturn_t* activation_status) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (activation_status == nullptr || r.handle->kind != Kind::kGpu ||
      (mode != NVML_DEVICE_MIG_DISABLE && mode != NVML_DEVICE_MIG_ENABLE)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!state.root()) return NVML_ERROR_NO_PERMISSION;
  json& gpu = *r.gpu;
  if (mode == NVML_DEVICE_MIG_DISABLE && !Instances(gpu).empty()) return NVML_ERROR_IN_USE;
  gpu["mig_pending"] = mode;
  if (gpu.value("processes", 0u) > 0) {
    *activation_status = NVML_ERROR_IN_USE;
  } else if (state.needs_reset()) {
    *activation_status = NVML_ERROR_RESET_REQUIRED;
  } else {
    gpu["mig_current"] = mode;
    *activation_status = NVML_SUCCESS;
  }
  state.Save();
  return NVML_SUCCESS;
}

// --- GPU instances.

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t* info) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (info == nullptr || r.handle->kind != Kind::kGpu ||
      profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const ProfileRow* row = RowByEnum(profile);
  const Model* model = ModelOf(*r.gpu);
  if (row == nullptr || model == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  const int i = static_cast<int>(row - kRows);
  *info = {};
  info->id = row->id;
  info->isP2pSupported = 0;
  info->sliceCount = row->compute_slices;
  info->instanceCount = row->instance_count;
  info->multiprocessorCount = model->sms[i];
  info->memorySizeMB = model->memory_mb[i];
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profile_id, nvmlGpuInstancePlacement_t* placements,
    unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if (MigCurrent(*r.gpu) != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  const int row = RowOfId(profile_id);
  if (row < 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<nvmlGpuInstancePlacement_t> all;
  for (unsigned s = 0; s < kMemorySlices; ++s) {
    if ((kRows[row].starts >> s) & 1u) all.push_back({s, kRows[row].memory_slices});
  }
  if (placements == nullptr) {  // a query of the count.
    *count = static_cast<unsigned>(all.size());
    return NVML_SUCCESS;
  }
  if (*count < all.size()) {
    *count = static_cast<unsigned>(all.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(all.begin(), all.end(), placements);
  *count = static_cast<unsigned>(all.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device,
                                                                        unsigned int profile_id,
                                                                        unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if (MigCurrent(*r.gpu) != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  const int row = RowOfId(profile_id);
  if (row < 0) return NVML_ERROR_INVALID_ARGUMENT;
  // How many more fit, placed one after another at the lowest free start.
  json copy = *r.gpu;
  unsigned n = 0;
  for (bool placed = true; placed;) {
    placed = false;
    for (unsigned s = 0; s < kMemorySlices && !placed; ++s) {
      if (CheckRoom(copy, kRows[row], s) == NVML_SUCCESS) {
        Instances(copy).push_back({{"id", 1000 + n}, {"profile_id", profile_id}, {"start", s}});
        placed = true;
        ++n;
      }
    }
  }
  *count = n;
  return NVML_SUCCESS;
}

namespace {

nvmlReturn_t CreateGi(nvmlDevice_t device, unsigned profile_id,
                      const nvmlGpuInstancePlacement_t* placement, nvmlGpuInstance_t* out) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (out == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if (!state.root()) return NVML_ERROR_NO_PERMISSION;
  json& gpu = *r.gpu;
  if (MigCurrent(gpu) != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  const int row = RowOfId(profile_id);
  if (row < 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::optional<unsigned> start;
  if (placement != nullptr) {
    if (placement->size != kRows[row].memory_slices) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t ret = CheckRoom(gpu, kRows[row], placement->start); ret != NVML_SUCCESS) {
      return ret;
    }
    start = placement->start;
  } else {
    for (unsigned s = 0; s < kMemorySlices && !start; ++s) {
      if (CheckRoom(gpu, kRows[row], s) == NVML_SUCCESS) start = s;
    }
    if (!start) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  unsigned id = 1;
  while (FindGi(gpu, id) != nullptr) ++id;
  Instances(gpu).push_back({{"id", id},
                            {"profile_id", profile_id},
                            {"start", *start},
                            {"processes", 0},
                            {"compute_instances", json::array()}});
  state.Save();
  *out = reinterpret_cast<nvmlGpuInstance_t>(HandleFor(Kind::kGpuInstance, r.handle->gpu, id));
  return NVML_SUCCESS;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device,
                                                          unsigned int profile_id,
                                                          nvmlGpuInstance_t* gpu_instance) {
  return CreateGi(device, profile_id, nullptr, gpu_instance);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profile_id, const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* gpu_instance) {
  if (placement == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return CreateGi(device, profile_id, placement, gpu_instance);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpu_instance) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, gpu_instance, &r); ret != NVML_SUCCESS) return ret;
  if (r.handle->kind != Kind::kGpuInstance) return NVML_ERROR_INVALID_ARGUMENT;
  if (!state.root()) return NVML_ERROR_NO_PERMISSION;
  if (!ComputeInstances(*r.gi).empty() || r.gi->value("processes", 0u) > 0) {
    return NVML_ERROR_IN_USE;
  }
  json& list = Instances(*r.gpu);
  const unsigned id = r.handle->gi;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [id](const json& gi) { return gi.value("id", 0u) == id; }),
             list.end());
  state.Save();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device,
                                                        unsigned int profile_id,
                                                        nvmlGpuInstance_t* gpu_instances,
                                                        unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if (MigCurrent(*r.gpu) != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  if (RowOfId(profile_id) < 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<unsigned> ids;
  for (json& gi : Instances(*r.gpu)) {
    if (gi.value("profile_id", ~0u) == profile_id) ids.push_back(gi.value("id", 0u));
  }
  if (gpu_instances == nullptr || *count < ids.size()) {
    const bool asked_count = gpu_instances == nullptr;
    *count = static_cast<unsigned>(ids.size());
    return asked_count ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    gpu_instances[i] =
        reinterpret_cast<nvmlGpuInstance_t>(HandleFor(Kind::kGpuInstance, r.handle->gpu, ids[i]));
  }
  *count = static_cast<unsigned>(ids.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpu_instance,
                                                     nvmlGpuInstanceInfo_t* info) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, gpu_instance, &r); ret != NVML_SUCCESS) return ret;
  if (info == nullptr || r.handle->kind != Kind::kGpuInstance) return NVML_ERROR_INVALID_ARGUMENT;
  const int row = RowOfId(r.gi->value("profile_id", 0u));
  info->device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, r.handle->gpu));
  info->id = r.handle->gi;
  info->profileId = r.gi->value("profile_id", 0u);
  info->placement = {r.gi->value("start", 0u), row >= 0 ? kRows[row].memory_slices : 0};
  return NVML_SUCCESS;
}

// --- Compute instances.

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpu_instance, unsigned int profile, unsigned int eng_profile,
    nvmlComputeInstanceProfileInfo_t* info) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, gpu_instance, &r); ret != NVML_SUCCESS) return ret;
  if (info == nullptr || r.handle->kind != Kind::kGpuInstance ||
      eng_profile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const int row = RowOfId(r.gi->value("profile_id", 0u));
  const unsigned ci_slices = CiSlicesOfProfile(profile);
  if (row < 0 || ci_slices == 0 || !CiProfileAllowed(ci_slices, kRows[row].compute_slices)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  const Model* model = ModelOf(*r.gpu);
  *info = {};
  info->id = profile;  // compute instance profile IDs equal their enum.
  info->sliceCount = ci_slices;
  info->instanceCount = kRows[row].compute_slices / ci_slices;
  info->multiprocessorCount = model ? model->sms[row] * ci_slices / kRows[row].compute_slices : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t
nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
                                     nvmlComputeInstance_t* compute_instance) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, gpu_instance, &r); ret != NVML_SUCCESS) return ret;
  if (compute_instance == nullptr || r.handle->kind != Kind::kGpuInstance) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!state.root()) return NVML_ERROR_NO_PERMISSION;
  const int row = RowOfId(r.gi->value("profile_id", 0u));
  const unsigned size = CiSlicesOfProfile(profile_id);
  if (row < 0 || size == 0 || !CiProfileAllowed(size, kRows[row].compute_slices)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  uint32_t used = 0;
  for (json& ci : ComputeInstances(*r.gi)) {
    used |= SliceMask(ci.value("start", 0u), ci.value("size", 1u));
  }
  std::optional<unsigned> start;
  for (unsigned s = 0; s + size <= kRows[row].compute_slices && !start; ++s) {
    if ((used & SliceMask(s, size)) == 0) start = s;
  }
  if (!start) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  unsigned id = 0;
  while (FindCi(*r.gi, id) != nullptr) ++id;
  ComputeInstances(*r.gi).push_back(
      {{"id", id}, {"profile_id", profile_id}, {"start", *start}, {"size", size}});
  state.Save();
  *compute_instance = reinterpret_cast<nvmlComputeInstance_t>(
      HandleFor(Kind::kComputeInstance, r.handle->gpu, r.handle->gi, id));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t
nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
                                   nvmlComputeInstance_t* compute_instances, unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, gpu_instance, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr || r.handle->kind != Kind::kGpuInstance) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<unsigned> ids;
  for (json& ci : ComputeInstances(*r.gi)) {
    if (ci.value("profile_id", ~0u) == profile_id) ids.push_back(ci.value("id", 0u));
  }
  if (compute_instances == nullptr || *count < ids.size()) {
    const bool asked_count = compute_instances == nullptr;
    *count = static_cast<unsigned>(ids.size());
    return asked_count ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    compute_instances[i] = reinterpret_cast<nvmlComputeInstance_t>(
        HandleFor(Kind::kComputeInstance, r.handle->gpu, r.handle->gi, ids[i]));
  }
  *count = static_cast<unsigned>(ids.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t compute_instance) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, compute_instance, &r); ret != NVML_SUCCESS) return ret;
  if (r.handle->kind != Kind::kComputeInstance) return NVML_ERROR_INVALID_ARGUMENT;
  if (!state.root()) return NVML_ERROR_NO_PERMISSION;
  if (r.gi->value("processes", 0u) > 0) return NVML_ERROR_IN_USE;
  json& list = ComputeInstances(*r.gi);
  const unsigned id = r.handle->ci;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [id](const json& ci) { return ci.value("id", 0u) == id; }),
             list.end());
  state.Save();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t compute_instance,
                                                            nvmlComputeInstanceInfo_t* info) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, compute_instance, &r); ret != NVML_SUCCESS) return ret;
  if (info == nullptr || r.handle->kind != Kind::kComputeInstance) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  info->device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, r.handle->gpu));
  info->gpuInstance = reinterpret_cast<nvmlGpuInstance_t>(
      HandleFor(Kind::kGpuInstance, r.handle->gpu, r.handle->gi));
  info->id = r.handle->ci;
  info->profileId = r.ci->value("profile_id", 0u);
  info->placement = {r.ci->value("start", 0u), r.ci->value("size", 1u)};
  return NVML_SUCCESS;
}

// --- MIG devices.

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                             unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  *count = MigCurrent(*r.gpu) == NVML_DEVICE_MIG_ENABLE ? kComputeSlices : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                  unsigned int index,
                                                                  nvmlDevice_t* mig_device) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (mig_device == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if (MigCurrent(*r.gpu) != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  if (index >= kComputeSlices) return NVML_ERROR_INVALID_ARGUMENT;
  const auto devices = MigDevices(*r.gpu);
  if (index >= devices.size()) return NVML_ERROR_NOT_FOUND;
  *mig_device = reinterpret_cast<nvmlDevice_t>(
      HandleFor(Kind::kMigDevice, r.handle->gpu, devices[index].first, devices[index].second));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device,
                                                          unsigned int* is_mig) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  const Handle* h = Get(device);
  if (h == nullptr || is_mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *is_mig = h->kind == Kind::kMigDevice ? 1 : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (r.handle->kind != Kind::kMigDevice) return NVML_ERROR_NOT_SUPPORTED;
  *id = r.handle->gi;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device,
                                                             unsigned int* id) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (r.handle->kind != Kind::kMigDevice) return NVML_ERROR_NOT_SUPPORTED;
  *id = r.handle->ci;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig_device,
                                                                           nvmlDevice_t* device) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, mig_device, &r); ret != NVML_SUCCESS) return ret;
  if (device == nullptr || r.handle->kind != Kind::kMigDevice) return NVML_ERROR_INVALID_ARGUMENT;
  *device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, r.handle->gpu));
  return NVML_SUCCESS;
}

// --- Events.

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard lock(events_mu);
  event_sets.emplace_back();
  *set = reinterpret_cast<nvmlEventSet_t>(&event_sets.back());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                       unsigned long long event_types,
                                                       nvmlEventSet_t set) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (set == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if ((event_types & ~nvmlEventTypeXidCriticalError) != 0) return NVML_ERROR_NOT_SUPPORTED;
  std::lock_guard lock(events_mu);
  auto* events = reinterpret_cast<EventSet*>(set);
  events->gpus.push_back(r.handle->gpu);
  // Only XIDs that happen from now on are delivered.
  const json& xids = r.gpu->contains("xid_events") ? (*r.gpu)["xid_events"] : json::array();
  events->delivered[r.handle->gpu] = xids.size();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                  unsigned int timeout_ms) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto* events = reinterpret_cast<EventSet*>(set);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    {
      State state;
      if (!state.ok()) return NVML_ERROR_DRIVER_NOT_LOADED;
      std::lock_guard lock(events_mu);
      for (unsigned gpu : events->gpus) {
        json* g = state.gpu(gpu);
        if (g == nullptr || !g->contains("xid_events")) continue;
        const json& xids = (*g)["xid_events"];
        size_t& seen = events->delivered[gpu];
        if (seen < xids.size()) {
          *data = {};
          data->device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, gpu));
          data->eventType = nvmlEventTypeXidCriticalError;
          data->eventData = xids[seen].get<unsigned long long>();
          data->gpuInstanceId = 0xFFFFFFFF;
          data->computeInstanceId = 0xFFFFFFFF;
          ++seen;
          return NVML_SUCCESS;
        }
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return NVML_ERROR_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard lock(events_mu);
  reinterpret_cast<EventSet*>(set)->gpus.clear();
  return NVML_SUCCESS;
}
