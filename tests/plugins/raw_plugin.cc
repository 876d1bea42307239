// Plugins written against the bare C ABI, to test the host's handshake and its handling of bad
// payloads. RAW_PLUGIN_MODE selects the variant:
//   1  built for ABI major 2: the host must refuse it.
//   2  built for a newer minor version with a larger descriptor: the host must accept it.
//   3  a working executor whose on_poll_events writes bytes that are not a BackendEvents.
#include <cstring>
#include <string>

#include "tessera/plugin/abi.h"
#include "tessera/v1/plugin.pb.h"

namespace {

struct Instance {
  const tessera_host_api* host;
};

tessera_status Init(const tessera_host_api* host, tessera_bytes, tessera_plugin_instance** out,
                    tessera_sink*) {
  *out = reinterpret_cast<tessera_plugin_instance*>(new Instance{host});
  return TESSERA_OK;
}

void Shutdown(tessera_plugin_instance* instance) { delete reinterpret_cast<Instance*>(instance); }

void WriteMessage(tessera_sink* sink, const google::protobuf::Message& m) {
  const std::string bytes = m.SerializeAsString();
  sink->write(sink, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

tessera_status Inventory(tessera_plugin_instance*, tessera_sink* out, tessera_sink*) {
  tessera::v1::Inventory inventory;
  tessera::v1::NodeSpec* node = inventory.add_nodes();
  node->set_name("raw-0");
  node->set_cpu_milli(8000);
  node->set_memory_mib(16384);
  WriteMessage(out, inventory);
  return TESSERA_OK;
}

tessera_status Launch(tessera_plugin_instance*, tessera_bytes, tessera_sink*) { return TESSERA_OK; }
tessera_status Stop(tessera_plugin_instance*, tessera_bytes, tessera_sink*) { return TESSERA_OK; }

tessera_status Poll(tessera_plugin_instance*, tessera_sink* out, tessera_sink*) {
#if RAW_PLUGIN_MODE == 3
  // Field 1 with wire type 7, which does not exist: no message parses from it.
  const uint8_t garbage[] = {0x0f, 0xff, 0xff};
  out->write(out, garbage, sizeof(garbage));
#else
  WriteMessage(out, tessera::v1::BackendEvents());
#endif
  return TESSERA_OK;
}

tessera_status Reconcile(tessera_plugin_instance*, tessera_sink* out, tessera_sink*) {
  WriteMessage(out, tessera::v1::LiveTasks());
  return TESSERA_OK;
}

// A descriptor as a newer minor version would have it: the same fields, then more.
struct NewerDescriptor {
  tessera_plugin_descriptor base;
  void* added_in_a_later_minor;
};

NewerDescriptor Make() {
  NewerDescriptor d{};
  d.base.abi_major = TESSERA_PLUGIN_ABI_MAJOR;
  d.base.abi_minor = TESSERA_PLUGIN_ABI_MINOR;
  d.base.struct_size = sizeof(tessera_plugin_descriptor);
#if RAW_PLUGIN_MODE == 1
  d.base.abi_major = TESSERA_PLUGIN_ABI_MAJOR + 1;
#elif RAW_PLUGIN_MODE == 2
  d.base.abi_minor = TESSERA_PLUGIN_ABI_MINOR + 1;
  d.base.struct_size = sizeof(NewerDescriptor);
#endif
  d.base.kinds = TESSERA_PLUGIN_KIND_EXECUTOR;
  d.base.name = "raw";
  d.base.version = "0.0.1";
  d.base.tessera_plugin_on_init = Init;
  d.base.tessera_plugin_on_shutdown = Shutdown;
  d.base.tessera_plugin_on_inventory = Inventory;
  d.base.tessera_plugin_on_launch = Launch;
  d.base.tessera_plugin_on_stop = Stop;
  d.base.tessera_plugin_on_poll_events = Poll;
  d.base.tessera_plugin_on_reconcile = Reconcile;
  return d;
}

const NewerDescriptor kDescriptor = Make();

}  // namespace

extern "C" __attribute__((visibility("default"))) const tessera_plugin_descriptor*
tessera_plugin_entry(void) {
  return &kDescriptor.base;
}
