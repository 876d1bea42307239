// Fuzz target: a JobSpec and a QueueSpec read from YAML by the public message-file API
// (ParseYamlMessage, which ReadMessageFile and tessctl use for .yaml files), through the
// YAML-onto-protobuf mapping of config/yaml_proto.cc. Any text must give OK or an
// INVALID_ARGUMENT with a message, never a crash, a hang or an escaping exception; and what it
// accepts must survive the binary encoding the store and the HTTP API use (parse back to the
// same message), as it must for a JobSpec read from JSON.
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_support.h"
#include "tessera/message_file.h"
#include "tessera/v1/job.pb.h"
#include "tessera/v1/queue.pb.h"

namespace {

void Parse(const std::string& text, google::protobuf::Message* message) {
  const tessera::Status status = tessera::ParseYamlMessage(text, "fuzz.yaml", message);
  if (status.ok()) {
    std::unique_ptr<google::protobuf::Message> again(message->New());
    FUZZ_CHECK(again->ParseFromString(tessera_fuzz::DeterministicBytes(*message)));
    FUZZ_CHECK(tessera_fuzz::DeterministicBytes(*again) ==
               tessera_fuzz::DeterministicBytes(*message));
    return;
  }
  FUZZ_CHECK(status.code() == tessera::StatusCode::kInvalidArgument);
  FUZZ_CHECK(!status.message().empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tessera::v1::JobSpec job;
  Parse(text, &job);
  tessera::v1::QueueSpec queue;
  Parse(text, &queue);
  return 0;
}
