// Fuzz target: a JobSpec (and a QueueSpec) read as JSON, the way ReadMessageFile reads a .json
// file and tesserad reads a request body (the proto3 JSON mapping). What parses must print back
// to JSON that parses to the same message (compared as deterministic binary, so that a NaN
// equals itself).
#include <google/protobuf/util/json_util.h>

#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "tessera/v1/job.pb.h"
#include "tessera/v1/queue.pb.h"

namespace {

template <typename Message>
void ParseAndRoundTrip(const std::string& text) {
  Message message;
  if (!google::protobuf::util::JsonStringToMessage(text, &message).ok()) return;
  std::string printed;
  FUZZ_CHECK(google::protobuf::util::MessageToJsonString(message, &printed).ok());
  Message again;
  FUZZ_CHECK(google::protobuf::util::JsonStringToMessage(printed, &again).ok());
  FUZZ_CHECK(tessera_fuzz::DeterministicBytes(message) == tessera_fuzz::DeterministicBytes(again));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ParseAndRoundTrip<tessera::v1::JobSpec>(text);
  ParseAndRoundTrip<tessera::v1::QueueSpec>(text);
  return 0;
}
