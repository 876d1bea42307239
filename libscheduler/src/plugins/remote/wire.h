// The plugin host protocol: frames on the stream socket between the scheduler and a
// tessera-plugin-host process that runs one plugin in isolation (docs/plugins.md).
//
// A frame is a 4-byte little-endian length (of everything after it, at most kMaxFrameBytes),
// then a fixed 24-byte header and two byte strings:
//   u8 kind, u8 function, u16 zero, i32 status, u64 id, u32 payload size, u32 error size,
//   payload bytes, error bytes.
// All integers are little-endian. What the fields mean depends on the kind (FrameKind).
//
// This file uses nothing but the C++ standard library, POSIX and the plugin ABI's C headers, so
// that the host executable (libscheduler/tools/plugin_host_main.cc) compiles it too; it does not
// link the scheduler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tessera/plugin/abi_calls.h"

namespace tessera::plugin_wire {

enum class FrameKind : uint8_t {
  // Host → scheduler, first frame. status OK: payload is an encoded DescriptorInfo; otherwise
  // error says why the plugin could not be loaded.
  kHello = 1,
  // Scheduler → host: call `function` with `payload` (the request or on_init's config).
  kCall = 2,
  // Host → scheduler: call `id` returned `status`, wrote `payload` to its out sink and `error`
  // to its error sink.
  kReply = 3,
  // Host → scheduler: the plugin called tessera_host_emit_event with `payload`.
  kEvent = 4,
  // Host → scheduler: the plugin called tessera_host_log; `status` is the level.
  kLog = 5,
  // Host → scheduler: the plugin called tessera_host_now_us; answer with kNowReply, same id.
  kNowRequest = 6,
  // Scheduler → host: the host's clock; payload is 8 bytes, a little-endian int64.
  kNowReply = 7,
};

// The plugin functions a kCall names; also the bit (1 << value) in DescriptorInfo::functions.
// on_init and on_shutdown, then one value per call of tessera/plugin/abi_calls.h (kInventory,
// kLaunch, ... kDeprovision), its opcode there.
enum class Function : uint8_t {
  kNone = 0,
  kInit = 1,
  kShutdown = 2,
#define TESSERA_WIRE_FUNCTION(name, Method, opcode, ...) k##Method = opcode,
  TESSERA_PLUGIN_CALLS(TESSERA_WIRE_FUNCTION, TESSERA_WIRE_FUNCTION, TESSERA_WIRE_FUNCTION)
#undef TESSERA_WIRE_FUNCTION
};

struct Frame {
  FrameKind kind = FrameKind::kCall;
  Function function = Function::kNone;
  int32_t status = 0;
  uint64_t id = 0;
  std::string payload;
  std::string error;
};

// The largest frame either side accepts (the length prefix's value). Larger ones are refused
// before any of their bytes are buffered: the connection is then broken.
constexpr size_t kMaxFrameBytes = size_t{64} << 20;
constexpr size_t kFrameHeaderBytes = 24;

// Appends `frame`, length prefix included, to `out`. False (and nothing appended) when it would
// exceed kMaxFrameBytes.
bool AppendFrame(const Frame& frame, std::string* out);

// Splits a byte stream into frames, however the bytes arrive.
class FrameDecoder {
 public:
  enum class Result { kFrame, kNeedMore, kError };

  explicit FrameDecoder(size_t max_frame_bytes = kMaxFrameBytes) : max_(max_frame_bytes) {}

  void Append(const char* data, size_t size) { buffer_.append(data, size); }
  // kFrame: *out is the next frame. kNeedMore: append more bytes. kError: the stream is
  // malformed (error() says how) and stays so.
  Result Next(Frame* out);
  const std::string& error() const { return error_; }

 private:
  size_t max_;
  std::string buffer_;
  size_t consumed_ = 0;  // bytes of buffer_ already returned as frames.
  std::string error_;
};

// Blocking I/O on a stream socket; EINTR and short transfers are retried. False on end of
// stream or an error, with `error` saying which.
bool WriteAll(int fd, const std::string& bytes, std::string* error);
// Reads until `decoder` yields a frame. False on end of stream, an error or a malformed frame.
bool ReadFrame(int fd, FrameDecoder& decoder, Frame* out, std::string* error);

// What the host process reports about its plugin's descriptor in kHello.
struct DescriptorInfo {
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  uint32_t struct_size = 0;
  uint32_t kinds = 0;
  uint32_t functions = 0;  // bit (1 << Function) set for each non-NULL function.
  std::string name;
  std::string version;
};

std::string EncodeDescriptorInfo(const DescriptorInfo& info);
bool DecodeDescriptorInfo(const std::string& bytes, DescriptorInfo* out);

std::string EncodeInt64(int64_t value);
bool DecodeInt64(const std::string& bytes, int64_t* out);

}  // namespace tessera::plugin_wire
