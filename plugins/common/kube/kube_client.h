// KubeClient: typed verbs on the Kubernetes REST API for a backend plugin: get, list (one page),
// create, replace, patch (JSON merge or strategic merge), delete with DeleteOptions, any
// subresource (a pod's `status`, `binding`), and the opening of a watch stream; bodies are
// nlohmann::json, paths come from resource_path.h. Under each call:
//
// - the bearer token (token_source.h; a 401 makes it re-read the token file and try once more,
//   which is how a rotated service-account token is picked up at once);
// - the client-side rate limit (token_bucket.h; options.qps / options.burst);
// - retries with full-jitter back-off (retry_policy.h): 429 (Retry-After honoured), 5xx and
//   transport failures, for idempotent verbs. A create is retried on those only when the
//   caller can recognise its own object (CreateOptions::is_ours): a retried POST whose first
//   reply was lost may find the object there already (409), and that is then success;
// - a failure becomes a KubeError parsed from the Status body (kube_error.h).
//
// Each attempt has its own deadline (options.request_timeout); `stop` ends a call at once, in
// the middle of a request or a back-off. Thread-safe: one client serves every thread of a
// backend, each call on a pooled keep-alive connection of its own (kube_transport.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stop_token>
#include <string>

#include "kube/cluster_config.h"
#include "kube/kube_error.h"
#include "kube/kube_transport.h"
#include "kube/resource_path.h"
#include "kube/retry_policy.h"
#include "kube/token_bucket.h"
#include "kube/token_source.h"

namespace tessera::kube {

struct KubeClientOptions {
  // Client-side limit on requests (watch openings included). client-go's 5 / 10 would cap a
  // scheduler at 5 binds a second; 500 / 1000 is what the Kubernetes backend should use.
  // qps <= 0: no limit.
  double qps = 500;
  int burst = 1000;
  RetryPolicy retry;
  // Deadline of one attempt (a list of 10,000 pods is a few MB: seconds, not minutes).
  std::chrono::milliseconds request_timeout = std::chrono::seconds(30);
  // A token file is re-read when the token in hand is older than this.
  std::chrono::seconds token_max_age = std::chrono::seconds(60);
  TransportOptions transport;
  // Seed of the jitter; 0 takes one from std::random_device.
  std::uint64_t random_seed = 0;
};

enum class PatchType {
  kMerge,           // application/merge-patch+json (RFC 7386)
  kStrategicMerge,  // application/strategic-merge-patch+json (lists merged by key)
  kJsonPatch,       // application/json-patch+json (RFC 6902)
};

struct DeleteOptions {
  std::optional<std::int64_t> grace_period_seconds;  // 0: at once; unset: the object's default
  std::string propagation_policy;                    // "Background", "Foreground", "Orphan"
  // Delete only if the object still has this uid / resourceVersion (else 409 Conflict).
  std::string precondition_uid;
  std::string precondition_resource_version;

  nlohmann::json ToJson() const;
};

struct CreateOptions {
  // Given the object found under `existing_path` after a retried create got 409, says whether
  // it is the one this create made (e.g. it carries the backend's unique owner label). Set, it
  // also makes the create retryable on 5xx and transport failures.
  std::function<bool(const nlohmann::json& existing)> is_ours;
  // Where that object is read: by default the collection path + "/" + body.metadata.name. For
  // a Binding, the pod (ObjectPath(Pods, ns, name)) whose spec.nodeName is then compared.
  std::string existing_path;
};

struct KubeClientStats {
  std::int64_t attempts = 0;           // requests sent (each retry counts)
  std::int64_t retries = 0;            // attempts after the first
  std::int64_t rate_limited = 0;       // calls that waited for the token bucket
  std::int64_t token_rereads = 0;      // 401s that made the token file be read again
  std::int64_t recovered_creates = 0;  // 409s on a retried create found to be ours
};

class KubeClient {
 public:
  // kConfig when the config cannot be used (URL, TLS material, token file).
  static KubeOutcome<std::unique_ptr<KubeClient>> Create(const ClusterConfig& config,
                                                         const KubeClientOptions& options = {});

  KubeOutcome<nlohmann::json> Get(const std::string& path, std::stop_token stop = {});
  // One page: the List object ({items: […], metadata: {resourceVersion, continue}}).
  KubeOutcome<nlohmann::json> List(const std::string& collection, const ListOptions& options,
                                   std::stop_token stop = {});
  // POST to `collection` (or to an object's subresource path such as …/pods/p/binding).
  KubeOutcome<nlohmann::json> Create(const std::string& collection, const nlohmann::json& body,
                                     const CreateOptions& create = {}, std::stop_token stop = {});
  // PUT: the whole object, metadata.resourceVersion making it a compare-and-swap (409 Conflict).
  KubeOutcome<nlohmann::json> Replace(const std::string& path, const nlohmann::json& body,
                                      std::stop_token stop = {});
  KubeOutcome<nlohmann::json> Patch(const std::string& path, const nlohmann::json& patch,
                                    PatchType type = PatchType::kMerge, std::stop_token stop = {});
  // The reply: the object (still there with a deletionTimestamp during a graceful delete) or a
  // Status.
  KubeOutcome<nlohmann::json> Delete(const std::string& path, const DeleteOptions& options = {},
                                     std::stop_token stop = {});

  // Any call: `target` is path and query; `body` is sent as `content_type` when not null.
  KubeOutcome<nlohmann::json> Request(const std::string& method, const std::string& target,
                                      const nlohmann::json* body, const std::string& content_type,
                                      const CreateOptions* create, std::stop_token stop);

  // Opens `collection` + ListQuery(options) (options.watch should be set) and returns once the
  // server answered 200, its body (watch event lines) to be read; a non-200 answer is the
  // error its Status says (410 Gone for a compacted resourceVersion). Only the opening is
  // bounded by request_timeout; the reads take their own limits. Not retried here (the
  // list-watch loop has its own back-off).
  KubeOutcome<std::unique_ptr<ResponseStream>> OpenWatch(const std::string& collection,
                                                         const ListOptions& options,
                                                         std::stop_token stop = {});

  const ClusterConfig& config() const { return config_; }
  const KubeClientOptions& options() const { return options_; }
  KubeClientStats Stats() const;
  int ConnectionsOpened() const { return transport_->ConnectionsOpened(); }

 private:
  KubeClient(ClusterConfig config, KubeClientOptions options,
             std::unique_ptr<KubeTransport> transport);
  // Rate limit, token, one exchange; the reply whatever its status.
  KubeOutcome<std::unique_ptr<ResponseStream>> Open(const HttpRequest& request,
                                                    const std::stop_token& stop,
                                                    bool* token_from_file);
  KubeOutcome<HttpResponse> SendOnce(const HttpRequest& request, const std::stop_token& stop,
                                     bool* token_from_file);
  bool Sleep(std::chrono::milliseconds delay, const std::stop_token& stop);

  const ClusterConfig config_;
  const KubeClientOptions options_;
  std::unique_ptr<KubeTransport> transport_;
  TokenSource tokens_;
  TokenBucket bucket_;

  std::mutex random_mutex_;
  std::mt19937_64 random_;  // guarded by random_mutex_

  std::atomic<std::int64_t> attempts_{0};
  std::atomic<std::int64_t> retries_{0};
  std::atomic<std::int64_t> rate_limited_{0};
  std::atomic<std::int64_t> token_rereads_{0};
  std::atomic<std::int64_t> recovered_creates_{0};
};

}  // namespace tessera::kube
