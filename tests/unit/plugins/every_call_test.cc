// Every call of the ABI's table (tessera/plugin/abi_calls.h) through the plumbing made from it:
// the SDK's trampolines (plugin.h), and for an isolated plugin the forwarding descriptor, the wire
// opcode and tessera-plugin-host's dispatch. The every-call plugin (tests/plugins/
// every_call_plugin.cc) answers each call with the name of the method that ran and the size of
// the request it got, so a row wired to the wrong function, opcode or method, or a request that
// does not cross, fails here. A new row is covered without editing this file.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "plugins/plugin_library.h"
#include "plugins/remote/wire.h"
#include "tessera/plugin/abi_calls.h"
#include "tessera/plugin/handshake.h"

namespace tessera {
namespace {

using std::chrono::milliseconds;

// build/tests/tessera_unit_tests -> build/tests/plugins/ (tests/plugins/CMakeLists.txt).
std::string EveryCallPath() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "plugins" /
          "libtessera_plugin_every_call.so")
      .string();
}

struct Sink {
  tessera_sink sink{&Sink::Write, this};
  std::string bytes;
  static void Write(tessera_sink* s, const uint8_t* data, size_t size) {
    static_cast<Sink*>(s->context)->bytes.assign(reinterpret_cast<const char*>(data), size);
  }
};

// A request any tessera.v1 message parses: one unknown field (number 1000, varint 5), 3 bytes.
const std::string kRequest("\xc0\x3e\x05", 3);
const tessera_bytes kRequestBytes{reinterpret_cast<const uint8_t*>(kRequest.data()),
                                  kRequest.size()};

int64_t NowUs(void*) { return 0; }

template <typename Fn>
bool Present(Fn fn) {
  return fn != nullptr;
}

// Calls every function of the table on `library`'s instance and checks each reached its method.
void CallEveryRow(const PluginLibrary& library) {
  tessera_host_api host{};
  host.struct_size = sizeof(host);
  host.tessera_host_log = [](void*, int32_t, const char*, size_t) {};
  host.tessera_host_emit_event = [](void*, const uint8_t*, size_t) {};
  host.tessera_host_now_us = &NowUs;
  tessera_plugin_instance* instance = nullptr;
  Sink init_error;
  REQUIRE(library.Init(&host, {nullptr, 0}, &instance, &init_error.sink) == TESSERA_OK);
  const tessera_plugin_descriptor& d = library.descriptor();
  int calls = 0;

#define EVERY_CALL_REPLY(name, Method, ...)                                                   \
  {                                                                                           \
    INFO("on_" #name);                                                                        \
    REQUIRE(Present(d.tessera_plugin_on_##name));                                             \
    Sink out, error;                                                                          \
    CHECK(d.tessera_plugin_on_##name(instance, &out.sink, &error.sink) == TESSERA_NOT_FOUND); \
    CHECK(error.bytes == #Method " ran");                                                     \
    ++calls;                                                                                  \
  }
#define EVERY_CALL_REQUEST(name, Method, ...)                                                     \
  {                                                                                               \
    INFO("on_" #name);                                                                            \
    REQUIRE(Present(d.tessera_plugin_on_##name));                                                 \
    Sink error;                                                                                   \
    CHECK(d.tessera_plugin_on_##name(instance, kRequestBytes, &error.sink) == TESSERA_NOT_FOUND); \
    CHECK(error.bytes == #Method " ran on 3 request bytes");                                      \
    ++calls;                                                                                      \
  }
#define EVERY_CALL_REQUEST_REPLY(name, Method, ...)                                      \
  {                                                                                      \
    INFO("on_" #name);                                                                   \
    REQUIRE(Present(d.tessera_plugin_on_##name));                                        \
    Sink out, error;                                                                     \
    CHECK(d.tessera_plugin_on_##name(instance, kRequestBytes, &out.sink, &error.sink) == \
          TESSERA_NOT_FOUND);                                                            \
    CHECK(error.bytes == #Method " ran on 3 request bytes");                             \
    ++calls;                                                                             \
  }
  TESSERA_PLUGIN_CALLS(EVERY_CALL_REPLY, EVERY_CALL_REQUEST, EVERY_CALL_REQUEST_REPLY)
#undef EVERY_CALL_REQUEST_REPLY
#undef EVERY_CALL_REQUEST
#undef EVERY_CALL_REPLY

  // Every function of the descriptor but on_init and on_shutdown was called.
  CHECK(calls ==
        static_cast<int>((sizeof(tessera_plugin_descriptor) -
                          offsetof(tessera_plugin_descriptor, tessera_plugin_on_inventory)) /
                         sizeof(void (*)(void))));
  d.tessera_plugin_on_shutdown(instance);
}

TEST_CASE("abi calls: every row of the table reaches its method in an in-process plugin") {
  auto library = PluginLibrary::Load(EveryCallPath(), {});
  REQUIRE_MESSAGE(library.ok(), library.status().message());
  CallEveryRow(**library);
}

TEST_CASE("abi calls: every row reaches its method through tessera-plugin-host") {
  auto library = PluginLibrary::LoadIsolated(EveryCallPath(), {}, TESSERA_PLUGIN_HOST_PATH,
                                             milliseconds(5000));
  REQUIRE_MESSAGE(library.ok(), library.status().message());
  CHECK((*library)->isolated());
  CallEveryRow(**library);
}

// build/tests/plugins/libtessera_plugin_every_call_abi_1_0.so: the same plugin built against
// the SDK as ABI 1.0 shipped it (tests/plugins/abi_1_0).
std::string EveryCallAbi10Path() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "plugins" /
          "libtessera_plugin_every_call_abi_1_0.so")
      .string();
}

// A plugin of ABI 1.0: its descriptor ends at 1.0's last call, every later one reads as NULL,
// and each of 1.0's calls reaches its method.
void CallRowsOfAbi10(const PluginLibrary& library) {
  CHECK(library.info().abi_minor == 0);
  tessera_host_api host{};
  host.struct_size = sizeof(host);
  host.tessera_host_log = [](void*, int32_t, const char*, size_t) {};
  host.tessera_host_emit_event = [](void*, const uint8_t*, size_t) {};
  host.tessera_host_now_us = &NowUs;
  host.abi_minor = TESSERA_PLUGIN_ABI_MINOR;
  tessera_plugin_instance* instance = nullptr;
  Sink init_error;
  REQUIRE(library.Init(&host, {nullptr, 0}, &instance, &init_error.sink) == TESSERA_OK);
  const tessera_plugin_descriptor& d = library.descriptor();
  int calls = 0;
  const int last_of_1_0 = 12;  // on_deprovision.
#define EVERY_CALL_1_0(name, Method, opcode, ...)                          \
  {                                                                        \
    INFO("on_" #name);                                                     \
    CHECK(Present(d.tessera_plugin_on_##name) == (opcode <= last_of_1_0)); \
    calls += opcode <= last_of_1_0 ? 1 : 0;                                \
  }
  TESSERA_PLUGIN_CALLS(EVERY_CALL_1_0, EVERY_CALL_1_0, EVERY_CALL_1_0)
#undef EVERY_CALL_1_0
  CHECK(calls == 10);
  Sink error;
  CHECK(d.tessera_plugin_on_launch(instance, kRequestBytes, &error.sink) == TESSERA_NOT_FOUND);
  CHECK(error.bytes == "Launch ran on 3 request bytes");
  Sink mig_error;
  CHECK(d.tessera_plugin_on_apply_mig_layout(instance, kRequestBytes, &mig_error.sink) ==
        TESSERA_NOT_FOUND);
  CHECK(mig_error.bytes == "ApplyMigLayout ran on 3 request bytes");
  d.tessera_plugin_on_shutdown(instance);
}

TEST_CASE("abi calls: a plugin of ABI 1.0 has 1.0's calls and no later ones, in process") {
  auto library = PluginLibrary::Load(EveryCallAbi10Path(), {});
  REQUIRE_MESSAGE(library.ok(), library.status().message());
  CallRowsOfAbi10(**library);
}

TEST_CASE("abi calls: a plugin of ABI 1.0 has 1.0's calls and no later ones, isolated") {
  auto library = PluginLibrary::LoadIsolated(EveryCallAbi10Path(), {}, TESSERA_PLUGIN_HOST_PATH,
                                             milliseconds(5000));
  REQUIRE_MESSAGE(library.ok(), library.status().message());
  CallRowsOfAbi10(**library);
}

// Frames name functions by these numbers (the fuzz corpus of plugin_wire holds such frames):
// the table may append calls, never renumber one.
TEST_CASE("abi calls: the wire numbers of ABI 1.0's calls stay as they were") {
  using plugin_wire::Function;
  CHECK(static_cast<int>(Function::kInit) == 1);
  CHECK(static_cast<int>(Function::kShutdown) == 2);
  CHECK(static_cast<int>(Function::kInventory) == 3);
  CHECK(static_cast<int>(Function::kLaunch) == 4);
  CHECK(static_cast<int>(Function::kStop) == 5);
  CHECK(static_cast<int>(Function::kResize) == 6);
  CHECK(static_cast<int>(Function::kPollEvents) == 7);
  CHECK(static_cast<int>(Function::kReconcile) == 8);
  CHECK(static_cast<int>(Function::kTelemetry) == 9);
  CHECK(static_cast<int>(Function::kApplyMigLayout) == 10);
  CHECK(static_cast<int>(Function::kProvision) == 11);
  CHECK(static_cast<int>(Function::kDeprovision) == 12);
  // ABI 1.1.
  CHECK(static_cast<int>(Function::kStart) == 13);
  CHECK(static_cast<int>(Function::kApplyPartitionLayout) == 14);
  CHECK(static_cast<int>(Function::kNodeGroups) == 15);
}

// A plugin built against ABI 1.0's abi.h must keep loading: the layout of minor 0's fields is
// fixed (LP64 offsets, as every supported platform has them); later minors only append.
TEST_CASE("abi calls: the descriptor keeps ABI 1.0's layout") {
  using D = tessera_plugin_descriptor;
  CHECK(offsetof(D, abi_major) == 0);
  CHECK(offsetof(D, abi_minor) == 4);
  CHECK(offsetof(D, struct_size) == 8);
  CHECK(offsetof(D, kinds) == 12);
  CHECK(offsetof(D, name) == 16);
  CHECK(offsetof(D, version) == 24);
  CHECK(offsetof(D, tessera_plugin_on_init) == 32);
  CHECK(offsetof(D, tessera_plugin_on_shutdown) == 40);
  CHECK(offsetof(D, tessera_plugin_on_inventory) == 48);
  CHECK(offsetof(D, tessera_plugin_on_launch) == 56);
  CHECK(offsetof(D, tessera_plugin_on_stop) == 64);
  CHECK(offsetof(D, tessera_plugin_on_resize) == 72);
  CHECK(offsetof(D, tessera_plugin_on_poll_events) == 80);
  CHECK(offsetof(D, tessera_plugin_on_reconcile) == 88);
  CHECK(offsetof(D, tessera_plugin_on_telemetry) == 96);
  CHECK(offsetof(D, tessera_plugin_on_apply_mig_layout) == 104);
  CHECK(offsetof(D, tessera_plugin_on_provision) == 112);
  CHECK(offsetof(D, tessera_plugin_on_deprovision) == 120);
  CHECK(plugin::kMinDescriptorSize == 128);
}

}  // namespace
}  // namespace tessera
