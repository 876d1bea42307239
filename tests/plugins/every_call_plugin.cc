// A plugin of every kind whose every call (each row of tessera/plugin/abi_calls.h) answers that
// its own method ran: TESSERA_NOT_FOUND with "<Method> ran", and for a call that reads a request,
// "<Method> ran on <n> request bytes". tests/unit/plugins/every_call_test.cc drives each row
// through the scheduler's plugin host, in process and isolated, and checks that it reached the
// method of its row with its bytes: a new row is covered without editing either file.
#include <string>

#include "tessera/plugin/abi_calls.h"
#include "tessera/plugin/plugin.h"

namespace {

using tessera::plugin::Host;
using tessera::plugin::Plugin;
using tessera::plugin::PluginStatus;
namespace v1 = tessera::v1;

PluginStatus Ran(const char* method) {
  return PluginStatus::Error(TESSERA_NOT_FOUND, std::string(method) + " ran");
}

PluginStatus RanOn(const char* method, const google::protobuf::MessageLite& request) {
  return PluginStatus::Error(
      TESSERA_NOT_FOUND,
      std::string(method) + " ran on " + std::to_string(request.ByteSizeLong()) + " request bytes");
}

class EveryCall : public Plugin {
 public:
  explicit EveryCall(Host host) : Plugin(host) {}

#define EVERY_CALL_REPLY(name, Method, opcode, kind, need, Reply) \
  PluginStatus Method(v1::Reply*) override { return Ran(#Method); }
#define EVERY_CALL_REQUEST(name, Method, opcode, kind, need, Request) \
  PluginStatus Method(const v1::Request& request) override { return RanOn(#Method, request); }
#define EVERY_CALL_REQUEST_REPLY(name, Method, opcode, kind, need, Request, Reply) \
  PluginStatus Method(const v1::Request& request, v1::Reply*) override {           \
    return RanOn(#Method, request);                                                \
  }
  TESSERA_PLUGIN_CALLS(EVERY_CALL_REPLY, EVERY_CALL_REQUEST, EVERY_CALL_REQUEST_REPLY)
#undef EVERY_CALL_REQUEST_REPLY
#undef EVERY_CALL_REQUEST
#undef EVERY_CALL_REPLY
};

}  // namespace

TESSERA_PLUGIN(EveryCall, "every-call", "0.1.0",
               TESSERA_PLUGIN_KIND_EXECUTOR | TESSERA_PLUGIN_KIND_PARTITIONER |
                   TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER)
