#include "vgpu/pci_address.h"

#include <cctype>

namespace tessera::vgpu {

namespace {

bool AllHex(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::optional<std::string> SysfsPciAddress(std::string_view bus_id) {
  std::string_view domain = "0";
  std::string_view rest = bus_id;
  // domain:bus:device.function, or bus:device.function.
  const size_t first = bus_id.find(':');
  if (first == std::string_view::npos) return std::nullopt;
  if (bus_id.find(':', first + 1) != std::string_view::npos) {
    domain = bus_id.substr(0, first);
    rest = bus_id.substr(first + 1);
  }
  const size_t colon = rest.find(':');
  const size_t dot = rest.find('.');
  if (colon != 2 || dot != 5 || rest.size() != 7) return std::nullopt;
  const std::string_view bus = rest.substr(0, 2);
  const std::string_view device = rest.substr(3, 2);
  const char function = rest[6];
  if (domain.size() > 8 || !AllHex(domain) || !AllHex(bus) || !AllHex(device) || function < '0' ||
      function > '7') {
    return std::nullopt;
  }
  // Drop leading zeros, then print at least four digits, as the kernel's "%04x".
  size_t nonzero = domain.find_first_not_of('0');
  std::string digits = nonzero == std::string_view::npos ? "" : Lower(domain.substr(nonzero));
  if (digits.size() < 4) digits.insert(0, 4 - digits.size(), '0');
  return digits + ":" + Lower(bus) + ":" + Lower(device) + "." + function;
}

std::string LinkTargetAddress(std::string_view link_target) {
  while (!link_target.empty() && link_target.back() == '/') link_target.remove_suffix(1);
  const size_t slash = link_target.rfind('/');
  return std::string(slash == std::string_view::npos ? link_target : link_target.substr(slash + 1));
}

}  // namespace tessera::vgpu
