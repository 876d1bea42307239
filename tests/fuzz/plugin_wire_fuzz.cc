// Fuzz target: the plugin host protocol (plugins/remote/wire.h), the bytes either side of the
// socket between the scheduler and tessera-plugin-host reads. The input is a byte stream fed to
// a FrameDecoder in chunks whose sizes the first byte picks, so frames split anywhere. Every
// decoded frame is re-encoded and must decode to itself; a hello's payload goes through
// DecodeDescriptorInfo, the ForwardingDescriptor the scheduler builds from it and the ABI check
// (PluginLibrary::CheckDescriptor), as PluginLibrary::LoadIsolated does; a now-reply's through
// DecodeInt64, as the host does. Malformed streams must end in kError with a message, and stay
// there.
#include <algorithm>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "plugins/plugin_library.h"
#include "plugins/remote/forwarding_descriptor.h"
#include "plugins/remote/wire.h"

namespace wire = tessera::plugin_wire;

namespace {

// A small cap, so that inputs of a few KiB reach the size checks too.
constexpr size_t kFuzzMaxFrameBytes = 4096;

void CheckFrameRoundTrip(const wire::Frame& frame) {
  std::string bytes;
  FUZZ_CHECK(wire::AppendFrame(frame, &bytes));
  wire::FrameDecoder decoder;
  decoder.Append(bytes.data(), bytes.size());
  wire::Frame again;
  FUZZ_CHECK(decoder.Next(&again) == wire::FrameDecoder::Result::kFrame);
  FUZZ_CHECK(again.kind == frame.kind && again.function == frame.function &&
             again.status == frame.status && again.id == frame.id &&
             again.payload == frame.payload && again.error == frame.error);
  FUZZ_CHECK(decoder.Next(&again) == wire::FrameDecoder::Result::kNeedMore);
}

void CheckPayload(const wire::Frame& frame) {
  if (frame.kind == wire::FrameKind::kHello) {
    wire::DescriptorInfo info;
    if (!wire::DecodeDescriptorInfo(frame.payload, &info)) return;
    FUZZ_CHECK(wire::EncodeDescriptorInfo(info) == frame.payload);
    const tessera_plugin_descriptor descriptor = tessera::ForwardingDescriptor(info);
    (void)tessera::PluginLibrary::CheckDescriptor(&descriptor, "fuzz hello");
  } else if (frame.kind == wire::FrameKind::kNowReply) {
    int64_t now = 0;
    if (wire::DecodeInt64(frame.payload, &now)) FUZZ_CHECK(wire::EncodeInt64(now) == frame.payload);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 64;
  const char* stream = reinterpret_cast<const char*>(data + 1);
  const size_t stream_size = size - 1;

  wire::FrameDecoder decoder(kFuzzMaxFrameBytes);
  size_t fed = 0;
  while (true) {
    wire::Frame frame;
    const wire::FrameDecoder::Result result = decoder.Next(&frame);
    if (result == wire::FrameDecoder::Result::kFrame) {
      FUZZ_CHECK(wire::kFrameHeaderBytes + frame.payload.size() + frame.error.size() <=
                 kFuzzMaxFrameBytes);
      CheckFrameRoundTrip(frame);
      CheckPayload(frame);
      continue;
    }
    if (result == wire::FrameDecoder::Result::kError) {
      FUZZ_CHECK(!decoder.error().empty());
      FUZZ_CHECK(decoder.Next(&frame) == wire::FrameDecoder::Result::kError);
      return 0;
    }
    if (fed == stream_size) return 0;
    const size_t n = std::min(chunk, stream_size - fed);
    decoder.Append(stream + fed, n);
    fed += n;
  }
}
