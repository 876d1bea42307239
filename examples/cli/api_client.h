// The tesserad REST API as typed calls on the tessera.v1 messages, and the exit codes tessctl
// promises to scripts.
//
// Thread safety: an ApiClient is a plain value over an HttpClient; use one per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "http_client.h"
#include "tessera/v1/api.pb.h"
#include "tessera/v1/dry_run.pb.h"
#include "tessera/v1/event.pb.h"
#include "tessera/v1/job.pb.h"
#include "tessera/v1/node.pb.h"
#include "tessera/v1/queue.pb.h"

namespace tessera::cli {

// Documented in `tessctl --help` and docs/cli.md; scripts rely on these values.
enum class ExitCode : int {
  kOk = 0,
  kUsage = 1,            // bad arguments or an unreadable job file.
  kServerError = 2,      // the server refused the request (4xx other than below).
  kNotFound = 3,         // 404.
  kUnauthenticated = 4,  // 401 or 403.
  kUnavailable = 5,      // no connection, a timeout, a TLS failure, or a 5xx.
};

struct CallResult {
  ExitCode code = ExitCode::kOk;
  std::string error;  // set when code != kOk: the server's message, or why nothing came back.
  bool ok() const { return code == ExitCode::kOk; }
};

class ApiClient {
 public:
  // `timeout` bounds each call (a long poll gets its wait on top).
  ApiClient(HttpClient http, std::string server_url,
            std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // POST /v1/jobs. `idempotency_key` empty sends no Idempotency-Key header.
  CallResult SubmitJob(const v1::JobSpec& spec, const std::string& idempotency_key,
                       v1::Job* job) const;
  // POST /v1/jobs:dryRun: what a submit of `spec` would do now; nothing is stored.
  CallResult DryRunJob(const v1::JobSpec& spec, v1::DryRunResult* result) const;
  // GET /v1/jobs/{id}.
  CallResult GetJob(const std::string& id, v1::Job* job) const;
  // POST /v1/jobs/{id}:cancel.
  CallResult CancelJob(const std::string& id, v1::Job* job) const;
  // GET /v1/jobs: one page. `states` are state names ("RUNNING").
  CallResult ListJobs(const std::string& queue, const std::vector<std::string>& states,
                      int page_size, const std::string& page_token,
                      v1::ListJobsResponse* response) const;
  // GET /v1/queues.
  CallResult ListQueues(std::vector<v1::Queue>* queues) const;
  // POST /v1/queues (create) or PUT /v1/queues/{name} (update); the stored queue back.
  CallResult WriteQueue(const v1::QueueSpec& spec, bool create, v1::Queue* queue) const;
  // DELETE /v1/queues/{name}.
  CallResult DeleteQueue(const std::string& name) const;
  // GET /v1/nodes.
  CallResult ListNodes(std::vector<v1::Node>* nodes) const;
  CallResult ListBackends(std::vector<v1::Backend>* backends) const;
  // POST /v1/nodes/{name}:{action}; action is "cordon", "drain" or "uncordon".
  CallResult NodeAction(const std::string& name, const std::string& action) const;
  // GET /v1/admin/backup: a consistent copy of the store, streamed into `sink`.
  CallResult Backup(const BodySink& sink) const;
  // GET /v1/events: waits up to `wait_ms` on the server for events after `after_seq`; continue
  // from the response's next_after_seq.
  CallResult WatchEvents(uint64_t after_seq, int max, int wait_ms,
                         v1::WatchEventsResponse* events) const;

 private:
  HttpResponse Call(const std::string& method, const std::string& target, const std::string& body,
                    const std::map<std::string, std::string>& headers = {},
                    int extra_wait_ms = 0) const;
  CallResult Check(const HttpResponse& response) const;

  HttpClient http_;
  std::string server_url_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tessera::cli
