// JobUpdate: what the engine hands its host to make durable after a transition: a job's new
// status and the events that led to it, already serialized.
//
// They are serialized when the engine makes them, from messages it reuses, into buffers whose
// inline part holds the common case: a churning cluster makes four or five updates per job, and
// building each as protobuf objects (strings, placements) and freeing them after the commit cost
// the decision thread more than its decisions did. An update is one allocation.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tessera/v1/event.pb.h"
#include "tessera/v1/job.pb.h"

namespace tessera {

// A v1::Event, serialized without its seq (the store assigns it), with its time for the event
// table's column.
struct SerializedEvent {
  int64_t time_us = 0;
  boost::container::small_vector<char, 160> bytes;

  std::string_view view() const { return {bytes.data(), bytes.size()}; }
};

class JobUpdate {
 public:
  uint64_t job_id = 0;                             // 0: events that concern no job (and no status).
  v1::JobState state = v1::JOB_STATE_UNSPECIFIED;  // the status's state, for the state column.

  // Sets the status; only before the first AddEvent.
  void SetStatus(const v1::JobStatus& status);
  void AddEvent(int64_t time_us, std::string_view bytes);
  void AddEvent(const SerializedEvent& event) { AddEvent(event.time_us, event.view()); }

  // The serialized v1::JobStatus (empty when job_id is 0).
  std::string_view status() const { return {bytes_.data(), status_size_}; }
  size_t event_count() const { return events_.size(); }
  int64_t event_time_us(size_t i) const { return events_[i].time_us; }
  std::string_view event(size_t i) const {
    return {bytes_.data() + events_[i].offset, events_[i].size};
  }

  // Parsed copies, for tests and diagnostics.
  v1::JobStatus ParseStatus() const;
  std::vector<v1::Event> ParseEvents() const;

 private:
  struct EventSpan {
    int64_t time_us = 0;
    uint32_t offset = 0;
    uint32_t size = 0;
  };
  // The status, then each event.
  boost::container::small_vector<char, 320> bytes_;
  uint32_t status_size_ = 0;
  boost::container::small_vector<EventSpan, 2> events_;
};

// Serializes `message` into `out` (replacing what it held).
void SerializeInto(const google::protobuf::MessageLite& message,
                   boost::container::small_vector_base<char>* out);

}  // namespace tessera
