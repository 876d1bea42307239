#include "engine/job_update.h"

#include "common/check.h"

namespace tessera {

void SerializeInto(const google::protobuf::MessageLite& message,
                   boost::container::small_vector_base<char>* out) {
  const size_t size = message.ByteSizeLong();
  out->resize(size, boost::container::default_init);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out->data()));
}

void JobUpdate::SetStatus(const v1::JobStatus& status) {
  TESSERA_DCHECK(events_.empty());
  state = status.state();
  SerializeInto(status, &bytes_);
  status_size_ = static_cast<uint32_t>(bytes_.size());
}

void JobUpdate::AddEvent(int64_t time_us, std::string_view bytes) {
  const size_t offset = bytes_.size();
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  events_.push_back({time_us, static_cast<uint32_t>(offset), static_cast<uint32_t>(bytes.size())});
}

v1::JobStatus JobUpdate::ParseStatus() const {
  v1::JobStatus parsed;
  const std::string_view bytes = status();
  if (!parsed.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    TESSERA_BUG("a job update holds an unparsable status");
  }
  return parsed;
}

std::vector<v1::Event> JobUpdate::ParseEvents() const {
  std::vector<v1::Event> parsed(events_.size());
  for (size_t i = 0; i < events_.size(); ++i) {
    const std::string_view bytes = event(i);
    if (!parsed[i].ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      TESSERA_BUG("a job update holds an unparsable event");
    }
  }
  return parsed;
}

}  // namespace tessera
