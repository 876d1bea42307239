#include "model/queue_path.h"

#include <cctype>

namespace tessera {
namespace {

bool SegmentOk(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  if (!std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

Status ValidateQueueName(const std::string& name, const std::string& field) {
  if (name.empty()) return InvalidFieldError(field, "required");
  int depth = 0;
  size_t start = 0;
  while (true) {
    const size_t slash = name.find('/', start);
    const std::string segment =
        name.substr(start, slash == std::string::npos ? slash : slash - start);
    if (!SegmentOk(segment)) {
      return InvalidFieldError(
          field,
          "'" + name +
              "' is not a queue path: use '/'-separated segments of letters, digits, '.', '_' or "
              "'-' (each starting with a letter or digit, at most 63 characters)");
    }
    ++depth;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (depth > kMaxQueueDepth) {
    return InvalidFieldError(field, "'" + name + "' is " + std::to_string(depth) +
                                        " levels deep; at most " + std::to_string(kMaxQueueDepth) +
                                        " allowed");
  }
  return Status::Ok();
}

}  // namespace tessera
