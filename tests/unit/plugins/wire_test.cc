// The plugin host protocol's framing (plugins/remote/wire.h): frames survive a round trip
// however the bytes are split, oversized and inconsistent frames are refused before anything is
// buffered or trusted, and a socket's end is reported.
#include "plugins/remote/wire.h"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

namespace tessera::plugin_wire {
namespace {

Frame Sample(FrameKind kind, uint64_t id, std::string payload, std::string error = "") {
  Frame f;
  f.kind = kind;
  f.function = Function::kLaunch;
  f.status = -7;  // negative values survive the unsigned encoding.
  f.id = id;
  f.payload = std::move(payload);
  f.error = std::move(error);
  return f;
}

void CheckSame(const Frame& a, const Frame& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.function == b.function);
  CHECK(a.status == b.status);
  CHECK(a.id == b.id);
  CHECK(a.payload == b.payload);
  CHECK(a.error == b.error);
}

TEST_CASE("wire: frames round-trip, binary payloads and empty strings included") {
  const std::vector<Frame> frames = {
      Sample(FrameKind::kCall, 1, std::string("\0\x01\xff", 3)),
      Sample(FrameKind::kReply, 0xfedcba9876543210ull, "", "on_launch: no such node"),
      Sample(FrameKind::kEvent, 3, std::string(100'000, 'x')),
      Sample(FrameKind::kNowReply, 4, EncodeInt64(-1'700'000'000'000'000)),
  };
  std::string stream;
  for (const Frame& f : frames) REQUIRE(AppendFrame(f, &stream));
  FrameDecoder decoder;
  decoder.Append(stream.data(), stream.size());
  for (const Frame& expected : frames) {
    Frame got;
    REQUIRE(decoder.Next(&got) == FrameDecoder::Result::kFrame);
    CheckSame(got, expected);
  }
  Frame none;
  CHECK(decoder.Next(&none) == FrameDecoder::Result::kNeedMore);
  int64_t now = 0;
  REQUIRE(DecodeInt64(frames[3].payload, &now));
  CHECK(now == -1'700'000'000'000'000);
}

TEST_CASE("wire: a frame split into any pieces decodes once it is complete") {
  std::string stream;
  REQUIRE(AppendFrame(Sample(FrameKind::kCall, 9, "config bytes", "e"), &stream));
  REQUIRE(AppendFrame(Sample(FrameKind::kLog, 10, "second"), &stream));
  FrameDecoder decoder;
  std::vector<Frame> got;
  // One byte at a time: every prefix short of a whole frame asks for more.
  for (char c : stream) {
    decoder.Append(&c, 1);
    Frame f;
    while (decoder.Next(&f) == FrameDecoder::Result::kFrame) got.push_back(f);
  }
  REQUIRE(got.size() == 2);
  CheckSame(got[0], Sample(FrameKind::kCall, 9, "config bytes", "e"));
  CheckSame(got[1], Sample(FrameKind::kLog, 10, "second"));
}

TEST_CASE("wire: an oversized frame is refused from its length prefix alone") {
  FrameDecoder decoder(/*max_frame_bytes=*/1024);
  std::string stream;
  REQUIRE(AppendFrame(Sample(FrameKind::kEvent, 1, std::string(2000, 'x')), &stream));
  decoder.Append(stream.data(), 4);  // only the prefix: the body is never waited for.
  Frame f;
  REQUIRE(decoder.Next(&f) == FrameDecoder::Result::kError);
  CHECK(decoder.error().find("exceeds the limit of 1024") != std::string::npos);
  // The stream stays broken: nothing after it is trusted.
  std::string good;
  REQUIRE(AppendFrame(Sample(FrameKind::kEvent, 2, "ok"), &good));
  decoder.Append(good.data(), good.size());
  CHECK(decoder.Next(&f) == FrameDecoder::Result::kError);

  // The sender refuses too: a frame past kMaxFrameBytes is not encoded at all.
  std::string out;
  CHECK_FALSE(AppendFrame(Sample(FrameKind::kEvent, 3, std::string(kMaxFrameBytes, 'x')), &out));
  CHECK(out.empty());
}

TEST_CASE("wire: a frame whose sizes disagree, or shorter than its header, is refused") {
  std::string stream;
  REQUIRE(AppendFrame(Sample(FrameKind::kCall, 1, "abc"), &stream));
  stream[4 + 16] = 99;  // the payload size no longer matches the length prefix.
  FrameDecoder decoder;
  decoder.Append(stream.data(), stream.size());
  Frame f;
  CHECK(decoder.Next(&f) == FrameDecoder::Result::kError);
  CHECK(decoder.error().find("frame sizes disagree") != std::string::npos);

  const char tiny[] = {8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  FrameDecoder short_decoder;
  short_decoder.Append(tiny, sizeof(tiny));
  CHECK(short_decoder.Next(&f) == FrameDecoder::Result::kError);
  CHECK(short_decoder.error().find("shorter than its header") != std::string::npos);
}

TEST_CASE("wire: frames cross a socket; its end is reported") {
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  std::string bytes, error;
  REQUIRE(AppendFrame(Sample(FrameKind::kReply, 5, std::string(300'000, 'y')), &bytes));
  REQUIRE(AppendFrame(Sample(FrameKind::kHello, 6, "hi"), &bytes));
  // Bigger than a socket buffer: written from another thread while this one reads.
  std::thread writer([&] { CHECK(WriteAll(fds[1], bytes, &error)); });
  FrameDecoder decoder;
  Frame f;
  REQUIRE(ReadFrame(fds[0], decoder, &f, &error));
  CHECK(f.payload.size() == 300'000);
  REQUIRE(ReadFrame(fds[0], decoder, &f, &error));
  CHECK(f.payload == "hi");
  writer.join();
  close(fds[1]);
  CHECK_FALSE(ReadFrame(fds[0], decoder, &f, &error));
  CHECK(error == "end of stream");
  close(fds[0]);
}

TEST_CASE("wire: the descriptor a host process reports round-trips; a truncated one is refused") {
  DescriptorInfo info;
  info.abi_major = 1;
  info.abi_minor = 3;
  info.struct_size = 120;
  info.kinds = 5;
  info.functions =
      (1u << static_cast<int>(Function::kInit)) | (1u << static_cast<int>(Function::kDeprovision));
  info.name = "sim";
  info.version = "1.2.0";
  const std::string bytes = EncodeDescriptorInfo(info);
  DescriptorInfo back;
  REQUIRE(DecodeDescriptorInfo(bytes, &back));
  CHECK(back.abi_minor == 3);
  CHECK(back.struct_size == 120);
  CHECK(back.kinds == 5);
  CHECK(back.functions == info.functions);
  CHECK(back.name == "sim");
  CHECK(back.version == "1.2.0");
  CHECK_FALSE(DecodeDescriptorInfo(bytes.substr(0, bytes.size() - 1), &back));
  CHECK_FALSE(DecodeDescriptorInfo(bytes + "x", &back));
}

}  // namespace
}  // namespace tessera::plugin_wire
