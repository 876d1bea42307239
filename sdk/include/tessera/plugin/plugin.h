// The plugin SDK's C++ layer: write a Tessera backend as an ordinary C++ class.
//
// Derive from tessera::plugin::Plugin, override the calls your backend supports (each takes and
// returns tessera.v1 messages and a PluginStatus, never an exception), and register the class
// with one macro in one .cc file:
//
//   class MyBackend : public tessera::plugin::Plugin {
//    public:
//     explicit MyBackend(tessera::plugin::Host host) : Plugin(host) {}
//     tessera::plugin::PluginStatus Init(const std::string& config) override { ... }
//     tessera::plugin::PluginStatus Inventory(tessera::v1::Inventory* out) override { ... }
//     ...
//   };
//   TESSERA_PLUGIN(MyBackend, "my-backend", "1.0.0", TESSERA_PLUGIN_KIND_EXECUTOR)
//
// The macro defines the exported entry symbol and a descriptor whose functions decode the
// request, call your method, encode the answer, and turn any exception that escapes into
// TESSERA_INTERNAL, so nothing C++ crosses the ABI (abi.h). Calls a plugin does not override
// answer TESSERA_FAILED_PRECONDITION ("not supported"); the descriptor leaves the function NULL
// for kinds the plugin does not declare.
//
// Host gives the plugin the host's log, event and clock callbacks, and the host's ABI minor.
// Under a host of ABI 1.1 the callbacks are usable from Start on: start watcher threads there,
// not in Init. Under a host of 1.0 (host().abi_minor() == 0) Start is never called, and a
// plugin that must run there starts them at the end of Init.
//
// Failing one task: a PluginStatus other than Ok from a call after Init fails that request, and
// a few in a row (the host's max_consecutive_errors) mark the whole plugin unhealthy (its nodes
// cordoned, its placed jobs requeued; abi.h has the rule). When
// one launch cannot run (no such node or GPU, a command that will not start), emit a
// LAUNCH_REJECTED event for its TaskRef, saying why and whether another attempt may succeed,
// and return Ok:
//
//   v1::BackendEvent rejected;
//   rejected.set_kind(v1::BackendEvent::LAUNCH_REJECTED);
//   *rejected.mutable_ref() = request.ref();
//   rejected.set_retryable(false);
//   rejected.set_message("no GPU 9 on node a-0");
//   rejected.set_time_us(host().NowUs());
//   host().Emit(rejected);
//   return PluginStatus::Ok();
//
// A task gone without an exit status (evicted) is a TASK_LOST event. Return an error only when
// the plugin itself is broken and should be restarted.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "tessera/plugin/abi.h"
#include "tessera/plugin/abi_calls.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera::plugin {

// The name of a status code of abi.h without its prefix ("INVALID_ARGUMENT"), or "status <n>" for
// a code abi.h does not define.
inline std::string StatusName(tessera_status code) {
  switch (code) {
    case TESSERA_OK:
      return "OK";
    case TESSERA_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case TESSERA_NOT_FOUND:
      return "NOT_FOUND";
    case TESSERA_ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case TESSERA_FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case TESSERA_RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case TESSERA_UNAVAILABLE:
      return "UNAVAILABLE";
    case TESSERA_PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case TESSERA_INTERNAL:
      return "INTERNAL";
  }
  return "status " + std::to_string(code);
}

// A status code from abi.h and a message.
struct PluginStatus {
  tessera_status code = TESSERA_OK;
  std::string message;

  bool ok() const { return code == TESSERA_OK; }
  static PluginStatus Ok() { return {}; }
  static PluginStatus Error(tessera_status code, std::string message) {
    return {code, std::move(message)};
  }
};

// The host's services, as the plugin sees them. Cheap to copy; valid until Shutdown.
class Host {
 public:
  Host() = default;
  explicit Host(const tessera_host_api* api) : api_(api) {}

  // The host's ABI minor: 0 for a host of 1.0, whose tessera_host_api ends before the field.
  uint32_t abi_minor() const {
    const size_t needed = offsetof(tessera_host_api, abi_minor) + sizeof(uint32_t);
    return api_ && api_->struct_size >= needed ? api_->abi_minor : 0;
  }

  void Log(int32_t level, std::string_view message) const {
    if (api_ && api_->tessera_host_log) {
      api_->tessera_host_log(api_->context, level, message.data(), message.size());
    }
  }
  void Emit(const v1::BackendEvent& event) const {
    if (!api_ || !api_->tessera_host_emit_event) return;
    const std::string bytes = event.SerializeAsString();
    api_->tessera_host_emit_event(api_->context, reinterpret_cast<const uint8_t*>(bytes.data()),
                                  bytes.size());
  }
  int64_t NowUs() const {
    return api_ && api_->tessera_host_now_us ? api_->tessera_host_now_us(api_->context) : 0;
  }

 private:
  const tessera_host_api* api_ = nullptr;
};

// A backend. Each call of abi.h after on_init is one virtual method here, named in the call's row
// of abi_calls.h; the descriptor's trampolines call it.
class Plugin {
 public:
  explicit Plugin(Host host) : host_(host) {}
  virtual ~Plugin() = default;

  // `config` is the bytes the operator configured for this plugin, in the plugin's own format.
  virtual PluginStatus Init(const std::string& /*config*/) { return PluginStatus::Ok(); }
  // ABI 1.1: called once after Init (for an executor, after the first Inventory and
  // Reconcile) when the host callbacks are usable; start watching the backend here.
  // request.epoch() is the host's fencing epoch (tessera/plugin/epoch_fence.h).
  virtual PluginStatus Start(const v1::StartRequest& /*request*/) { return PluginStatus::Ok(); }
  // Called once, last. Stop background threads here; tasks keep running.
  virtual void Shutdown() {}

  // Executor. An error from any of these says the plugin is failing (a few in a row mark it
  // unhealthy); a task that cannot run is reported with a LAUNCH_REJECTED event and Ok (see the
  // top of this file).
  virtual PluginStatus Inventory(v1::Inventory* /*out*/) { return NotSupported("inventory"); }
  virtual PluginStatus Launch(const v1::LaunchTask& /*request*/) { return NotSupported("launch"); }
  // request.grace_ms() is the notice before a kill; 0 means kill now, with no notice.
  virtual PluginStatus Stop(const v1::StopTask& /*request*/) { return NotSupported("stop"); }
  virtual PluginStatus Resize(const v1::ResizeJob& /*request*/) { return PluginStatus::Ok(); }
  virtual PluginStatus PollEvents(v1::BackendEvents* /*out*/) { return PluginStatus::Ok(); }
  virtual PluginStatus Reconcile(v1::LiveTasks* /*out*/) { return NotSupported("reconcile"); }
  virtual PluginStatus Telemetry(v1::TelemetryBatch* /*out*/) { return PluginStatus::Ok(); }
  // Partitioner. ABI 1.1 hosts call ApplyPartitionLayout; ABI 1.0 hosts ApplyMigLayout.
  virtual PluginStatus ApplyMigLayout(const v1::MigLayoutRequest& /*request*/) {
    return NotSupported("apply_mig_layout");
  }
  // Shapes one GPU and says what it has now. A layout that fails for this GPU answers Ok with
  // result->error set and result->applied what the GPU has (v1::PartitionLayoutResult). By
  // default a MIG layout goes to ApplyMigLayout (the result then names no devices) and any other
  // form is refused for this GPU, so a partitioner written for ABI 1.0 keeps working.
  virtual PluginStatus ApplyPartitionLayout(const v1::PartitionLayoutRequest& request,
                                            v1::PartitionLayoutResult* result) {
    if (request.layout().sharing() != v1::GPU_SHARING_MIG) {
      result->set_error("this partitioner shapes MIG layouts only");
      return PluginStatus::Ok();
    }
    v1::MigLayoutRequest mig;
    mig.set_node(request.node());
    mig.set_gpu(request.gpu());
    *mig.mutable_layout() = request.layout().mig_instances();
    mig.set_epoch(request.epoch());
    PluginStatus status = ApplyMigLayout(mig);
    if (status.ok()) *result->mutable_applied() = request.layout();
    return status;
  }
  // Capacity provider.
  virtual PluginStatus Provision(const v1::ProvisionRequest& /*request*/,
                                 v1::ProvisionResult* /*out*/) {
    return NotSupported("provision");
  }
  virtual PluginStatus Deprovision(const v1::DeprovisionRequest& /*request*/) {
    return NotSupported("deprovision");
  }
  // ABI 1.1: the kinds of node Provision can add (none by default).
  virtual PluginStatus NodeGroups(v1::NodeGroups* /*out*/) { return PluginStatus::Ok(); }

 protected:
  const Host& host() const { return host_; }
  static PluginStatus NotSupported(std::string_view call) {
    return PluginStatus::Error(TESSERA_FAILED_PRECONDITION,
                               std::string(call) + ": not supported by this plugin");
  }

 private:
  Host host_;
};

namespace detail {

// What the ABI's opaque instance points to.
struct Instance {
  // A copy of the host's struct, as much of it as the host declared (struct_size): fields of a
  // later minor than the host's stay zero.
  tessera_host_api host{};
  std::unique_ptr<Plugin> plugin;
};

inline void CopyHostApi(const tessera_host_api& from, tessera_host_api* to) {
  *to = tessera_host_api{};
  std::memcpy(to, &from, std::min<size_t>(from.struct_size, sizeof(tessera_host_api)));
}

inline Plugin& Of(tessera_plugin_instance* instance) {
  return *reinterpret_cast<Instance*>(instance)->plugin;
}

inline void Write(tessera_sink* sink, std::string_view bytes) {
  if (sink && sink->write) {
    sink->write(sink, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
}

inline tessera_status Finish(const PluginStatus& status, tessera_sink* error) {
  if (!status.ok()) Write(error, status.message);
  return status.code;
}

// Runs `body`, turning an escaping exception into TESSERA_INTERNAL.
template <typename Body>
tessera_status Guard(tessera_sink* error, Body&& body) {
  try {
    return Finish(body(), error);
  } catch (const std::exception& e) {
    return Finish(PluginStatus::Error(TESSERA_INTERNAL, std::string("exception: ") + e.what()),
                  error);
  } catch (...) {
    return Finish(PluginStatus::Error(TESSERA_INTERNAL, "unknown exception"), error);
  }
}

template <typename Request, typename Call>
tessera_status WithRequest(tessera_bytes bytes, tessera_sink* error, const char* what,
                           Call&& call) {
  return Guard(error, [&]() -> PluginStatus {
    Request request;
    if (!request.ParseFromArray(bytes.data, static_cast<int>(bytes.size))) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                 std::string(what) + ": malformed request bytes");
    }
    return call(request);
  });
}

template <typename Reply, typename Call>
tessera_status WithReply(tessera_sink* out, tessera_sink* error, Call&& call) {
  return Guard(error, [&]() -> PluginStatus {
    Reply reply;
    PluginStatus status = call(&reply);
    if (status.ok()) Write(out, reply.SerializeAsString());
    return status;
  });
}

template <typename Request, typename Reply, typename Call>
tessera_status WithRequestAndReply(tessera_bytes bytes, tessera_sink* out, tessera_sink* error,
                                   const char* what, Call&& call) {
  return WithRequest<Request>(bytes, error, what, [&](const Request& request) {
    Reply reply;
    PluginStatus status = call(request, &reply);
    if (status.ok()) Write(out, reply.SerializeAsString());
    return status;
  });
}

// The on_init of every C++ plugin: makes the instance with `make(Host)` and runs its Init.
template <typename Make>
tessera_status InitInstance(const tessera_host_api* host, tessera_bytes config,
                            tessera_plugin_instance** out, tessera_sink* error, Make&& make) {
  return Guard(error, [&]() -> PluginStatus {
    if (host == nullptr || out == nullptr) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "on_init: null host or out");
    }
    auto instance = std::make_unique<Instance>();
    CopyHostApi(*host, &instance->host);
    instance->plugin = make(Host(&instance->host));
    if (instance->plugin == nullptr) {
      return PluginStatus::Error(TESSERA_INTERNAL, "on_init: the plugin factory made no plugin");
    }
    PluginStatus status = instance->plugin->Init(
        std::string(reinterpret_cast<const char*>(config.data), config.size));
    if (!status.ok()) return status;
    *out = reinterpret_cast<tessera_plugin_instance*>(instance.release());
    return PluginStatus::Ok();
  });
}

// A descriptor for `kinds` with every function but on_init: on_shutdown, and one trampoline per
// call of abi_calls.h of a declared kind, which decodes the request, calls the Plugin method and
// encodes the reply. The name and version are left for the caller to set.
inline tessera_plugin_descriptor DescribeCalls(uint32_t kinds) {
  tessera_plugin_descriptor d{};
  d.abi_major = TESSERA_PLUGIN_ABI_MAJOR;
  d.abi_minor = TESSERA_PLUGIN_ABI_MINOR;
  d.struct_size = sizeof(tessera_plugin_descriptor);
  d.kinds = kinds;
  d.tessera_plugin_on_shutdown = [](tessera_plugin_instance* instance) {
    if (instance == nullptr) return;
    std::unique_ptr<Instance> owned(reinterpret_cast<Instance*>(instance));
    try {
      owned->plugin->Shutdown();
    } catch (...) {
    }
  };
#define TESSERA_SDK_REPLY(name, Method, opcode, kind, need, Reply)                            \
  if (kinds & TESSERA_PLUGIN_KIND_##kind) {                                                   \
    d.tessera_plugin_on_##name = [](tessera_plugin_instance* i, tessera_sink* out,            \
                                    tessera_sink* error) {                                    \
      return WithReply<v1::Reply>(out, error, [&](v1::Reply* r) { return Of(i).Method(r); }); \
    };                                                                                        \
  }
#define TESSERA_SDK_REQUEST(name, Method, opcode, kind, need, Request)                        \
  if (kinds & TESSERA_PLUGIN_KIND_##kind) {                                                   \
    d.tessera_plugin_on_##name = [](tessera_plugin_instance* i, tessera_bytes request,        \
                                    tessera_sink* error) {                                    \
      return WithRequest<v1::Request>(request, error, #name,                                  \
                                      [&](const v1::Request& r) { return Of(i).Method(r); }); \
    };                                                                                        \
  }
#define TESSERA_SDK_REQUEST_REPLY(name, Method, opcode, kind, need, Request, Reply)        \
  if (kinds & TESSERA_PLUGIN_KIND_##kind) {                                                \
    d.tessera_plugin_on_##name = [](tessera_plugin_instance* i, tessera_bytes request,     \
                                    tessera_sink* out, tessera_sink* error) {              \
      return WithRequestAndReply<v1::Request, v1::Reply>(                                  \
          request, out, error, #name,                                                      \
          [&](const v1::Request& r, v1::Reply* reply) { return Of(i).Method(r, reply); }); \
    };                                                                                     \
  }
  TESSERA_PLUGIN_CALLS(TESSERA_SDK_REPLY, TESSERA_SDK_REQUEST, TESSERA_SDK_REQUEST_REPLY)
#undef TESSERA_SDK_REQUEST_REPLY
#undef TESSERA_SDK_REQUEST
#undef TESSERA_SDK_REPLY
  return d;
}

// The descriptor of the plugin `Make` makes; one per plugin library.
template <std::unique_ptr<Plugin> (*Make)(Host)>
const tessera_plugin_descriptor* DescribeMade(const char* name, const char* version,
                                              uint32_t kinds) {
  static const tessera_plugin_descriptor descriptor = [&] {
    tessera_plugin_descriptor d = DescribeCalls(kinds);
    d.name = name;
    d.version = version;
    d.tessera_plugin_on_init = [](const tessera_host_api* host, tessera_bytes config,
                                  tessera_plugin_instance** out, tessera_sink* error) {
      return InitInstance(host, config, out, error, Make);
    };
    return d;
  }();
  return &descriptor;
}

template <typename T>
std::unique_ptr<Plugin> MakeInstanceOf(Host host) {
  return std::make_unique<T>(host);
}

// The descriptor of plugin class T; one per plugin library.
template <typename T>
const tessera_plugin_descriptor* Describe(const char* name, const char* version, uint32_t kinds) {
  return DescribeMade<&MakeInstanceOf<T>>(name, version, kinds);
}

}  // namespace detail
}  // namespace tessera::plugin

// Registers plugin class `Class` (constructible from tessera::plugin::Host) under `name` and
// `version` (string literals) with `kinds` (TESSERA_PLUGIN_KIND_* bits). Use once per library.
#define TESSERA_PLUGIN(Class, name, version, kinds)                                  \
  extern "C" __attribute__((visibility("default"))) const tessera_plugin_descriptor* \
  tessera_plugin_entry(void) {                                                       \
    return ::tessera::plugin::detail::Describe<Class>(name, version, kinds);         \
  }

// The same for a plugin made by `factory`, a function `std::unique_ptr<tessera::plugin::Plugin>
// (tessera::plugin::Host)` with external linkage: for a plugin class that takes more than the
// host (seams its own tests fill in, as a linked plugin; the shared object's factory fills them
// with the real things).
#define TESSERA_PLUGIN_FACTORY(factory, name, version, kinds)                        \
  extern "C" __attribute__((visibility("default"))) const tessera_plugin_descriptor* \
  tessera_plugin_entry(void) {                                                       \
    return ::tessera::plugin::detail::DescribeMade<&factory>(name, version, kinds);  \
  }
