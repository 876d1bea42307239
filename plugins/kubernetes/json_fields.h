// Reading fields of Kubernetes objects (nlohmann::json) without exceptions: a field that is
// missing, or of another type, or asked of something that is not an object, reads as absent
// (null, an empty object, ""). The API server's objects are what other people wrote; a
// malformed one must be skipped or refused with a message, never crash the backend.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tessera::kubernetes {

// `object[key]`, or null.
inline const nlohmann::json& FieldAt(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// `object[key]` when it is an object, or an empty object.
inline const nlohmann::json& ObjectAt(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json& v = FieldAt(object, key);
  return v.is_object() ? v : kEmpty;
}

// `object[key]` when it is a string, or "".
inline std::string StringAt(const nlohmann::json& object, const char* key) {
  const nlohmann::json& v = FieldAt(object, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

inline const nlohmann::json& MetadataOf(const nlohmann::json& object) {
  return ObjectAt(object, "metadata");
}

}  // namespace tessera::kubernetes
