// The fake libnvidia-ml.so.1 (plugins/common/nvml/testing) as the NVML tests use it: where the
// build put it, a state file that sets the scene for as long as the object lives, and the
// library loaded through the backends' own loader.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "nvml/nvml_library.h"
#include "unit/plugins_sim_local/plugin_paths.h"

namespace tessera::nvml::fake {

inline std::string FakePath() {
  return (tessera::testing::BuildPluginsDir() / "testing" / "nvml" / "libnvidia-ml.so.1").string();
}

// A state file for the fake, named by TESSERA_FAKE_NVML_STATE while the object lives.
class FakeGpus {
 public:
  explicit FakeGpus(const std::string& json) {
    char name[] = "/tmp/tessera-fake-nvml-XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path_ = name;
    Write(json);
    ::setenv("TESSERA_FAKE_NVML_STATE", path_.c_str(), 1);
  }
  ~FakeGpus() {
    ::unsetenv("TESSERA_FAKE_NVML_STATE");
    ::unlink(path_.c_str());
  }
  FakeGpus(const FakeGpus&) = delete;
  FakeGpus& operator=(const FakeGpus&) = delete;

  void Write(const std::string& json) const {
    std::ofstream out(path_, std::ios::trunc);
    out << json;
  }
  std::string Read() const {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string path_;
};

inline std::unique_ptr<NvmlLibrary> LoadFake() {
  std::string error;
  auto lib = NvmlLibrary::Load(FakePath(), &error);
  REQUIRE_MESSAGE(lib != nullptr, error);
  return lib;
}

// The state-file entry of an H100 in MIG mode laid out as 7 x 1g.10gb (profile ID 19), each
// instance with its compute instance: a GPU object for a "gpus" list.
inline std::string H100InSevenSmall() {
  std::string instances;
  for (int i = 0; i < 7; ++i) {
    instances += std::string(i ? ", " : "") + R"({"id": )" + std::to_string(i + 1) +
                 R"(, "profile_id": 19, "start": )" + std::to_string(i) +
                 R"(, "compute_instances": [{"id": 0, "profile_id": 0}]})";
  }
  return R"({"model": "H100-80GB", "mig_current": 1, "mig_pending": 1, "gpu_instances": [)" +
         instances + "]}";
}

inline nvmlDevice_t Gpu(NvmlLibrary& lib, unsigned index) {
  nvmlDevice_t device = nullptr;
  REQUIRE(lib.DeviceGetHandleByIndex(index, &device) == NVML_SUCCESS);
  return device;
}

}  // namespace tessera::nvml::fake
