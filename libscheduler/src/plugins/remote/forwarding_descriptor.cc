#include "plugins/remote/forwarding_descriptor.h"

#include "tessera/plugin/abi_calls.h"

namespace tessera {
namespace {

using plugin_wire::Function;

PluginHostProcess* ProcessOf(tessera_plugin_instance* instance) {
  return reinterpret_cast<PluginHostProcess*>(instance);
}

std::string ToString(tessera_bytes bytes) {
  return bytes.size == 0 ? std::string()
                         : std::string(reinterpret_cast<const char*>(bytes.data), bytes.size);
}

void Write(tessera_sink* sink, const std::string& bytes) {
  if (sink != nullptr)
    sink->write(sink, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

tessera_status Finish(const PluginHostProcess::Reply& reply, tessera_sink* out,
                      tessera_sink* error) {
  if (reply.status == TESSERA_OK && out != nullptr) Write(out, reply.payload);
  if (!reply.error.empty()) Write(error, reply.error);
  return reply.status;
}

// The forwarders, one per shape of call (tessera/plugin/abi_calls.h).
template <Function kFunction>
tessera_status ForwardReply(tessera_plugin_instance* instance, tessera_sink* out,
                            tessera_sink* error) {
  return Finish(ProcessOf(instance)->Call(kFunction, ""), out, error);
}

template <Function kFunction>
tessera_status ForwardRequest(tessera_plugin_instance* instance, tessera_bytes request,
                              tessera_sink* error) {
  return Finish(ProcessOf(instance)->Call(kFunction, ToString(request)), nullptr, error);
}

template <Function kFunction>
tessera_status ForwardRequestReply(tessera_plugin_instance* instance, tessera_bytes request,
                                   tessera_sink* out, tessera_sink* error) {
  return Finish(ProcessOf(instance)->Call(kFunction, ToString(request)), out, error);
}

tessera_status InitNotDirect(const tessera_host_api*, tessera_bytes, tessera_plugin_instance**,
                             tessera_sink* error) {
  Write(error, "an isolated plugin is initialised through PluginLibrary::Init");
  return TESSERA_INTERNAL;
}

void Shutdown(tessera_plugin_instance* instance) {
  ProcessOf(instance)->Call(Function::kShutdown, "");
}

}  // namespace

tessera_plugin_descriptor ForwardingDescriptor(const plugin_wire::DescriptorInfo& info) {
  auto has = [&](Function f) { return (info.functions >> static_cast<int>(f)) & 1u; };
  tessera_plugin_descriptor d{};
  d.abi_major = info.abi_major;
  d.abi_minor = info.abi_minor;
  d.struct_size = info.struct_size;
  d.kinds = info.kinds;
  d.name = info.name.c_str();
  d.version = info.version.c_str();
  if (has(Function::kInit)) d.tessera_plugin_on_init = InitNotDirect;
  if (has(Function::kShutdown)) d.tessera_plugin_on_shutdown = Shutdown;
#define TESSERA_FORWARD(name, Method, Forwarder)                 \
  if (has(Function::k##Method)) {                                \
    d.tessera_plugin_on_##name = Forwarder<Function::k##Method>; \
  }
#define TESSERA_FORWARD_REPLY(name, Method, ...) TESSERA_FORWARD(name, Method, ForwardReply)
#define TESSERA_FORWARD_REQUEST(name, Method, ...) TESSERA_FORWARD(name, Method, ForwardRequest)
#define TESSERA_FORWARD_REQUEST_REPLY(name, Method, ...) \
  TESSERA_FORWARD(name, Method, ForwardRequestReply)
  TESSERA_PLUGIN_CALLS(TESSERA_FORWARD_REPLY, TESSERA_FORWARD_REQUEST,
                       TESSERA_FORWARD_REQUEST_REPLY)
#undef TESSERA_FORWARD_REQUEST_REPLY
#undef TESSERA_FORWARD_REQUEST
#undef TESSERA_FORWARD_REPLY
#undef TESSERA_FORWARD
  return d;
}

tessera_plugin_instance* ForwardingInstance(PluginHostProcess* process) {
  return reinterpret_cast<tessera_plugin_instance*>(process);
}

}  // namespace tessera
