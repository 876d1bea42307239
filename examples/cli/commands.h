// The tessctl commands: each calls the API, prints a table or JSON on stdout and errors on
// stderr, and returns the exit code scripts see.
//
// Thread safety: run one command per process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api_client.h"

namespace tessera::cli {

struct Output {
  bool json = false;  // -o json: protobuf JSON mapping instead of tables.
};

// `submit`: the specs of a YAML file (one per document) or a JSON file (empty path: none, one spec
// from the flags), with the flags applied on top of each; `array` > 0 submits each that many
// times (names and idempotency keys get "-<index>").
struct SubmitFlags {
  std::string file;
  int array = 0;
  std::string idempotency_key;
  std::string queue, name, priority_class;
  int tasks = -1, gpus = -1, gpu_milli = -1;  // -1: not given.
  int64_t cpu_milli = -1, memory_mib = -1;
  std::vector<std::string> command;
  std::vector<std::string> selectors;    // key=value, each added to node_selector.
  std::vector<std::string> tolerations;  // key[=value][:Effect], each added to tolerations.
  std::string elastic;                   // MIN:MAX, the elastic bounds.
  std::string elastic_sizes;             // powers-of-two, multiple-of:N or a list N,M,...
  bool idle_gpu_exempt = false;
  // Ask what submitting would do (POST /v1/jobs:dryRun) instead of submitting.
  bool dry_run = false;
};

// One job: prints its id (or the Job as JSON). Several: submits them concurrently and prints one
// line per job in order, its id or "-" when the server refused it, the reason on stderr. With
// --dry-run, submits nothing and prints, per job, what a submit would do now (a table, or the
// DryRunResult as JSON); exit code 0 whenever the server answered, infeasible jobs included.
ExitCode Submit(const ApiClient& api, const Output& output, const SubmitFlags& flags);
ExitCode ListJobs(const ApiClient& api, const Output& output, const std::string& queue,
                  const std::vector<std::string>& states, int page_size);
ExitCode GetJob(const ApiClient& api, const Output& output, const std::string& id);
ExitCode CancelJob(const ApiClient& api, const Output& output, const std::string& id);
ExitCode ListQueues(const ApiClient& api, const Output& output);
// `queue create|update -f FILE`: a QueueSpec from YAML or JSON (as submit -f reads a JobSpec).
ExitCode WriteQueue(const ApiClient& api, const Output& output, const std::string& file,
                    bool create);
// `queue delete NAME`.
ExitCode DeleteQueue(const ApiClient& api, const std::string& name);
ExitCode ListNodes(const ApiClient& api, const Output& output);
// Each node's GPUs: model, UUID, how they are shared, MIG instances with their UUIDs, health.
ExitCode ListGpus(const ApiClient& api, const Output& output);
ExitCode ListBackends(const ApiClient& api, const Output& output);
// action: "cordon", "drain" or "uncordon".
ExitCode NodeAction(const ApiClient& api, const std::string& node, const std::string& action);
// Prints events after `after_seq` as they come; `limit` > 0 stops after that many.
ExitCode Watch(const ApiClient& api, const Output& output, uint64_t after_seq, int limit);
// Queue and node summary, redrawn every second unless `once`.
ExitCode Top(const ApiClient& api, const Output& output, bool once);

// store_commands.cc
// `backup FILE`: downloads a consistent copy of the daemon's store to FILE (through
// FILE.partial, renamed when complete and synced), with progress on stderr unless `quiet`.
ExitCode Backup(const ApiClient& api, const Output& output, const std::string& file, bool quiet);
// `restore FILE --store PATH`: replaces the store of a stopped daemon with the backup FILE
// (tessera::RestoreStore; the previous store is kept as PATH.pre-restore unless
// `discard_current`). Runs locally; refuses while a daemon has the store open.
ExitCode Restore(const Output& output, const std::string& file, const std::string& store,
                 bool discard_current, bool quiet);

}  // namespace tessera::cli
