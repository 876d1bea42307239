// tessctl: the command line for tesserad (docs/cli.md).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>

#include "api_client.h"
#include "commands.h"
#include "tls_transport.h"

namespace {

using tessera::cli::ExitCode;

constexpr char kFooter[] = R"(Exit codes:
  0  success
  1  usage error (bad arguments, unreadable job file)
  2  the server refused the request (HTTP 4xx other than 401, 403, 404)
  3  not found (HTTP 404)
  4  unauthenticated or forbidden (HTTP 401, 403)
  5  server unavailable (connection refused, timeout, TLS handshake or certificate
     verification failure, HTTP 5xx)
Errors print the server's message on stderr. See docs/cli.md.)";

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// A whole-number range whose error names the bounds as integers ("0 to 2147483647"), not as
// CLI::NonNegativeNumber's 300-digit double.
template <typename T>
CLI::Range Between(T min, T max = std::numeric_limits<T>::max()) {
  return CLI::Range(min, max);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessctl: submit, inspect and manage jobs, queues and nodes on a tesserad server."};
  app.footer(kFooter);
  app.require_subcommand(1);
  // Global options (-o, --server, ...) are accepted after the subcommand as well: `tessctl queues
  // -o json`. Inherited by the subcommands added below.
  app.fallthrough();

  std::string server = EnvOr("TESSERA_SERVER", "http://127.0.0.1:8080");
  std::string token = EnvOr("TESSERA_TOKEN", "");
  tessera::cli::TlsOptions tls{.ca_file = EnvOr("TESSERA_CACERT", "")};
  std::string output_format = "table";
  app.add_option("--server", server, "tesserad URL, http:// or https://; env TESSERA_SERVER")
      ->capture_default_str();
  app.add_option("--token", token, "bearer token; env TESSERA_TOKEN");
  app.add_option("--cacert", tls.ca_file,
                 "https: trust the PEM certificates in FILE (a private CA or a self-signed "
                 "server certificate) instead of the system's; env TESSERA_CACERT");
  app.add_flag("--insecure", tls.insecure,
               "https: do not verify the server's certificate or name; for testing only");
  double timeout_s = 30;
  app.add_option("--timeout", timeout_s,
                 "seconds to wait for the server on each request (connect: at most 5)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("-o,--output", output_format, "table (aligned columns) or json (protobuf JSON)")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();

  tessera::cli::SubmitFlags submit;
  auto* submit_cmd = app.add_subcommand(
      "submit",
      "submit jobs from a YAML or JSON JobSpec file and/or flags; prints each new job's id");
  submit_cmd
      ->add_option("-f,--file", submit.file,
                   "JobSpecs as YAML, one per document (--- between them), or one as JSON when the "
                   "name ends in .json (docs/cli.md); flags given as well override their fields")
      ->check(CLI::ExistingFile);
  submit_cmd
      ->add_option("--array", submit.array,
                   "submit each job N times (names and idempotency keys get -0, -1, ...)")
      ->check(Between(1, 100000));
  submit_cmd->add_option("--queue", submit.queue,
                         "leaf queue, e.g. research/vision (default: the server's default queue)");
  submit_cmd->add_option("--name", submit.name, "job name");
  submit_cmd->add_option("--priority-class", submit.priority_class, "priority class name");
  submit_cmd->add_option("--tasks", submit.tasks, "number of tasks (default 1)")->check(Between(0));
  submit_cmd->add_option("--gpus", submit.gpus, "whole GPUs per task (default 0)")
      ->check(Between(0));
  submit_cmd
      ->add_option("--gpu-milli", submit.gpu_milli,
                   "share of one GPU per task in milli-GPUs (1..999; 1000 = whole)")
      ->check(CLI::Range(0, 1000));
  submit_cmd
      ->add_option("--cpu-milli", submit.cpu_milli,
                   "CPU per task, 1000 = one core "
                   "(default 1000)")
      ->check(Between<int64_t>(1));
  submit_cmd->add_option("--memory-mib", submit.memory_mib, "memory per task (default 1024)")
      ->check(Between<int64_t>(1));
  // One value per flag: a list option would take what follows as more values, and swallow the
  // `--` that starts the task's argv.
  submit_cmd
      ->add_option("--selector", submit.selectors,
                   "run only on nodes with the label key=value; repeatable")
      ->allow_extra_args(false);
  submit_cmd
      ->add_option("--toleration", submit.tolerations,
                   "tolerate taints key[=value][:NoSchedule|PreferNoSchedule|NoExecute]; "
                   "repeatable")
      ->allow_extra_args(false);
  submit_cmd->add_option("--elastic", submit.elastic,
                         "an elastic job of MIN:MAX tasks (replaces --tasks)");
  submit_cmd->add_option("--elastic-sizes", submit.elastic_sizes,
                         "task counts the elastic job may run at: powers-of-two, multiple-of:N, "
                         "or a list N,M,...");
  submit_cmd->add_flag("--idle-gpu-exempt", submit.idle_gpu_exempt,
                       "exempt the job from its queue's idle-GPU policy (if the queue allows it)");
  submit_cmd->add_option("--idempotency-key", submit.idempotency_key,
                         "resubmitting with the same key returns the first job");
  submit_cmd->add_flag("--dry-run", submit.dry_run,
                       "submit nothing: print whether the job could run, where it would start "
                       "now or when, why it would wait, and which jobs it would preempt");
  submit_cmd->add_option("--command,command", submit.command,
                         "argv of each task; put it after -- when it has options");

  std::string queue;
  std::vector<std::string> states;
  int page_size = 0;
  auto* ls_cmd = app.add_subcommand("ls", "list jobs (follows every page)");
  ls_cmd->add_option("--queue", queue, "a leaf queue, or a prefix ending in / for a subtree");
  ls_cmd->add_option("--state", states, "only these states (PENDING, RUNNING, ...); repeatable");
  ls_cmd->add_option("--page-size", page_size, "jobs per request (server default 100)")
      ->check(CLI::Range(0, 1000));

  std::string job_id;
  auto* get_cmd = app.add_subcommand("get", "show one job");
  get_cmd->add_option("ID", job_id, "job id")->required();
  auto* cancel_cmd = app.add_subcommand("cancel", "cancel a job");
  cancel_cmd->add_option("ID", job_id, "job id")->required();

  auto* queues_cmd = app.add_subcommand("queues", "list queues with their usage and shares");
  std::string queue_file, queue_name;
  auto* queue_cmd = app.add_subcommand("queue", "create, update or delete a queue (admin)");
  queue_cmd->require_subcommand(1);
  auto* queue_create = queue_cmd->add_subcommand("create", "create a queue from a QueueSpec file");
  auto* queue_update = queue_cmd->add_subcommand("update", "replace a queue's spec from a file");
  for (auto* cmd : {queue_create, queue_update}) {
    cmd->add_option("-f,--file", queue_file, "QueueSpec as YAML, or JSON when it ends in .json")
        ->required()
        ->check(CLI::ExistingFile);
  }
  auto* queue_delete = queue_cmd->add_subcommand("delete", "delete an empty queue");
  queue_delete->add_option("NAME", queue_name, "queue name, e.g. research/vision")->required();

  auto* nodes_cmd = app.add_subcommand("nodes", "list nodes with their allocation and state");
  auto* gpus_cmd = app.add_subcommand(
      "gpus", "list each node's GPUs and MIG instances with their UUIDs, sharing and health");
  auto* backends_cmd =
      app.add_subcommand("backends", "list the backends with their health, roles and nodes");

  std::string node;
  std::vector<std::pair<CLI::App*, std::string>> node_cmds;
  for (const char* action : {"cordon", "drain", "uncordon"}) {
    const std::string help = std::string(action) == "cordon"  ? "place no new work on a node"
                             : std::string(action) == "drain" ? "cordon a node until its tasks end"
                                                              : "let a node take work again";
    auto* cmd = app.add_subcommand(action, help);
    cmd->add_option("NODE", node, "node name")->required();
    node_cmds.emplace_back(cmd, action);
  }

  uint64_t after_seq = 0;
  int limit = 0;
  auto* watch_cmd = app.add_subcommand("watch", "print events as they happen, until Ctrl-C");
  watch_cmd->add_option("--after", after_seq, "start after this event sequence number")
      ->capture_default_str();
  watch_cmd->add_option("--limit", limit, "stop after this many events (0: never)")
      ->check(Between(0));

  bool once = false;
  auto* top_cmd = app.add_subcommand("top", "queue and node summary, refreshed every second");
  top_cmd->add_flag("--once", once, "print once and exit");

  std::string backup_file;
  bool quiet = false;
  auto* backup_cmd = app.add_subcommand(
      "backup", "download a consistent copy of the daemon's store (admin); prints the file");
  backup_cmd->add_option("FILE", backup_file, "where to write the copy")->required();
  backup_cmd->add_flag("-q,--quiet", quiet, "no progress on stderr");

  std::string restore_file, restore_store;
  bool discard_current = false;
  auto* restore_cmd = app.add_subcommand(
      "restore",
      "put a backup in place of a STOPPED daemon's store (runs locally, not through the API)");
  restore_cmd->add_option("FILE", restore_file, "a file written by tessctl backup")
      ->required()
      ->check(CLI::ExistingFile);
  restore_cmd->add_option("--store", restore_store, "the daemon's store.path")->required();
  restore_cmd->add_flag("--discard-current", discard_current,
                        "do not keep the current store as STORE.pre-restore");
  restore_cmd->add_flag("-q,--quiet", quiet, "no progress on stderr");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(ExitCode::kUsage);
  }

  tessera::cli::ServerAddress address;
  std::string error;
  if (!tessera::cli::ParseServerUrl(server, &address, &error)) {
    std::cerr << "tessctl: " << error << '\n';
    return static_cast<int>(ExitCode::kUsage);
  }
  std::shared_ptr<const tessera::cli::TlsTransport> tls_transport;
  if (address.tls) {
    tls_transport = tessera::cli::TlsTransport::Load(tls, &error);
    if (tls_transport == nullptr) {
      std::cerr << "tessctl: " << error << '\n';
      return static_cast<int>(ExitCode::kUsage);
    }
  }
  const tessera::cli::ApiClient api(
      tessera::cli::HttpClient(address, token, tls_transport), server,
      std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  const tessera::cli::Output output{.json = output_format == "json"};

  ExitCode code = ExitCode::kUsage;
  if (restore_cmd->parsed()) {
    code = Restore(output, restore_file, restore_store, discard_current, quiet);
  } else if (backup_cmd->parsed()) {
    code = Backup(api, output, backup_file, quiet);
  } else if (submit_cmd->parsed()) {
    code = Submit(api, output, submit);
  } else if (ls_cmd->parsed()) {
    code = ListJobs(api, output, queue, states, page_size);
  } else if (get_cmd->parsed()) {
    code = GetJob(api, output, job_id);
  } else if (cancel_cmd->parsed()) {
    code = CancelJob(api, output, job_id);
  } else if (queues_cmd->parsed()) {
    code = ListQueues(api, output);
  } else if (queue_create->parsed() || queue_update->parsed()) {
    code = WriteQueue(api, output, queue_file, queue_create->parsed());
  } else if (queue_delete->parsed()) {
    code = DeleteQueue(api, queue_name);
  } else if (nodes_cmd->parsed()) {
    code = ListNodes(api, output);
  } else if (gpus_cmd->parsed()) {
    code = ListGpus(api, output);
  } else if (backends_cmd->parsed()) {
    code = ListBackends(api, output);
  } else if (watch_cmd->parsed()) {
    code = Watch(api, output, after_seq, limit);
  } else if (top_cmd->parsed()) {
    code = Top(api, output, once);
  } else {
    for (const auto& [cmd, action] : node_cmds) {
      if (cmd->parsed()) code = NodeAction(api, node, action);
    }
  }
  return static_cast<int>(code);
}
