// The executor plugin of the plugin_reply fuzz target: it answers with whatever bytes its
// configuration holds, so the scheduler parses arbitrary replies exactly as it parses a real
// plugin's. The configuration (on_init's bytes, which the target sets to the fuzz input) is cut
// into four replies, each a 2-byte little-endian length and that many bytes (a short input
// leaves the rest empty):
//   on_inventory (tessera.v1.Inventory), on_reconcile (LiveTasks),
//   on_poll_events (BackendEvents), on_telemetry (TelemetryBatch).
// A reply starting with 0xff is refused instead (TESSERA_INTERNAL, the rest as the message).
#include <cstring>
#include <string>

#include "tessera/plugin/abi.h"

namespace {

struct Replies {
  std::string inventory, reconcile, poll, telemetry;
};

std::string TakeReply(tessera_bytes* rest) {
  if (rest->size < 2) {
    rest->size = 0;
    return {};
  }
  size_t n = rest->data[0] | (size_t{rest->data[1]} << 8);
  n = n < rest->size - 2 ? n : rest->size - 2;
  std::string reply(reinterpret_cast<const char*>(rest->data + 2), n);
  rest->data += 2 + n;
  rest->size -= 2 + n;
  return reply;
}

tessera_status Answer(const std::string& reply, tessera_sink* out, tessera_sink* error) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(reply.data());
  if (!reply.empty() && bytes[0] == 0xff) {
    error->write(error, bytes + 1, reply.size() - 1);
    return TESSERA_INTERNAL;
  }
  out->write(out, bytes, reply.size());
  return TESSERA_OK;
}

Replies& Of(tessera_plugin_instance* instance) { return *reinterpret_cast<Replies*>(instance); }

tessera_status Init(const tessera_host_api*, tessera_bytes config, tessera_plugin_instance** out,
                    tessera_sink*) {
  auto* replies = new Replies;
  replies->inventory = TakeReply(&config);
  replies->reconcile = TakeReply(&config);
  replies->poll = TakeReply(&config);
  replies->telemetry = TakeReply(&config);
  *out = reinterpret_cast<tessera_plugin_instance*>(replies);
  return TESSERA_OK;
}

void Shutdown(tessera_plugin_instance* instance) { delete &Of(instance); }

tessera_status Inventory(tessera_plugin_instance* i, tessera_sink* out, tessera_sink* error) {
  return Answer(Of(i).inventory, out, error);
}
tessera_status Reconcile(tessera_plugin_instance* i, tessera_sink* out, tessera_sink* error) {
  return Answer(Of(i).reconcile, out, error);
}
tessera_status Poll(tessera_plugin_instance* i, tessera_sink* out, tessera_sink* error) {
  return Answer(Of(i).poll, out, error);
}
tessera_status Telemetry(tessera_plugin_instance* i, tessera_sink* out, tessera_sink* error) {
  return Answer(Of(i).telemetry, out, error);
}
tessera_status Accept(tessera_plugin_instance*, tessera_bytes, tessera_sink*) { return TESSERA_OK; }

tessera_plugin_descriptor Make() {
  tessera_plugin_descriptor d{};
  d.abi_major = TESSERA_PLUGIN_ABI_MAJOR;
  d.abi_minor = TESSERA_PLUGIN_ABI_MINOR;
  d.struct_size = sizeof(tessera_plugin_descriptor);
  d.kinds = TESSERA_PLUGIN_KIND_EXECUTOR;
  d.name = "fuzz-replies";
  d.version = "0.0.1";
  d.tessera_plugin_on_init = Init;
  d.tessera_plugin_on_shutdown = Shutdown;
  d.tessera_plugin_on_inventory = Inventory;
  d.tessera_plugin_on_launch = Accept;
  d.tessera_plugin_on_stop = Accept;
  d.tessera_plugin_on_resize = Accept;
  d.tessera_plugin_on_poll_events = Poll;
  d.tessera_plugin_on_reconcile = Reconcile;
  d.tessera_plugin_on_telemetry = Telemetry;
  return d;
}

const tessera_plugin_descriptor kDescriptor = Make();

}  // namespace

extern "C" __attribute__((visibility("default"))) const tessera_plugin_descriptor*
tessera_plugin_entry(void) {
  return &kDescriptor;
}
