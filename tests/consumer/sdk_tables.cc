// The SDK's GPU tables from an installed Tessera, as a plugin reaches them: header-only, through
// tessera::plugin_sdk alone. Exits 0 when the installed headers answer as the sources do.
#include <iostream>

#include "tessera/gpu/mig_profiles.h"
#include "tessera/gpu/model_names.h"
#include "tessera/gpu/vgpu_types.h"

int main() {
  const std::string model = tessera::model_names::FromDeviceName("NVIDIA H100 80GB HBM3", 81559);
  const tessera::mig::ModelProfiles* profiles = tessera::mig::FindModel(model);
  if (profiles == nullptr) {
    std::cerr << "no MIG profiles for '" << model << "'\n";
    return 1;
  }
  const auto kind = tessera::mig::FindProfile(*profiles, "3g.40gb");
  const auto vgpu = tessera::vgpu::ParseType("H100-10C");
  if (!kind || tessera::mig::Shape(*kind).compute_slices != 3 || !vgpu ||
      tessera::vgpu::InstancesPerGpu(vgpu->framebuffer_gib, 81559) != 8) {
    std::cerr << "the installed SDK tables answer wrongly\n";
    return 1;
  }
  std::cout << "installed SDK tables: ok\n";
  return 0;
}
