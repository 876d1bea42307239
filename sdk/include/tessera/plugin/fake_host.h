// FakeHost: load one Tessera plugin and drive it through the C ABI (abi.h) without the
// scheduler, so a plugin author can unit-test a backend and the conformance kit can check one.
//
// A FakeHost is made from an entry function linked into the test (Load), from a shared object
// (Open, which keeps the library loaded for as long as the FakeHost lives), or from a linked plugin
// (Linked, linked.h, which it keeps alive likewise). Either way it checks
// the descriptor as the scheduler's plugin host does (CheckDescriptor) before calling anything.
// Typed calls serialize the request, call the plugin, and parse its reply; every result is a
// PluginStatus (plugin.h): the plugin's own status and message, or an error the host made up
// (INTERNAL for a reply that does not parse or a broken ABI rule, FAILED_PRECONDITION for a call
// the plugin does not provide or that comes before Init). FakeHost never abandons a slow call;
// it measures each one (call_stats) so a test or the conformance kit can hold it to a deadline.
//
// The host side is recorded: logs, events (emitted through the callback or returned by
// PollEvents, in arrival order) and ABI violations (malformed events, callbacks after shutdown).
// The clock the plugin reads through tessera_host_now_us is virtual: SetNowUs and AdvanceUs move
// it, nothing else does.
//
// Thread safety: like the real host, FakeHost does not serialize calls. Calling one plugin from
// two threads at once is allowed only for PollEvents and Telemetry (which may overlap any call),
// exactly the overlap the ABI permits. The clock, the records and WaitForEvent are thread-safe.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/plugin/abi.h"
#include "tessera/plugin/abi_calls.h"
#include "tessera/plugin/handshake.h"
#include "tessera/plugin/linked.h"
#include "tessera/plugin/plugin.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera::plugin {

// The handshake (handshake.h), as the scheduler's plugin host makes it: FAILED_PRECONDITION
// "handshake: <problem>" when the descriptor fails it.
inline PluginStatus CheckDescriptor(const tessera_plugin_descriptor* d) {
  if (std::optional<HandshakeProblem> problem = CheckHandshake(d)) {
    return PluginStatus::Error(TESSERA_FAILED_PRECONDITION, "handshake: " + problem->message);
  }
  return PluginStatus::Ok();
}

class FakeHost {
 public:
  struct LogEntry {
    int32_t level = TESSERA_LOG_INFO;
    std::string message;
  };
  // Latency of one kind of call ("init", "launch", "poll_events", ...), wall time.
  struct CallStats {
    int64_t count = 0;
    int64_t total_us = 0;
    int64_t max_us = 0;
  };
  // Told when a call starts (done == false, elapsed_us == 0) and when it returns; `id` pairs
  // the two. Runs on the calling thread.
  using CallObserver =
      std::function<void(std::string_view call, uint64_t id, bool done, int64_t elapsed_us)>;
  // The calls that take request bytes, for SendRequestBytes: one per REQUEST or REQUEST_REPLY
  // row of abi_calls.h (kLaunch, kStop, kResize, kApplyMigLayout, kProvision, kDeprovision).
  enum class RequestCall {
#define TESSERA_FAKE_HOST_NO_REQUEST(...)
#define TESSERA_FAKE_HOST_REQUEST_CALL(name, Method, ...) k##Method,
    TESSERA_PLUGIN_CALLS(TESSERA_FAKE_HOST_NO_REQUEST, TESSERA_FAKE_HOST_REQUEST_CALL,
                         TESSERA_FAKE_HOST_REQUEST_CALL)
#undef TESSERA_FAKE_HOST_REQUEST_CALL
#undef TESSERA_FAKE_HOST_NO_REQUEST
  };

  // Where the virtual clock starts: 2023-11-14T22:13:20Z.
  static constexpr int64_t kDefaultStartUs = 1'700'000'000'000'000;

  // A plugin linked into this binary. Errors: INVALID_ARGUMENT for a NULL entry; the handshake's
  // FAILED_PRECONDITION.
  static PluginStatus Load(tessera_plugin_entry_fn entry, std::unique_ptr<FakeHost>* out) {
    if (entry == nullptr) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "load: NULL entry function");
    }
    return Make(entry(), nullptr, out);
  }

  // A plugin shared object at `path` (dlopen, then dlsym of TESSERA_PLUGIN_ENTRY_SYMBOL). The
  // library stays loaded until the FakeHost is destroyed, after the instance is shut down.
  // Errors: NOT_FOUND when the library does not load (dlerror's reason in the message);
  // INVALID_ARGUMENT when it has no entry symbol; the handshake's FAILED_PRECONDITION.
  static PluginStatus Open(const std::string& path, std::unique_ptr<FakeHost>* out) {
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      return PluginStatus::Error(TESSERA_NOT_FOUND,
                                 "open " + path + ": " + (why ? why : "dlopen failed"));
    }
    std::shared_ptr<void> library(handle, [](void* h) { dlclose(h); });
    void* symbol = dlsym(handle, TESSERA_PLUGIN_ENTRY_SYMBOL);
    if (symbol == nullptr) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                 "open " + path + ": no symbol " + TESSERA_PLUGIN_ENTRY_SYMBOL);
    }
    auto entry = reinterpret_cast<tessera_plugin_entry_fn>(symbol);
    return Make(entry(), std::move(library), out);
  }

  // A linked plugin (linked.h), called as the scheduler calls one: through
  // LinkedDescriptor, with Init made by InitLinked. Errors: INVALID_ARGUMENT for a NULL
  // plugin; the handshake's FAILED_PRECONDITION (a name, a version, known kinds).
  static PluginStatus Linked(std::shared_ptr<const LinkedPlugin> plugin,
                             std::unique_ptr<FakeHost>* out) {
    if (plugin == nullptr) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "load: NULL linked plugin");
    }
    const tessera_plugin_descriptor d = LinkedDescriptor(*plugin);
    const LinkedPlugin* raw = plugin.get();
    PluginStatus status = Make(&d, std::move(plugin), out);
    if (status.ok()) (*out)->linked_ = raw;
    return status;
  }

  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;
  // Shuts the instance down if it is still alive, then lets the library go.
  ~FakeHost() { Shutdown(); }

  // The descriptor as the host uses it: a copy of the plugin's, where functions past the
  // plugin's struct_size are NULL. abi_minor and struct_size are the plugin's own.
  const tessera_plugin_descriptor& descriptor() const { return descriptor_; }
  std::string name() const { return descriptor_.name; }
  std::string version() const { return descriptor_.version; }
  bool Declares(uint32_t kind) const { return (descriptor_.kinds & kind) != 0; }
  bool initialized() const { return instance_ != nullptr; }

  // Plays a host of ABI 1.0 from the next Init on: its tessera_host_api ends before abi_minor
  // (struct_size says so), as a plugin loaded by an older scheduler sees it. Such a host never
  // calls Start; nothing stops a test from calling it anyway.
  void PoseAsAbi10Host() {
    host_api_.struct_size = static_cast<uint32_t>(offsetof(tessera_host_api, abi_minor));
    host_api_.abi_minor = 0;
  }

  // on_init with `config` (the plugin's own format). Errors: the plugin's (INVALID_ARGUMENT for
  // a bad config); FAILED_PRECONDITION when already initialized; INTERNAL when the plugin says OK
  // without an instance.
  PluginStatus Init(std::string_view config) {
    if (instance_ != nullptr) {
      return PluginStatus::Error(TESSERA_FAILED_PRECONDITION, "init: already initialized");
    }
    Sink error;
    tessera_plugin_instance* instance = nullptr;
    const tessera_bytes bytes{reinterpret_cast<const uint8_t*>(config.data()), config.size()};
    const tessera_status code = Timed("init", [&] {
      if (linked_ != nullptr) {
        return InitLinked(*linked_, &host_api_, bytes, &instance, &error.sink);
      }
      return descriptor_.tessera_plugin_on_init(&host_api_, bytes, &instance, &error.sink);
    });
    PluginStatus status = Finish("init", code, error);
    if (!status.ok()) return status;
    if (instance == nullptr) {
      return PluginStatus::Error(TESSERA_INTERNAL, "init: the plugin returned OK and no instance");
    }
    shut_down_.store(false);
    instance_ = instance;
    return PluginStatus::Ok();
  }

  // on_shutdown, when initialized; a no-op otherwise. Callbacks after it returns are recorded as
  // violations.
  void Shutdown() {
    if (instance_ == nullptr) return;
    tessera_plugin_instance* instance = std::exchange(instance_, nullptr);
    Timed("shutdown", [&] {
      descriptor_.tessera_plugin_on_shutdown(instance);
      return TESSERA_OK;
    });
    shut_down_.store(true);
  }

  // One typed method per call of abi_calls.h, named and typed as the Plugin method that serves
  // it (plugin.h): Inventory(v1::Inventory* out), Launch(const v1::LaunchTask&), ...,
  // Provision(const v1::ProvisionRequest&, v1::ProvisionResult* out). Each serializes the
  // request, calls the plugin and parses what it wrote into *out (out may be NULL; the reply is
  // parsed all the same). PollEvents also records the events it returns, after any emitted
  // earlier.
#define TESSERA_FAKE_HOST_REPLY(name, Method, opcode, kind, need, Reply)                      \
  PluginStatus Method(v1::Reply* out) {                                                       \
    std::string bytes;                                                                        \
    PluginStatus status = CallWithReply(#name, descriptor_.tessera_plugin_on_##name, &bytes); \
    return status.ok() ? ParseReply(#name, bytes, out) : status;                              \
  }
#define TESSERA_FAKE_HOST_REQUEST(name, Method, opcode, kind, need, Request) \
  PluginStatus Method(const v1::Request& request) {                          \
    return CallWithRequest(#name, descriptor_.tessera_plugin_on_##name,      \
                           request.SerializeAsString());                     \
  }
#define TESSERA_FAKE_HOST_REQUEST_REPLY(name, Method, opcode, kind, need, Request, Reply)      \
  PluginStatus Method(const v1::Request& request, v1::Reply* out) {                            \
    std::string bytes;                                                                         \
    PluginStatus status = CallWithRequestAndReply(#name, descriptor_.tessera_plugin_on_##name, \
                                                  request.SerializeAsString(), &bytes);        \
    return status.ok() ? ParseReply(#name, bytes, out) : status;                               \
  }
  TESSERA_PLUGIN_CALLS(TESSERA_FAKE_HOST_REPLY, TESSERA_FAKE_HOST_REQUEST,
                       TESSERA_FAKE_HOST_REQUEST_REPLY)
#undef TESSERA_FAKE_HOST_REQUEST_REPLY
#undef TESSERA_FAKE_HOST_REQUEST
#undef TESSERA_FAKE_HOST_REPLY

  // Sends `bytes` as they are (say, malformed on purpose) to a call that takes a request. A
  // reply (Provision's) is discarded unparsed.
  PluginStatus SendRequestBytes(RequestCall call, std::string_view bytes) {
    std::string ignored;
    switch (call) {
#define TESSERA_FAKE_HOST_NO_REQUEST(...)
#define TESSERA_FAKE_HOST_SEND_REQUEST(name, Method, ...) \
  case RequestCall::k##Method:                            \
    return CallWithRequest(#name, descriptor_.tessera_plugin_on_##name, bytes);
#define TESSERA_FAKE_HOST_SEND_REQUEST_REPLY(name, Method, ...) \
  case RequestCall::k##Method:                                  \
    return CallWithRequestAndReply(#name, descriptor_.tessera_plugin_on_##name, bytes, &ignored);
      TESSERA_PLUGIN_CALLS(TESSERA_FAKE_HOST_NO_REQUEST, TESSERA_FAKE_HOST_SEND_REQUEST,
                           TESSERA_FAKE_HOST_SEND_REQUEST_REPLY)
#undef TESSERA_FAKE_HOST_SEND_REQUEST_REPLY
#undef TESSERA_FAKE_HOST_SEND_REQUEST
#undef TESSERA_FAKE_HOST_NO_REQUEST
    }
    return PluginStatus::Error(
        TESSERA_INVALID_ARGUMENT,
        "send_request_bytes: unknown call " + std::to_string(static_cast<int>(call)));
  }

  // The virtual clock the plugin reads.
  int64_t NowUs() const { return now_us_.load(); }
  void SetNowUs(int64_t now_us) { now_us_.store(now_us); }
  void AdvanceUs(int64_t delta_us) { now_us_.fetch_add(delta_us); }

  std::vector<LogEntry> logs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return logs_;
  }
  // Every event received, emitted or polled, in arrival order.
  std::vector<v1::BackendEvent> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  // ABI rules the plugin broke on the host side (malformed event bytes, a callback after
  // shutdown, an unknown log level), one line each.
  std::vector<std::string> violations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return violations_;
  }
  void ClearRecords() {
    std::lock_guard<std::mutex> lock(mu_);
    logs_.clear();
    events_.clear();
    violations_.clear();
  }

  // Waits up to `timeout` (wall time) for a recorded event, old or new, that `match` accepts,
  // and returns a copy of the first; nullopt on timeout. Does not poll the plugin.
  std::optional<v1::BackendEvent> WaitForEvent(
      const std::function<bool(const v1::BackendEvent&)>& match,
      std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<v1::BackendEvent> found;
    event_arrived_.wait_for(lock, timeout, [&] {
      for (const v1::BackendEvent& event : events_) {
        if (match(event)) {
          found = event;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  std::optional<v1::BackendEvent> WaitForEvent(v1::BackendEvent::Kind kind, const v1::TaskRef& ref,
                                               std::chrono::milliseconds timeout) const {
    return WaitForEvent(
        [&](const v1::BackendEvent& e) { return e.kind() == kind && SameTask(e.ref(), ref); },
        timeout);
  }

  std::map<std::string, CallStats> call_stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  // Set before making calls; not while calls run.
  void SetCallObserver(CallObserver observer) { observer_ = std::move(observer); }

  static bool SameTask(const v1::TaskRef& a, const v1::TaskRef& b) {
    return a.job() == b.job() && a.attempt() == b.attempt() && a.task() == b.task();
  }

 private:
  // A tessera_sink that keeps what the callee writes. Not movable: the sink points to it.
  struct Sink {
    Sink() : sink{&Sink::Write, this} {}
    Sink(const Sink&) = delete;
    Sink& operator=(const Sink&) = delete;
    static void Write(tessera_sink* s, const uint8_t* data, size_t size) {
      auto* self = static_cast<Sink*>(s->context);
      ++self->writes;
      if (size == 0) {
        self->bytes.clear();
      } else {
        self->bytes.assign(reinterpret_cast<const char*>(data), size);
      }
    }
    tessera_sink sink;
    std::string bytes;
    int writes = 0;
  };

  FakeHost(const tessera_plugin_descriptor* d, std::shared_ptr<const void> library)
      : library_(std::move(library)) {
    std::memcpy(&descriptor_, d, std::min<size_t>(d->struct_size, sizeof(descriptor_)));
    host_api_.struct_size = sizeof(tessera_host_api);
    host_api_.context = this;
    host_api_.tessera_host_log = &FakeHost::HostLog;
    host_api_.tessera_host_emit_event = &FakeHost::HostEmitEvent;
    host_api_.tessera_host_now_us = &FakeHost::HostNowUs;
    host_api_.abi_minor = TESSERA_PLUGIN_ABI_MINOR;
  }

  static PluginStatus Make(const tessera_plugin_descriptor* d, std::shared_ptr<const void> library,
                           std::unique_ptr<FakeHost>* out) {
    if (PluginStatus status = CheckDescriptor(d); !status.ok()) return status;
    out->reset(new FakeHost(d, std::move(library)));
    return PluginStatus::Ok();
  }

  template <typename Call>
  tessera_status Timed(const char* name, Call&& call) {
    const uint64_t id = next_call_id_.fetch_add(1);
    if (observer_) observer_(name, id, false, 0);
    const auto start = std::chrono::steady_clock::now();
    const tessera_status code = call();
    const int64_t elapsed_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - start)
                                   .count();
    {
      std::lock_guard<std::mutex> lock(mu_);
      CallStats& stats = stats_[name];
      ++stats.count;
      stats.total_us += elapsed_us;
      stats.max_us = std::max(stats.max_us, elapsed_us);
    }
    if (observer_) observer_(name, id, true, elapsed_us);
    return code;
  }

  PluginStatus Ready(const char* name, bool provided) const {
    if (!provided) {
      return PluginStatus::Error(TESSERA_FAILED_PRECONDITION,
                                 std::string(name) + ": the plugin does not provide this call");
    }
    if (instance_ == nullptr) {
      return PluginStatus::Error(TESSERA_FAILED_PRECONDITION,
                                 std::string(name) + ": the plugin is not initialized");
    }
    return PluginStatus::Ok();
  }

  static PluginStatus MalformedReply(const char* name) {
    return PluginStatus::Error(TESSERA_INTERNAL,
                               std::string(name) + ": the plugin's reply does not parse");
  }

  // The plugin's status and message, or INTERNAL for a broken rule of the ABI.
  static PluginStatus Finish(const char* name, tessera_status code, const Sink& error,
                             const Sink* out = nullptr) {
    if (error.writes > 1 || (out != nullptr && out->writes > 1)) {
      return PluginStatus::Error(TESSERA_INTERNAL,
                                 std::string(name) + ": the plugin wrote a sink more than once");
    }
    if (code < TESSERA_OK || code > TESSERA_INTERNAL) {
      return PluginStatus::Error(TESSERA_INTERNAL, std::string(name) +
                                                       ": the plugin returned unknown status " +
                                                       std::to_string(code) + ": " + error.bytes);
    }
    if (code == TESSERA_OK) return PluginStatus::Ok();
    return PluginStatus::Error(
        code, error.bytes.empty() ? std::string(name) + ": failed with no message" : error.bytes);
  }

  // The three shapes of call (abi_calls.h): each checks the plugin has the function and an
  // instance, times the call, and returns the plugin's status with the bytes it wrote.
  using ReplyFn = tessera_status (*)(tessera_plugin_instance*, tessera_sink*, tessera_sink*);
  using RequestFn = tessera_status (*)(tessera_plugin_instance*, tessera_bytes, tessera_sink*);
  using RequestReplyFn = tessera_status (*)(tessera_plugin_instance*, tessera_bytes, tessera_sink*,
                                            tessera_sink*);

  PluginStatus CallWithReply(const char* name, ReplyFn fn, std::string* reply_bytes) {
    if (PluginStatus ready = Ready(name, fn != nullptr); !ready.ok()) return ready;
    Sink reply;
    Sink error;
    const tessera_status code =
        Timed(name, [&] { return fn(instance_, &reply.sink, &error.sink); });
    PluginStatus status = Finish(name, code, error, &reply);
    if (status.ok()) *reply_bytes = std::move(reply.bytes);
    return status;
  }

  PluginStatus CallWithRequest(const char* name, RequestFn fn, std::string_view bytes) {
    if (PluginStatus ready = Ready(name, fn != nullptr); !ready.ok()) return ready;
    Sink error;
    const tessera_bytes request{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
    const tessera_status code = Timed(name, [&] { return fn(instance_, request, &error.sink); });
    return Finish(name, code, error);
  }

  PluginStatus CallWithRequestAndReply(const char* name, RequestReplyFn fn, std::string_view bytes,
                                       std::string* reply_bytes) {
    if (PluginStatus ready = Ready(name, fn != nullptr); !ready.ok()) return ready;
    Sink reply;
    Sink error;
    const tessera_bytes request{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
    const tessera_status code =
        Timed(name, [&] { return fn(instance_, request, &reply.sink, &error.sink); });
    PluginStatus status = Finish(name, code, error, &reply);
    if (status.ok()) *reply_bytes = std::move(reply.bytes);
    return status;
  }

  // Parses what call `name` wrote as a Message into *out (when out is not NULL), recording it
  // first if it is a kind of reply FakeHost records.
  template <typename Message>
  PluginStatus ParseReply(const char* name, const std::string& bytes, Message* out) {
    Message message;
    if (!message.ParseFromString(bytes)) return MalformedReply(name);
    Record(message);
    if (out != nullptr) *out = std::move(message);
    return PluginStatus::Ok();
  }

  // What a reply adds to the records: the events PollEvents returns; nothing for the others.
  void Record(const google::protobuf::MessageLite&) {}
  void Record(const v1::BackendEvents& events) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const v1::BackendEvent& event : events.events()) events_.push_back(event);
    }
    if (events.events_size() > 0) event_arrived_.notify_all();
  }

  void Violation(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    violations_.push_back(std::move(what));
  }
  void CheckAlive(const char* callback) {
    if (shut_down_.load()) Violation(std::string(callback) + " called after on_shutdown returned");
  }

  static void HostLog(void* context, int32_t level, const char* message, size_t size) {
    auto* self = static_cast<FakeHost*>(context);
    self->CheckAlive("tessera_host_log");
    if (level < TESSERA_LOG_DEBUG || level > TESSERA_LOG_ERROR) {
      self->Violation("tessera_host_log: unknown level " + std::to_string(level));
    }
    std::lock_guard<std::mutex> lock(self->mu_);
    self->logs_.push_back({level, size == 0 ? std::string() : std::string(message, size)});
  }

  static void HostEmitEvent(void* context, const uint8_t* data, size_t size) {
    auto* self = static_cast<FakeHost*>(context);
    self->CheckAlive("tessera_host_emit_event");
    v1::BackendEvent event;
    if (!event.ParseFromArray(data, static_cast<int>(size))) {
      self->Violation("tessera_host_emit_event: the event bytes do not parse");
      return;
    }
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->events_.push_back(std::move(event));
    }
    self->event_arrived_.notify_all();
  }

  static int64_t HostNowUs(void* context) {
    auto* self = static_cast<FakeHost*>(context);
    self->CheckAlive("tessera_host_now_us");
    return self->now_us_.load();
  }

  // Declared first so it is released last, after the instance is shut down: the shared object,
  // or the linked plugin.
  std::shared_ptr<const void> library_;
  const LinkedPlugin* linked_ = nullptr;  // Set for Linked: Init goes through it.
  tessera_plugin_descriptor descriptor_{};
  tessera_host_api host_api_{};
  tessera_plugin_instance* instance_ = nullptr;
  std::atomic<bool> shut_down_{false};
  std::atomic<int64_t> now_us_{kDefaultStartUs};
  std::atomic<uint64_t> next_call_id_{1};
  CallObserver observer_;

  mutable std::mutex mu_;
  mutable std::condition_variable event_arrived_;
  std::vector<LogEntry> logs_;
  std::vector<v1::BackendEvent> events_;
  std::vector<std::string> violations_;
  std::map<std::string, CallStats> stats_;
};

}  // namespace tessera::plugin
