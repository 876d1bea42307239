// vGPU families interned: a GPU slot of a vGPU GPU names its family ("A100", the model up to its
// first '-', tessera/gpu/vgpu_types.h) by a pointer to one process-wide copy, so that slots
// compare and copy families without allocating. The vGPU type rules themselves are the SDK's;
// only this bookkeeping is the scheduler's.
//
// Thread-safe: interning takes a mutex; the strings live until the process ends.
#pragma once

#include <string>
#include <string_view>

namespace tessera::vgpu {

// The one copy of a family name, kept for the life of the process (GPU slots point to it).
const std::string* InternFamily(std::string_view family);

}  // namespace tessera::vgpu
