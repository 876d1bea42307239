#include "vgpu/vgpu_type_names.h"

#include <algorithm>
#include <cctype>

#include "tessera/gpu/vgpu_types.h"

namespace tessera::vgpu {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool AllLetters(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
}

}  // namespace

std::string ShortTypeName(std::string_view driver_name) {
  const std::string_view name = Trim(driver_name);
  size_t space = name.size();
  while (space > 0 && !std::isspace(static_cast<unsigned char>(name[space - 1]))) --space;
  return std::string(name.substr(space));
}

bool IsMigBackedType(std::string_view driver_name) {
  const std::string name = ShortTypeName(driver_name);
  return std::count(name.begin(), name.end(), '-') >= 2;
}

std::optional<std::string> SchedulerTypeName(std::string_view driver_name,
                                             std::string_view gpu_family) {
  if (IsMigBackedType(driver_name)) return std::nullopt;
  const std::string name = ShortTypeName(driver_name);
  const std::optional<TypeName> type = ParseType(name);
  if (!type) return std::nullopt;
  if (gpu_family.empty() || type->family == gpu_family) return name;
  const std::string_view family = type->family;
  if (family.size() <= gpu_family.size() || family.substr(0, gpu_family.size()) != gpu_family ||
      !AllLetters(family.substr(gpu_family.size()))) {
    return std::nullopt;
  }
  return std::string(gpu_family) + "-" + std::to_string(type->framebuffer_gib) + type->series;
}

}  // namespace tessera::vgpu
