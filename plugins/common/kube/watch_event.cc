#include "kube/watch_event.h"

namespace tessera::kube {

using json = nlohmann::json;

bool WatchLineSplitter::Feed(std::string_view bytes,
                             const std::function<void(std::string_view line)>& on_line) {
  while (!bytes.empty()) {
    const auto newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      partial_.append(bytes);
      return partial_.size() <= max_line_bytes_;
    }
    std::string_view line;
    if (partial_.empty()) {
      line = bytes.substr(0, newline);
    } else {
      partial_.append(bytes.substr(0, newline));
      line = partial_;
    }
    if (line.size() > max_line_bytes_) return false;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != std::string_view::npos) on_line(line);
    partial_.clear();
    bytes.remove_prefix(newline + 1);
  }
  return true;
}

std::string_view WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "?";
}

std::string WatchEvent::ResourceVersion() const {
  return object.value("/metadata/resourceVersion"_json_pointer, std::string());
}

KubeOutcome<WatchEvent> ParseWatchEvent(std::string_view line) {
  const json parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
  const auto malformed = [&](const std::string& why) {
    return MakeError(KubeErrorKind::kMalformedReply,
                     "watch event " + why + ": " + std::string(line.substr(0, 200)));
  };
  if (!parsed.is_object()) return malformed("is not a JSON object");
  const auto type = parsed.find("type");
  const auto object = parsed.find("object");
  if (type == parsed.end() || !type->is_string()) return malformed("has no type");
  if (object == parsed.end() || !object->is_object()) return malformed("has no object");
  WatchEvent event;
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "ADDED") {
    event.type = WatchEventType::kAdded;
  } else if (name == "MODIFIED") {
    event.type = WatchEventType::kModified;
  } else if (name == "DELETED") {
    event.type = WatchEventType::kDeleted;
  } else if (name == "BOOKMARK") {
    event.type = WatchEventType::kBookmark;
  } else if (name == "ERROR") {
    event.type = WatchEventType::kError;
  } else {
    return malformed("has an unknown type '" + name + "'");
  }
  event.object = *object;
  return event;
}

KubeError WatchErrorOf(const WatchEvent& event) {
  const int code = event.object.value("code", 0);
  KubeError error = ErrorFromReply(code, event.object.dump());
  if (code == 0) error.kind = KubeErrorKind::kOther;
  return error;
}

}  // namespace tessera::kube
