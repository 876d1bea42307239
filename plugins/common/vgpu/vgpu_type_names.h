// NVIDIA's vGPU type names as the driver shows them, and the scheduler's names for them.
//
// The driver names a type "<prefix> <GPU>-<GB><series>": "GRID T4-2Q", "NVIDIA A100-4C" in an
// mdev type's `name` file, "NVIDIA H100-8C" in a VF's `creatable_vgpu_types`. The last word is
// the type. The scheduler (sdk tessera/gpu/vgpu_types.h) names a type by the GPU model's family,
// the model up to its first '-' ("A100" for "A100-80GB"), while the driver's <GPU> names the
// board and may carry a suffix for the variant ("A100D-4C" on an A100 80GB PCIe, "H100XM-8C" on
// an H100 SXM5). So a driver type serves the scheduler's "<family>-<GB><series>" when its own
// family is that family, or that family followed by letters only (never digits: "A10" is not
// "A100"), with the same framebuffer and series. MIG-backed types ("A100-1-5C", "H100XM-1-10C")
// have no scheduler name: the scheduler does not place them (a MIG request is the way).
//
// Pure functions, any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tessera::vgpu {

// The last word of a driver type name: "A100-4C" for "GRID A100-4C" or "NVIDIA A100-4C".
std::string ShortTypeName(std::string_view driver_name);

// Whether the driver type is MIG-backed: "<GPU>-<slices>-<GB><series>[suffix]".
bool IsMigBackedType(std::string_view driver_name);

// The scheduler's name of a driver type on a GPU of `gpu_family` ("A100"): "A100-4C" for
// "NVIDIA A100-4C" or "NVIDIA A100D-4C". With an empty `gpu_family`, the driver's own family
// is kept ("A100D-4C"). nullopt for a MIG-backed type, a name not of the form, or a type of
// another family.
std::optional<std::string> SchedulerTypeName(std::string_view driver_name,
                                             std::string_view gpu_family);

}  // namespace tessera::vgpu
