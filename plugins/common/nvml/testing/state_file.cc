// The state file under its lock, and the fields of a GPU in it (state_file.h describes the
// file and where it differs from a real GPU).
#include "nvml/testing/state_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

namespace tessera::fake_nvml {
namespace {

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

}  // namespace

const char* StatePath() { return std::getenv("TESSERA_FAKE_NVML_STATE"); }

State::State() {
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

State::~State() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

json* State::gpu(unsigned index) {
  if (index >= gpu_count()) return nullptr;
  return &doc_["gpus"][index];
}

void State::Save() {
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

nvmlReturn_t InjectedFault(State& state, const std::string& call) {
  json& doc = state.doc();
  if (!doc.contains("faults") || !doc["faults"].is_array()) return NVML_SUCCESS;
  json& faults = doc["faults"];
  for (size_t i = 0; i < faults.size(); ++i) {
    json& fault = faults[i];
    if (fault.value("call", "") != call) continue;
    const int after = fault.value("after", 0);
    if (after > 0) {
      fault["after"] = after - 1;
      state.Save();
      return NVML_SUCCESS;
    }
    const nvmlReturn_t error = fault.value("error", NVML_ERROR_UNKNOWN);
    faults.erase(i);
    state.Save();
    return error;
  }
  return NVML_SUCCESS;
}

const Model* ModelOf(const json& gpu) { return FindModel(gpu.value("model", "A100-40GB")); }

std::string GpuUuid(unsigned index, const json& gpu) {
  if (gpu.contains("uuid")) return gpu["uuid"].get<std::string>();
  return DerivedUuid("GPU-", std::to_string(index) + "/" + gpu.value("model", "A100-40GB"));
}

std::string MigUuid(unsigned index, const json& gpu, unsigned gi, unsigned ci) {
  for (const json& g : gpu.value("gpu_instances", json::array())) {
    if (g.value("id", 0u) != gi) continue;
    for (const json& c : g.value("compute_instances", json::array())) {
      if (c.value("id", 0u) == ci && c.contains("uuid")) return c["uuid"].get<std::string>();
    }
  }
  return DerivedUuid("MIG-",
                     GpuUuid(index, gpu) + "/" + std::to_string(gi) + "/" + std::to_string(ci));
}

std::string NewMigUuid(State& state, unsigned index, const json& gpu) {
  const unsigned long long made = state.doc().value("mig_devices_made", 0ull) + 1;
  state.doc()["mig_devices_made"] = made;
  return DerivedUuid("MIG-", GpuUuid(index, gpu) + "/made/" + std::to_string(made));
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

}  // namespace tessera::fake_nvml
