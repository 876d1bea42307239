#include "plugins/remote/forwarding_descriptor.h"

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

template <Function kFunction>
tessera_status WithOut(tessera_plugin_instance* instance, tessera_sink* out, tessera_sink* error) {
  return Finish(ProcessOf(instance)->Call(kFunction, ""), out, error);
}

template <Function kFunction>
tessera_status WithRequest(tessera_plugin_instance* instance, tessera_bytes request,
                           tessera_sink* error) {
  return Finish(ProcessOf(instance)->Call(kFunction, ToString(request)), nullptr, error);
}

tessera_status Provision(tessera_plugin_instance* instance, tessera_bytes request,
                         tessera_sink* out, tessera_sink* error) {
  return Finish(ProcessOf(instance)->Call(Function::kProvision, ToString(request)), out, error);
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
  if (has(Function::kInventory)) d.tessera_plugin_on_inventory = WithOut<Function::kInventory>;
  if (has(Function::kLaunch)) d.tessera_plugin_on_launch = WithRequest<Function::kLaunch>;
  if (has(Function::kStop)) d.tessera_plugin_on_stop = WithRequest<Function::kStop>;
  if (has(Function::kResize)) d.tessera_plugin_on_resize = WithRequest<Function::kResize>;
  if (has(Function::kPollEvents)) {
    d.tessera_plugin_on_poll_events = WithOut<Function::kPollEvents>;
  }
  if (has(Function::kReconcile)) d.tessera_plugin_on_reconcile = WithOut<Function::kReconcile>;
  if (has(Function::kTelemetry)) d.tessera_plugin_on_telemetry = WithOut<Function::kTelemetry>;
  if (has(Function::kApplyMigLayout)) {
    d.tessera_plugin_on_apply_mig_layout = WithRequest<Function::kApplyMigLayout>;
  }
  if (has(Function::kProvision)) d.tessera_plugin_on_provision = Provision;
  if (has(Function::kDeprovision)) {
    d.tessera_plugin_on_deprovision = WithRequest<Function::kDeprovision>;
  }
  return d;
}

tessera_plugin_instance* ForwardingInstance(PluginHostProcess* process) {
  return reinterpret_cast<tessera_plugin_instance*>(process);
}

}  // namespace tessera
