#include "kube/kube_client.h"

#include <condition_variable>

namespace tessera::kube {
namespace {

using json = nlohmann::json;

std::string_view PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kJsonPatch:
      return "application/json-patch+json";
  }
  return "application/merge-patch+json";
}

KubeError Cancelled(const std::string& method, const std::string& target) {
  return MakeError(KubeErrorKind::kCancelled, method + " " + target + ": stopped by the caller");
}

}  // namespace

json DeleteOptions::ToJson() const {
  json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (grace_period_seconds) body["gracePeriodSeconds"] = *grace_period_seconds;
  if (!propagation_policy.empty()) body["propagationPolicy"] = propagation_policy;
  if (!precondition_uid.empty()) body["preconditions"]["uid"] = precondition_uid;
  if (!precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = precondition_resource_version;
  }
  return body;
}

KubeClient::KubeClient(ClusterConfig config, KubeClientOptions options,
                       std::unique_ptr<KubeTransport> transport)
    : config_(std::move(config)),
      options_(std::move(options)),
      transport_(std::move(transport)),
      tokens_(config_.token, config_.token_file, options_.token_max_age),
      bucket_(options_.qps, options_.burst),
      random_(options_.random_seed != 0 ? options_.random_seed : std::random_device{}()) {}

KubeOutcome<std::unique_ptr<KubeClient>> KubeClient::Create(const ClusterConfig& config,
                                                            const KubeClientOptions& options) {
  auto transport = KubeTransport::Create(config, options.transport);
  if (!transport.ok()) return transport.error();
  std::unique_ptr<KubeClient> client(new KubeClient(config, options, std::move(transport).value()));
  if (auto token = client->tokens_.Token(); !token.ok()) return token.error();
  return client;
}

KubeClientStats KubeClient::Stats() const {
  KubeClientStats stats;
  stats.attempts = attempts_.load();
  stats.retries = retries_.load();
  stats.rate_limited = rate_limited_.load();
  stats.token_rereads = token_rereads_.load();
  stats.recovered_creates = recovered_creates_.load();
  return stats;
}

bool KubeClient::Sleep(std::chrono::milliseconds delay, const std::stop_token& stop) {
  std::mutex mutex;
  std::condition_variable_any woken;
  std::unique_lock<std::mutex> lock(mutex);
  woken.wait_for(lock, stop, delay, [] { return false; });
  return !stop.stop_requested();
}

KubeOutcome<std::unique_ptr<ResponseStream>> KubeClient::Open(const HttpRequest& request,
                                                              const std::stop_token& stop,
                                                              bool* token_from_file) {
  const auto limits = CallLimits::Within(options_.request_timeout, stop);
  bool waited = false;
  const bool admitted = bucket_.Acquire(limits.deadline, stop, &waited);
  if (waited) rate_limited_.fetch_add(1);
  if (!admitted) {
    if (stop.stop_requested()) return Cancelled(request.method, request.target);
    return MakeError(KubeErrorKind::kTransport,
                     request.method + " " + request.target +
                         ": the client-side rate limit would pass the deadline");
  }
  auto token = tokens_.Token();
  if (!token.ok()) return token.error();
  *token_from_file = !config_.token_file.empty();
  HttpRequest sent = request;
  sent.headers.emplace_back("Accept", "application/json");
  if (!token.value().empty()) sent.headers.emplace_back("Authorization", "Bearer " + token.value());
  attempts_.fetch_add(1);
  return transport_->OpenStream(sent, limits);
}

KubeOutcome<HttpResponse> KubeClient::SendOnce(const HttpRequest& request,
                                               const std::stop_token& stop, bool* token_from_file) {
  auto stream = Open(request, stop, token_from_file);
  if (!stream.ok()) return stream.error();
  constexpr std::size_t kMaxReply = 512u * 1024 * 1024;
  auto body =
      stream.value()->ReadAll(CallLimits::Within(options_.request_timeout, stop), kMaxReply);
  if (!body.ok()) return body.error();
  HttpResponse response = stream.value()->head();
  response.body = std::move(body).value();
  return response;
}

KubeOutcome<json> KubeClient::Request(const std::string& method, const std::string& target,
                                      const json* body, const std::string& content_type,
                                      const CreateOptions* create, std::stop_token stop) {
  HttpRequest request;
  request.method = method;
  request.target = target;
  if (body != nullptr) {
    request.body = body->dump();
    request.headers.emplace_back("Content-Type", content_type);
  }
  const bool recoverable_create = create != nullptr && static_cast<bool>(create->is_ours);
  bool reread_token = false;
  bool earlier_attempt_failed = false;
  for (int attempt = 1;; ++attempt) {
    if (attempt > 1) retries_.fetch_add(1);
    bool token_from_file = false;
    auto reply = SendOnce(request, stop, &token_from_file);
    KubeError error;
    if (reply.ok()) {
      const HttpResponse& response = reply.value();
      if (response.status >= 200 && response.status <= 299) {
        if (response.body.empty()) return json::object();
        json parsed = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
        if (parsed.is_discarded()) {
          return MakeError(KubeErrorKind::kMalformedReply,
                           method + " " + target + ": reply is not JSON");
        }
        return parsed;
      }
      error = ErrorFromReply(response.status, response.body, response.Header("Retry-After"));
    } else {
      error = reply.error();
    }
    if (error.kind == KubeErrorKind::kCancelled) return error;
    if (error.kind == KubeErrorKind::kUnauthorized && token_from_file && !reread_token) {
      // The token file may have rotated under us: read it now and try once more.
      reread_token = true;
      tokens_.Invalidate();
      token_rereads_.fetch_add(1);
      --attempt;
      continue;
    }
    if (method == "POST" && earlier_attempt_failed && recoverable_create &&
        (error.kind == KubeErrorKind::kAlreadyExists || error.kind == KubeErrorKind::kConflict)) {
      std::string existing = create->existing_path;
      if (existing.empty() && body != nullptr) {
        existing = target.substr(0, target.find('?')) + "/" +
                   PercentEncode(body->value("/metadata/name"_json_pointer, std::string()));
      }
      auto found = Get(existing, stop);
      if (found.ok() && create->is_ours(found.value())) {
        recovered_creates_.fetch_add(1);
        return found;
      }
      return error;
    }
    if (attempt >= options_.retry.max_attempts || !ShouldRetry(method, error, recoverable_create)) {
      return error;
    }
    earlier_attempt_failed = true;
    std::chrono::milliseconds delay;
    {
      std::lock_guard<std::mutex> lock(random_mutex_);
      delay = options_.retry.Delay(attempt, error, random_);
    }
    if (!Sleep(delay, stop)) return Cancelled(method, target);
  }
}

KubeOutcome<json> KubeClient::Get(const std::string& path, std::stop_token stop) {
  return Request("GET", path, nullptr, "", nullptr, stop);
}

KubeOutcome<json> KubeClient::List(const std::string& collection, const ListOptions& options,
                                   std::stop_token stop) {
  return Request("GET", collection + ListQuery(options), nullptr, "", nullptr, stop);
}

KubeOutcome<json> KubeClient::Create(const std::string& collection, const json& body,
                                     const CreateOptions& create, std::stop_token stop) {
  return Request("POST", collection, &body, "application/json", &create, stop);
}

KubeOutcome<json> KubeClient::Replace(const std::string& path, const json& body,
                                      std::stop_token stop) {
  return Request("PUT", path, &body, "application/json", nullptr, stop);
}

KubeOutcome<json> KubeClient::Patch(const std::string& path, const json& patch, PatchType type,
                                    std::stop_token stop) {
  return Request("PATCH", path, &patch, std::string(PatchContentType(type)), nullptr, stop);
}

KubeOutcome<json> KubeClient::Delete(const std::string& path, const DeleteOptions& options,
                                     std::stop_token stop) {
  const json body = options.ToJson();
  return Request("DELETE", path, &body, "application/json", nullptr, stop);
}

KubeOutcome<std::unique_ptr<ResponseStream>> KubeClient::OpenWatch(const std::string& collection,
                                                                   const ListOptions& options,
                                                                   std::stop_token stop) {
  HttpRequest request;
  request.target = collection + ListQuery(options);
  for (bool reread_token = false;;) {
    bool token_from_file = false;
    auto stream = Open(request, stop, &token_from_file);
    if (!stream.ok()) return stream.error();
    const int status = stream.value()->status();
    if (status == 200) return stream;
    auto body =
        stream.value()->ReadAll(CallLimits::Within(options_.request_timeout, stop), 1024 * 1024);
    KubeError error = ErrorFromReply(status, body.ok() ? body.value() : std::string(),
                                     stream.value()->head().Header("Retry-After"));
    if (error.kind == KubeErrorKind::kUnauthorized && token_from_file && !reread_token) {
      reread_token = true;
      tokens_.Invalidate();
      token_rereads_.fetch_add(1);
      continue;
    }
    return error;
  }
}

}  // namespace tessera::kube
