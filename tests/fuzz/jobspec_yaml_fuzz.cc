// Fuzz target: a JobSpec and a QueueSpec read from YAML by the public message-file API
// (ParseYamlMessage, which ReadMessageFile and tessctl use for .yaml files), through the
// YAML-onto-protobuf mapping of config/yaml_proto.cc. Any text must give OK or an
// INVALID_ARGUMENT with a message, never a crash, a hang or an escaping exception.
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "tessera/message_file.h"
#include "tessera/v1/job.pb.h"
#include "tessera/v1/queue.pb.h"

namespace {

void Parse(const std::string& text, google::protobuf::Message* message) {
  const tessera::Status status = tessera::ParseYamlMessage(text, "fuzz.yaml", message);
  if (status.ok()) return;
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
