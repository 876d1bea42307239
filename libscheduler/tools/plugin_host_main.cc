// tessera-plugin-host <plugin.so>: runs one plugin in a process of its own, for a scheduler
// that isolates it (PluginOptions::isolate). The scheduler starts it with a connected stream
// socket on fd 3 and speaks the frames of libscheduler/src/plugins/remote/wire.h:
//
//   1. The host loads the plugin (dlopen, RTLD_LOCAL), calls its entry function and sends the
//      descriptor's fields in a kHello frame; the scheduler does the ABI handshake on them.
//   2. kCall frames are served in order on two call threads, the lanes of the scheduler's
//      PluginExecutor: on_poll_events and on_telemetry (which the ABI lets overlap any other
//      call) on one, everything else on the other, so a slow launch never holds up a poll. Each
//      call gets a kReply with the status and what the plugin wrote.
//   3. The plugin's host callbacks become frames: log and emit_event are sent as they happen;
//      now_us asks the scheduler (kNowRequest) and waits for its clock (kNowReply), so a plugin
//      sees exactly the scheduler's clock, virtual or real.
//
// When the socket closes (the scheduler went away or gave up on the plugin) the process exits
// at once, without calling on_shutdown: a call may be stuck, and tasks are left running for the
// next instance to reconcile. It never links the scheduler: only the C ABI and the framing.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "plugins/remote/wire.h"
#include "tessera/plugin/abi.h"
#include "tessera/plugin/abi_calls.h"
#include "tessera/plugin/handshake.h"

namespace {

using tessera::plugin_wire::DescriptorInfo;
using tessera::plugin_wire::Frame;
using tessera::plugin_wire::FrameKind;
using tessera::plugin_wire::Function;

constexpr int kSocketFd = 3;

std::mutex write_mu;

void Send(const Frame& frame) {
  std::string bytes;
  if (!tessera::plugin_wire::AppendFrame(frame, &bytes)) {
    // Too big for the protocol: say so instead of the payload, so the caller is not left waiting.
    Frame refused = frame;
    refused.payload.clear();
    refused.status = frame.kind == FrameKind::kReply ? TESSERA_RESOURCE_EXHAUSTED : frame.status;
    refused.error = "tessera-plugin-host: frame larger than the protocol allows";
    tessera::plugin_wire::AppendFrame(refused, &bytes);
  }
  std::string error;
  std::lock_guard<std::mutex> lock(write_mu);
  if (!tessera::plugin_wire::WriteAll(kSocketFd, bytes, &error)) _exit(0);  // scheduler gone.
}

// --- now_us: a round trip to the scheduler.

std::mutex now_mu;
std::condition_variable now_cv;
uint64_t next_now_id = 1;
std::map<uint64_t, int64_t> now_answers;

int64_t RealNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t HostNowUs(void*) {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(now_mu);
    id = next_now_id++;
  }
  Frame request;
  request.kind = FrameKind::kNowRequest;
  request.id = id;
  Send(request);
  std::unique_lock<std::mutex> lock(now_mu);
  // The scheduler answers from its reader thread; if it does not, fall back to the real clock
  // rather than hang the plugin.
  if (!now_cv.wait_for(lock, std::chrono::seconds(10), [&] { return now_answers.count(id); })) {
    return RealNowUs();
  }
  const int64_t now = now_answers[id];
  now_answers.erase(id);
  return now;
}

void HostLog(void*, int32_t level, const char* message, size_t size) {
  Frame frame;
  frame.kind = FrameKind::kLog;
  frame.status = level;
  frame.payload.assign(message, size);
  Send(frame);
}

void HostEmitEvent(void*, const uint8_t* event, size_t size) {
  Frame frame;
  frame.kind = FrameKind::kEvent;
  frame.payload.assign(reinterpret_cast<const char*>(event), size);
  Send(frame);
}

// --- Calls.

struct StringSink {
  tessera_sink sink;
  std::string bytes;
  StringSink() {
    sink.context = this;
    sink.write = [](tessera_sink* s, const uint8_t* data, size_t size) {
      static_cast<StringSink*>(s->context)->bytes.assign(reinterpret_cast<const char*>(data), size);
    };
  }
};

tessera_plugin_descriptor descriptor{};
tessera_host_api host{};
tessera_plugin_instance* instance = nullptr;

tessera_bytes Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

Frame Serve(const Frame& call) {
  const tessera_plugin_descriptor& d = descriptor;
  Frame reply;
  reply.kind = FrameKind::kReply;
  reply.function = call.function;
  reply.id = call.id;
  StringSink out, error;
  tessera_status status = TESSERA_INTERNAL;
  bool known = true;
  // One way to call each shape of function (tessera/plugin/abi_calls.h); false when the plugin
  // lacks it.
  auto with_reply = [&](auto fn) {
    if (fn == nullptr) return false;
    status = fn(instance, &out.sink, &error.sink);
    return true;
  };
  auto with_request = [&](auto fn) {
    if (fn == nullptr) return false;
    status = fn(instance, Bytes(call.payload), &error.sink);
    return true;
  };
  auto with_request_reply = [&](auto fn) {
    if (fn == nullptr) return false;
    status = fn(instance, Bytes(call.payload), &out.sink, &error.sink);
    return true;
  };
  switch (call.function) {
    case Function::kInit:
      if (instance != nullptr) {
        status = TESSERA_FAILED_PRECONDITION;
        error.bytes = "tessera-plugin-host: the plugin already has an instance";
        break;
      }
      status = d.tessera_plugin_on_init(&host, Bytes(call.payload), &instance, &error.sink);
      break;
    case Function::kShutdown:
      if (instance != nullptr) d.tessera_plugin_on_shutdown(instance);
      instance = nullptr;
      status = TESSERA_OK;
      break;
#define TESSERA_SERVE(name, Method, shape)     \
  case Function::k##Method:                    \
    known = shape(d.tessera_plugin_on_##name); \
    break;
#define TESSERA_SERVE_REPLY(name, Method, ...) TESSERA_SERVE(name, Method, with_reply)
#define TESSERA_SERVE_REQUEST(name, Method, ...) TESSERA_SERVE(name, Method, with_request)
#define TESSERA_SERVE_REQUEST_REPLY(name, Method, ...) \
  TESSERA_SERVE(name, Method, with_request_reply)
      TESSERA_PLUGIN_CALLS(TESSERA_SERVE_REPLY, TESSERA_SERVE_REQUEST, TESSERA_SERVE_REQUEST_REPLY)
#undef TESSERA_SERVE_REQUEST_REPLY
#undef TESSERA_SERVE_REQUEST
#undef TESSERA_SERVE_REPLY
#undef TESSERA_SERVE
    default:
      known = false;
  }
  if (!known) {
    status = TESSERA_INTERNAL;
    error.bytes = "tessera-plugin-host: the plugin has no function " +
                  std::to_string(static_cast<int>(call.function));
  }
  reply.status = status;
  reply.payload = std::move(out.bytes);
  reply.error = std::move(error.bytes);
  return reply;
}

// One lane of calls, served in order on a thread of its own.
struct Lane {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Frame> calls;
  bool serving = false;             // a call of this lane is in the plugin.
  Lane* before_shutdown = nullptr;  // a lane that must be idle before on_shutdown runs here.

  void Push(Frame call) {
    {
      std::lock_guard<std::mutex> lock(mu);
      calls.push_back(std::move(call));
    }
    cv.notify_all();
  }

  // Returns once no call of this lane is queued or in the plugin.
  void WaitIdle() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return calls.empty() && !serving; });
  }

  void Run() {
    while (true) {
      Frame call;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [this] { return !calls.empty(); });
        call = std::move(calls.front());
        calls.pop_front();
        serving = true;
      }
      // The scheduler sends on_shutdown only after the reads it asked for were answered, but
      // the instance must not be freed under a read even if one were still here.
      if (call.function == Function::kShutdown && before_shutdown != nullptr) {
        before_shutdown->WaitIdle();
      }
      Frame reply = Serve(call);
      {
        std::lock_guard<std::mutex> lock(mu);
        serving = false;
      }
      cv.notify_all();
      Send(reply);
    }
  }
};

Lane operations;
Lane reads;  // on_poll_events and on_telemetry.

bool IsRead(Function f) { return f == Function::kPollEvents || f == Function::kTelemetry; }

// Loads the plugin and fills `descriptor`; on failure returns the reason.
std::string Load(const char* path, DescriptorInfo* info) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return std::string("cannot load: ") + dlerror();
  auto entry =
      reinterpret_cast<tessera_plugin_entry_fn>(dlsym(handle, TESSERA_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr) return "no " TESSERA_PLUGIN_ENTRY_SYMBOL " symbol; is it a Tessera plugin?";
  const tessera_plugin_descriptor* d = entry();
  if (d == nullptr) return "the entry function returned no descriptor";
  info->abi_major = d->abi_major;
  info->abi_minor = d->abi_minor;
  info->struct_size = d->struct_size;
  info->kinds = d->kinds;
  info->name = d->name ? d->name : "";
  info->version = d->version ? d->version : "";
  // The scheduler refuses other majors and short descriptors from these fields alone; only read
  // the function table of a descriptor that can have one.
  if (d->abi_major != TESSERA_PLUGIN_ABI_MAJOR ||
      d->struct_size < tessera::plugin::kMinDescriptorSize) {
    return "";
  }
  std::memcpy(&descriptor, d, std::min<size_t>(d->struct_size, sizeof(descriptor)));
  auto has = [&](Function f, bool present) {
    if (present) info->functions |= 1u << static_cast<int>(f);
  };
  has(Function::kInit, descriptor.tessera_plugin_on_init != nullptr);
  has(Function::kShutdown, descriptor.tessera_plugin_on_shutdown != nullptr);
#define TESSERA_HAS(name, Method, ...) \
  has(Function::k##Method, descriptor.tessera_plugin_on_##name != nullptr);
  TESSERA_PLUGIN_CALLS(TESSERA_HAS, TESSERA_HAS, TESSERA_HAS)
#undef TESSERA_HAS
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || fcntl(kSocketFd, F_GETFD) < 0) {
    std::fprintf(stderr,
                 "usage: tessera-plugin-host <plugin.so>\n"
                 "Runs one Tessera plugin for a scheduler that isolates it; the scheduler starts\n"
                 "it with a connected socket on fd 3. Not meant to be run by hand.\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  // Processes the plugin starts must not inherit the socket: a task that outlives this process
  // would keep it open, and the scheduler would never see the end that tells it we are gone.
  fcntl(kSocketFd, F_SETFD, FD_CLOEXEC);

  DescriptorInfo info;
  Frame hello;
  hello.kind = FrameKind::kHello;
  const std::string failed = Load(argv[1], &info);
  if (failed.empty()) {
    hello.status = TESSERA_OK;
    hello.payload = tessera::plugin_wire::EncodeDescriptorInfo(info);
  } else {
    hello.status = TESSERA_INVALID_ARGUMENT;
    hello.error = failed;
  }
  Send(hello);
  if (!failed.empty()) return 1;

  host.struct_size = sizeof(tessera_host_api);
  host.context = nullptr;
  host.tessera_host_log = HostLog;
  host.tessera_host_emit_event = HostEmitEvent;
  host.tessera_host_now_us = HostNowUs;
  host.abi_minor = TESSERA_PLUGIN_ABI_MINOR;
  operations.before_shutdown = &reads;
  std::thread([] { operations.Run(); }).detach();
  std::thread([] { reads.Run(); }).detach();

  tessera::plugin_wire::FrameDecoder decoder;
  Frame frame;
  std::string error;
  while (tessera::plugin_wire::ReadFrame(kSocketFd, decoder, &frame, &error)) {
    if (frame.kind == FrameKind::kCall) {
      (IsRead(frame.function) ? reads : operations).Push(std::move(frame));
    } else if (frame.kind == FrameKind::kNowReply) {
      int64_t now = 0;
      if (!tessera::plugin_wire::DecodeInt64(frame.payload, &now)) now = RealNowUs();
      {
        std::lock_guard<std::mutex> lock(now_mu);
        now_answers[frame.id] = now;
      }
      now_cv.notify_all();
    }
  }
  // The scheduler closed the socket, or spoke nonsense: leave at once, whatever is running.
  _exit(0);
}
