/* The plugin ABI's calls, one row each: the one list from which the SDK and the scheduler make
 * their plumbing, so that adding a call is a row here plus the code that gives it meaning.
 * Plugin authors read abi.h (the contract) and plugin.h (the C++ class); this file is for those
 * who change the ABI (docs/plugins.md, "Adding an ABI call").
 *
 * Made from this table: the C++ trampolines of plugin.h's descriptor, FakeHost's typed calls and
 * RequestCall (fake_host.h), the conformance kit's list of each kind's functions and its
 * malformed-request check (conformance.h), and the isolated plugin host's wire opcodes (wire.h),
 * dispatch (tessera-plugin-host) and forwarding descriptor (forwarding_descriptor.cc).
 *
 * Each row is one macro, named after the call's shape (its C signature in abi.h):
 *
 *   REPLY          (instance, tessera_sink* out, tessera_sink* error): writes a Reply
 *   REQUEST        (instance, tessera_bytes request, tessera_sink* error): reads a Request
 *   REQUEST_REPLY  (instance, tessera_bytes request, tessera_sink* out, tessera_sink* error)
 *
 * and its arguments are, in order:
 *
 *   name     the descriptor's field is tessera_plugin_on_<name>; also the call's name in
 *            messages and FakeHost's call_stats ("poll_events");
 *   Method   the tessera::plugin::Plugin method that serves it (plugin.h), FakeHost's method
 *            that makes it, and the wire's Function::k<Method>;
 *   opcode   its number in the isolated host's frames and its bit in DescriptorInfo::functions:
 *            the field's place in the descriptor's function table, counting on_init as 1 and
 *            on_shutdown as 2 (checked below), so never reused, at most 31;
 *   kind     the plugins that have it: TESSERA_PLUGIN_KIND_<kind> (ANY: every plugin); NULL in
 *            the others;
 *   need     REQUIRED or OPTIONAL for a plugin of that kind (TESSERA_PLUGIN_CALL_<need>; the
 *            conformance kit's handshake check);
 *   Request, Reply: the tessera.v1 messages it reads and writes (plugin.proto), as the shape
 *            has them.
 *
 * on_init and on_shutdown are no rows: they make and free the instance, and each place handles
 * them by hand.
 *
 * To use the table, define a macro per shape, expand TESSERA_PLUGIN_CALLS with them, and
 * undefine them. Where the shape does not matter, one variadic macro serves all three:
 *
 *   #define TESSERA_WIRE_FUNCTION(name, Method, opcode, ...) k##Method = opcode,
 *   enum class Function : uint8_t {
 *     kNone = 0, kInit = 1, kShutdown = 2,
 *     TESSERA_PLUGIN_CALLS(TESSERA_WIRE_FUNCTION, TESSERA_WIRE_FUNCTION, TESSERA_WIRE_FUNCTION)
 *   };
 *   #undef TESSERA_WIRE_FUNCTION
 *
 * A new call is a new last row, with the next opcode, and its field appended to
 * tessera_plugin_descriptor in abi.h (a minor version's append; the order is checked below).
 */
#ifndef TESSERA_PLUGIN_ABI_CALLS_H_
#define TESSERA_PLUGIN_ABI_CALLS_H_

/* clang-format off */
#define TESSERA_PLUGIN_CALLS(REPLY, REQUEST, REQUEST_REPLY)                                       \
  /*            name              Method          opcode kind               need      messages */ \
  REPLY(        inventory,        Inventory,      3,     EXECUTOR,          REQUIRED, Inventory)  \
  REQUEST(      launch,           Launch,         4,     EXECUTOR,          REQUIRED, LaunchTask) \
  REQUEST(      stop,             Stop,           5,     EXECUTOR,          REQUIRED, StopTask)   \
  REQUEST(      resize,           Resize,         6,     EXECUTOR,          OPTIONAL, ResizeJob)  \
  REPLY(        poll_events,      PollEvents,     7,     EXECUTOR,          REQUIRED,             \
                BackendEvents)                                                                    \
  REPLY(        reconcile,        Reconcile,      8,     EXECUTOR,          REQUIRED, LiveTasks)  \
  REPLY(        telemetry,        Telemetry,      9,     EXECUTOR,          OPTIONAL,             \
                TelemetryBatch)                                                                   \
  REQUEST(      apply_mig_layout, ApplyMigLayout, 10,    PARTITIONER,       REQUIRED,             \
                MigLayoutRequest)                                                                 \
  REQUEST_REPLY(provision,        Provision,      11,    CAPACITY_PROVIDER, REQUIRED,             \
                ProvisionRequest, ProvisionResult)                                                \
  REQUEST(      deprovision,      Deprovision,    12,    CAPACITY_PROVIDER, REQUIRED,             \
                DeprovisionRequest)                                                               \
  /* ABI 1.1 */                                                                                   \
  REQUEST(      start,            Start,          13,    ANY,               OPTIONAL, StartRequest) \
  REQUEST_REPLY(apply_partition_layout, ApplyPartitionLayout, 14, PARTITIONER, OPTIONAL,          \
                PartitionLayoutRequest, PartitionLayoutResult)                                    \
  REPLY(        node_groups,      NodeGroups,     15,    CAPACITY_PROVIDER, OPTIONAL, NodeGroups)
/* clang-format on */

/* The `need` column as a number: whether a plugin of the row's kind must have the call. */
#define TESSERA_PLUGIN_CALL_REQUIRED 1
#define TESSERA_PLUGIN_CALL_OPTIONAL 0

#ifdef __cplusplus
#include <cstddef>

#include "tessera/plugin/abi.h"

/* The table and abi.h agree: each row's field sits at its opcode's place, and the descriptor
 * has no function the table lacks. A row out of order, a field missing from abi.h, or a field
 * in abi.h without a row stops the build here. */
#define TESSERA_ABI_CALL_AT_ITS_OPCODE(name, Method, opcode, ...)                             \
  static_assert(offsetof(tessera_plugin_descriptor, tessera_plugin_on_##name) ==              \
                    offsetof(tessera_plugin_descriptor, tessera_plugin_on_init) +             \
                        (opcode - 1) * sizeof(void (*)(void)),                                \
                "abi_calls.h: the row of on_" #name " is not at its field's place in abi.h"); \
  static_assert(opcode < 32, "abi_calls.h: DescriptorInfo::functions has 32 bits");
TESSERA_PLUGIN_CALLS(TESSERA_ABI_CALL_AT_ITS_OPCODE, TESSERA_ABI_CALL_AT_ITS_OPCODE,
                     TESSERA_ABI_CALL_AT_ITS_OPCODE)
#undef TESSERA_ABI_CALL_AT_ITS_OPCODE

#define TESSERA_ABI_CALL_COUNT(...) +1
static_assert(sizeof(tessera_plugin_descriptor) ==
                  offsetof(tessera_plugin_descriptor, tessera_plugin_on_init) +
                      (2 TESSERA_PLUGIN_CALLS(TESSERA_ABI_CALL_COUNT, TESSERA_ABI_CALL_COUNT,
                                              TESSERA_ABI_CALL_COUNT)) *
                          sizeof(void (*)(void)),
              "abi_calls.h: tessera_plugin_descriptor has a function with no row in the table");
#undef TESSERA_ABI_CALL_COUNT
#endif /* __cplusplus */

#endif /* TESSERA_PLUGIN_ABI_CALLS_H_ */
