// The UUID of the mdev device a task's vGPU gets: derived from the task's owner key, so that a
// backend restarted while the device exists finds it again by the same name (Create() for an
// adopted task returns the device it already has) and no record of UUIDs has to be kept.
//
// Name-based, but not RFC 4122 version 5 (that needs SHA-1): two 64-bit FNV-1a hashes of the key
// with the version nibble set to 8 ("custom", RFC 9562) and the RFC variant bits. The kernel's
// mdev create accepts any UUID of the 8-4-4-4-12 hex form. Owner keys are unique on a node, and
// UUIDs need only be unique among the node's mdev devices. Pure function, any thread.
#pragma once

#include <string>
#include <string_view>

namespace tessera::vgpu {

// "5f0c2e8a-1b3d-8e47-9a6c-0d4e2f1b3a5c": lower case, as the kernel names mdev devices.
std::string MdevUuidFor(std::string_view owner);

// Whether `text` is a UUID in the 8-4-4-4-12 hex form (either case).
bool IsUuid(std::string_view text);

}  // namespace tessera::vgpu
