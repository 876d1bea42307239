/* The Tessera plugin ABI: how the scheduler (the host) and a resource backend (a plugin, a
 * shared object loaded at run time) talk, in plain C so that neither side depends on the other's
 * compiler, standard library or exceptions.
 *
 * A plugin exports one function, TESSERA_PLUGIN_ENTRY_SYMBOL, returning a pointer to a constant
 * descriptor: the ABI version it was built against, the descriptor's size, what kinds of backend
 * it is, its name and version, and a table of functions. The host checks the version and size
 * before it calls anything: a different major version is refused; a newer minor version is
 * accepted (the host ignores functions it does not know, which new minors only append), and
 * an older one too (functions past the plugin's struct_size are treated as absent).
 *
 * Data crosses as serialized tessera.v1 protobuf messages (proto/tessera/v1/plugin.proto): the
 * comment on each function names the message. Input bytes are borrowed for the duration of the
 * call. Output goes through a tessera_sink the caller provides: the callee calls sink->write with
 * bytes it owns, and the caller copies them before write returns, so memory is always freed on
 * the side that allocated it. Every function returns a tessera_status; on failure it may write
 * a human-readable message (UTF-8, no terminator needed) to its `error` sink.
 *
 * Failing one request: a status other than TESSERA_OK from on_init, on_inventory or
 * on_reconcile while the host opens fails the opening. After that, an error fails only its own
 * request (a failed launch is reported lost: its job is placed again without spending an
 * attempt) until the host's max_consecutive_errors calls in a row (3 by default) have failed:
 * then the host marks the whole plugin unhealthy, cordons every node the plugin offers,
 * requeues every job with tasks there, ends every launch asked for while unhealthy with exit
 * code -1, and sends the plugin no new request until it is restarted after a backoff (in
 * process: on_shutdown, then a new on_init; unless a call hung in it). Hosts of ABI 1.0
 * before this rule mark the plugin unhealthy at the first error. So a non-OK status says the
 * plugin is failing, never that one task cannot run. To fail one launch (no such node or GPU, a
 * command that cannot start, a backend that said no), return TESSERA_OK and report a
 * LAUNCH_REJECTED event for that task, with `retryable` and the reason in `message` (the job is
 * requeued, or failed when not retryable, and its reason says why). A task that is gone without an
 * exit status (evicted, its machine lost) is a TASK_LOST event: the job is requeued without
 * spending an attempt. Hosts that predate those kinds drop them; for them, report TASK_EXITED with
 * a non-zero exit_code and log the reason. Either way nothing else is affected. The same goes for a
 * stop that fails for one task: return TESSERA_OK and log it.
 *
 * Threads: the host never calls one plugin instance from two threads at once, except
 * on_poll_events and on_telemetry, which may overlap any other call (a host of ABI 1.1 runs them
 * on a thread of their own, so guard what they share with launches). A plugin may call the host
 * callbacks from any thread, at any time between on_init's return and on_shutdown's return;
 * a host of ABI 1.1 then calls on_start, where a plugin starts the threads that watch its
 * backend and report (a host of 1.0 never calls it: a plugin that must run under one starts
 * them when the host's tessera_host_api.struct_size shows no abi_minor field, see below).
 * A call should return promptly: the host abandons a call after its deadline (5 s by default;
 * the host may set one per kind of call, a launch's longer than a poll's), marks the plugin
 * unhealthy and stops using it until it is restarted.
 *
 * Versions and sizes: both structs grow only at their ends, one minor at a time, and each side
 * reads the other's by its declared struct_size: fields past it are absent (NULL, 0). ABI 1.1
 * appended tessera_host_api.abi_minor and the descriptor's on_start, on_apply_partition_layout
 * and on_node_groups; the messages gained fields a 1.0 peer leaves unset (plugin.proto says which,
 * among them a fencing epoch in every request). docs/plugins.md, "ABI 1.1", lists the changes.
 *
 * Names say direction: tessera_plugin_on_* fields are called by the host, tessera_host_*
 * callbacks by the plugin.
 */
#ifndef TESSERA_PLUGIN_ABI_H_
#define TESSERA_PLUGIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TESSERA_PLUGIN_ABI_MAJOR 1
#define TESSERA_PLUGIN_ABI_MINOR 1

/* The one symbol a plugin exports: const tessera_plugin_descriptor* tessera_plugin_entry(void). */
#define TESSERA_PLUGIN_ENTRY_SYMBOL "tessera_plugin_entry"

/* Status codes, the same as tessera::StatusCode. */
typedef int32_t tessera_status;
#define TESSERA_OK 0
#define TESSERA_INVALID_ARGUMENT 1
#define TESSERA_NOT_FOUND 2
#define TESSERA_ALREADY_EXISTS 3
#define TESSERA_FAILED_PRECONDITION 4
#define TESSERA_RESOURCE_EXHAUSTED 5
#define TESSERA_UNAVAILABLE 6
#define TESSERA_PERMISSION_DENIED 7
#define TESSERA_INTERNAL 8

/* What a plugin can do; a descriptor's `kinds` is a bitwise OR. */
#define TESSERA_PLUGIN_KIND_EXECUTOR 1u          /* runs tasks: inventory, launch, stop, ... */
#define TESSERA_PLUGIN_KIND_PARTITIONER 2u       /* shapes GPUs: on_apply_mig_layout */
#define TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER 4u /* adds and removes nodes: on_provision */
/* Every kind: for calls any plugin may have (on_start). */
#define TESSERA_PLUGIN_KIND_ANY                                     \
  (TESSERA_PLUGIN_KIND_EXECUTOR | TESSERA_PLUGIN_KIND_PARTITIONER | \
   TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER)

/* Log levels for tessera_host_log. */
#define TESSERA_LOG_DEBUG 0
#define TESSERA_LOG_INFO 1
#define TESSERA_LOG_WARN 2
#define TESSERA_LOG_ERROR 3

/* Borrowed bytes: valid only during the call that passes them. */
typedef struct tessera_bytes {
  const uint8_t* data; /* may be NULL when size is 0; not owned by the callee. */
  size_t size;
} tessera_bytes;

/* Where a callee writes output. The callee calls write(sink, data, size) at most once per sink
 * per call; the caller copies the bytes before write returns (data stays owned by the callee). */
typedef struct tessera_sink tessera_sink;
struct tessera_sink {
  void (*write)(tessera_sink* sink, const uint8_t* data, size_t size);
  void* context; /* the caller's; the callee never touches it. */
};

/* The host's services, passed to on_init. The struct and the functions stay valid until
 * on_shutdown returns; `context` must be passed back unchanged. */
typedef struct tessera_host_api {
  uint32_t struct_size; /* sizeof(tessera_host_api) as the host was built. */
  void* context;        /* owned by the host. */
  /* Logs one message (UTF-8, `size` bytes, no terminator needed). Thread-safe. */
  void (*tessera_host_log)(void* context, int32_t level, const char* message, size_t size);
  /* Reports one serialized tessera.v1.BackendEvent. Thread-safe; the bytes are copied. */
  void (*tessera_host_emit_event)(void* context, const uint8_t* event, size_t size);
  /* The host's clock in microseconds since the Unix epoch (virtual in simulations: a plugin
   * must use it, not the system clock, for anything the host should see). Thread-safe. */
  int64_t (*tessera_host_now_us)(void* context);
  /* ABI 1.1: the host's TESSERA_PLUGIN_ABI_MINOR. Absent (struct_size too small to hold it)
   * under a 1.0 host, which never calls on_start. */
  uint32_t abi_minor;
} tessera_host_api;

/* An instance of a plugin, made by on_init; opaque to the host. */
typedef struct tessera_plugin_instance tessera_plugin_instance;

typedef struct tessera_plugin_descriptor {
  uint32_t abi_major;   /* TESSERA_PLUGIN_ABI_MAJOR the plugin was built with. */
  uint32_t abi_minor;   /* TESSERA_PLUGIN_ABI_MINOR likewise. */
  uint32_t struct_size; /* sizeof(tessera_plugin_descriptor) as the plugin was built. */
  uint32_t kinds;       /* TESSERA_PLUGIN_KIND_* bits. */
  const char* name;     /* static, NUL-terminated, e.g. "sim"; owned by the plugin. */
  const char* version;  /* static, NUL-terminated, e.g. "1.2.0"; owned by the plugin. */

  /* Makes an instance. `host` outlives the instance. `config` is the plugin's configuration
   * (its own format; the host passes the bytes it was given). Writes the instance to *out.
   * Errors: INVALID_ARGUMENT for a bad config (the message names the field). */
  tessera_status (*tessera_plugin_on_init)(const tessera_host_api* host, tessera_bytes config,
                                           tessera_plugin_instance** out, tessera_sink* error);
  /* Stops everything the instance started in the background and frees it. No host callback may
   * be called after it returns. Tasks keep running (a restarted host reconciles them). */
  void (*tessera_plugin_on_shutdown)(tessera_plugin_instance* instance);

  /* Executor. Each may be NULL when the plugin is not an executor. */
  /* Writes tessera.v1.Inventory to `out`. */
  tessera_status (*tessera_plugin_on_inventory)(tessera_plugin_instance* instance,
                                                tessera_sink* out, tessera_sink* error);
  /* `request` is tessera.v1.LaunchTask. Idempotent per TaskRef: a second launch of a task that
   * exists succeeds without running it twice. Started and exit reports come as events. A task
   * that cannot run answers TESSERA_OK and a LAUNCH_REJECTED event; a non-OK return marks the whole
   * plugin unhealthy (see "Failing one request" above). */
  tessera_status (*tessera_plugin_on_launch)(tessera_plugin_instance* instance,
                                             tessera_bytes request, tessera_sink* error);
  /* `request` is tessera.v1.StopTask. Stopping a task that is gone succeeds. grace_ms is the
   * notice the task gets (SIGTERM, say) before it is killed; 0 means kill it now, with no
   * notice (what the host sends for a job without checkpoint_grace_s, and for a task of an
   * attempt it has replaced). */
  tessera_status (*tessera_plugin_on_stop)(tessera_plugin_instance* instance, tessera_bytes request,
                                           tessera_sink* error);
  /* `request` is tessera.v1.ResizeJob. May be NULL. */
  tessera_status (*tessera_plugin_on_resize)(tessera_plugin_instance* instance,
                                             tessera_bytes request, tessera_sink* error);
  /* Writes tessera.v1.BackendEvents (events not yet reported through emit_event, may be none)
   * to `out`. A plugin that emits everything through the callback still answers. */
  tessera_status (*tessera_plugin_on_poll_events)(tessera_plugin_instance* instance,
                                                  tessera_sink* out, tessera_sink* error);
  /* Writes tessera.v1.LiveTasks: every task still alive, e.g. after the host restarted. */
  tessera_status (*tessera_plugin_on_reconcile)(tessera_plugin_instance* instance,
                                                tessera_sink* out, tessera_sink* error);
  /* Writes tessera.v1.TelemetryBatch. May be NULL. */
  tessera_status (*tessera_plugin_on_telemetry)(tessera_plugin_instance* instance,
                                                tessera_sink* out, tessera_sink* error);

  /* Partitioner. `request` is tessera.v1.MigLayoutRequest. NULL when not a partitioner. */
  tessera_status (*tessera_plugin_on_apply_mig_layout)(tessera_plugin_instance* instance,
                                                       tessera_bytes request, tessera_sink* error);

  /* Capacity provider. NULL when not one. `request` is tessera.v1.ProvisionRequest (writes
   * tessera.v1.ProvisionResult) or tessera.v1.DeprovisionRequest. */
  tessera_status (*tessera_plugin_on_provision)(tessera_plugin_instance* instance,
                                                tessera_bytes request, tessera_sink* out,
                                                tessera_sink* error);
  tessera_status (*tessera_plugin_on_deprovision)(tessera_plugin_instance* instance,
                                                  tessera_bytes request, tessera_sink* error);

  /* ABI 1.1. Each may be NULL; a 1.0 plugin's struct_size ends before them. */
  /* Any kind. `request` is tessera.v1.StartRequest. Called once, after on_init (and, for an
   * executor, after the first on_inventory and on_reconcile), when the host callbacks are
   * usable: start watching the backend here. An error fails the start like on_init's. */
  tessera_status (*tessera_plugin_on_start)(tessera_plugin_instance* instance,
                                            tessera_bytes request, tessera_sink* error);
  /* Partitioner. `request` is tessera.v1.PartitionLayoutRequest; writes
   * tessera.v1.PartitionLayoutResult. Preferred to on_apply_mig_layout when present; a layout
   * that fails for one GPU is a result with `error` set, not an error return. */
  tessera_status (*tessera_plugin_on_apply_partition_layout)(tessera_plugin_instance* instance,
                                                             tessera_bytes request,
                                                             tessera_sink* out,
                                                             tessera_sink* error);
  /* Capacity provider. Writes tessera.v1.NodeGroups: the kinds of node on_provision can add. */
  tessera_status (*tessera_plugin_on_node_groups)(tessera_plugin_instance* instance,
                                                  tessera_sink* out, tessera_sink* error);
  /* Minor versions append fields here, each with its row in abi_calls.h. */
} tessera_plugin_descriptor;

typedef const tessera_plugin_descriptor* (*tessera_plugin_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_PLUGIN_ABI_H_ */
