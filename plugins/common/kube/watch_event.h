// Reading a watch: the reply of `GET …?watch=true` is a chunked stream of JSON objects, one a
// line: {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{…}}. Chunk boundaries have
// nothing to do with lines, so WatchLineSplitter gathers bytes as they arrive and hands over
// each complete line (a line may span many reads, one read may hold many lines), keeping the
// unfinished tail for the next read. ParseWatchEvent reads one line; an ERROR event's object is
// a Status (code 410, reason Expired: "too old resource version"), turned into a KubeError by
// WatchErrorOf. Pure; a splitter belongs to one stream and one thread.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kube/kube_error.h"

namespace tessera::kube {

class WatchLineSplitter {
 public:
  // A line longer than `max_line_bytes` is a broken stream (an object that large is no pod).
  explicit WatchLineSplitter(std::size_t max_line_bytes = 16u * 1024 * 1024)
      : max_line_bytes_(max_line_bytes) {}

  // Appends `bytes`, calling `on_line` with each line now complete (without its "\n" or
  // "\r\n"; blank lines are skipped). False when the unfinished line passes the limit; the
  // splitter is then of no further use.
  bool Feed(std::string_view bytes, const std::function<void(std::string_view line)>& on_line);
  // Bytes of the unfinished line held back.
  std::size_t pending() const { return partial_.size(); }

 private:
  std::size_t max_line_bytes_;
  std::string partial_;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

std::string_view WatchEventTypeName(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;  // the object, its final state for DELETED; a Status for ERROR

  // object.metadata.resourceVersion ("" when absent, as in an ERROR's Status).
  std::string ResourceVersion() const;
};

// kMalformedReply when the line is not such an object.
KubeOutcome<WatchEvent> ParseWatchEvent(std::string_view line);
// The error an ERROR event carries (kind from its Status.code: 410 is kGone).
KubeError WatchErrorOf(const WatchEvent& event);

}  // namespace tessera::kube
