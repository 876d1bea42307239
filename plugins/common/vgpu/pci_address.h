// PCI addresses as NVML reports them and as sysfs names them.
//
// NVML's bus id has an 8-hex-digit domain in upper case ("00000000:3B:00.0"); sysfs names a
// device by a 4-digit domain in lower case ("0000:3b:00.0"), which is what every path under
// /sys/bus/pci/devices and /sys/class/mdev_bus uses. Pure functions, any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tessera::vgpu {

// "0000:3b:00.0" for "00000000:3B:00.0", "0000:3B:00.0" or "3b:00.0" (domain 0); nullopt when
// `bus_id` is not [domain:]bus:device.function in hex (bus and device two digits, function 0-7,
// domain up to 8 digits). A domain above 0xffff keeps all its digits ("10000:01:00.0"), as the
// kernel's "%04x" prints it.
std::optional<std::string> SysfsPciAddress(std::string_view bus_id);

// The address a PCI link such as virtfn0 or physfn points to: its last path component
// ("../0000:3b:00.4" -> "0000:3b:00.4").
std::string LinkTargetAddress(std::string_view link_target);

}  // namespace tessera::vgpu
