#include "api_client.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

namespace tessera::cli {
namespace {

namespace pb = google::protobuf;

pb::util::JsonParseOptions LenientParse() {
  pb::util::JsonParseOptions options;
  // A newer daemon may add fields; an older tessctl should still read what it knows.
  options.ignore_unknown_fields = true;
  return options;
}

CallResult Malformed(const std::string& what, const pb::util::Status& status) {
  return {ExitCode::kServerError,
          "malformed " + what + " from server: " + std::string(status.message())};
}

// tessctl speaks binary protobuf to the daemon: encoding and decoding it needs no descriptors,
// where JSON would build the descriptor pool of every message file at each start of the CLI
// (scripts start it once per command). A server that answers JSON (an older one, or an error)
// is read as JSON.
constexpr char kProtobufType[] = "application/x-protobuf";

const std::map<std::string, std::string>& BinaryReply() {
  static const std::map<std::string, std::string> headers{{"Accept", kProtobufType}};
  return headers;
}

std::map<std::string, std::string> BinaryBody() {
  return {{"Accept", kProtobufType}, {"Content-Type", kProtobufType}};
}

CallResult ParseMessage(const HttpResponse& response, const std::string& what,
                        pb::Message* message) {
  if (response.content_type.rfind(kProtobufType, 0) == 0) {
    if (!message->ParseFromString(response.body)) {
      return {ExitCode::kServerError,
              "malformed " + what + " from server: not a valid binary " + message->GetTypeName()};
    }
    return {};
  }
  const auto status = pb::util::JsonStringToMessage(response.body, message, LenientParse());
  if (!status.ok()) return Malformed(what, status);
  return {};
}

}  // namespace

ApiClient::ApiClient(HttpClient http, std::string server_url, std::chrono::milliseconds timeout)
    : http_(std::move(http)), server_url_(std::move(server_url)), timeout_(timeout) {}

HttpResponse ApiClient::Call(const std::string& method, const std::string& target,
                             const std::string& body,
                             const std::map<std::string, std::string>& headers,
                             int extra_wait_ms) const {
  return http_.Send(method, target, body, headers,
                    timeout_ + std::chrono::milliseconds(extra_wait_ms));
}

CallResult ApiClient::Check(const HttpResponse& response) const {
  if (response.status == 0) {
    return {ExitCode::kUnavailable,
            "cannot reach " + server_url_ + ": " + response.transport_error};
  }
  if (response.status >= 200 && response.status < 300) return {};
  CallResult result;
  if (response.status == 404) {
    result.code = ExitCode::kNotFound;
  } else if (response.status == 401 || response.status == 403) {
    result.code = ExitCode::kUnauthenticated;
  } else if (response.status >= 500) {
    result.code = ExitCode::kUnavailable;
  } else {
    result.code = ExitCode::kServerError;
  }
  // The server's error body is {"code": "...", "message": "..."}; show the body as is otherwise.
  pb::Struct error;
  std::string code;
  std::string message;
  if (pb::util::JsonStringToMessage(response.body, &error).ok()) {
    const auto& fields = error.fields();
    if (auto it = fields.find("code"); it != fields.end()) code = it->second.string_value();
    if (auto it = fields.find("message"); it != fields.end()) message = it->second.string_value();
  } else {
    message = response.body.substr(0, 500);
  }
  result.error = (code.empty() ? "" : code + ": ") + message + " (HTTP " +
                 std::to_string(response.status) + ")";
  return result;
}

CallResult ApiClient::SubmitJob(const v1::JobSpec& spec, const std::string& idempotency_key,
                                v1::Job* job) const {
  std::map<std::string, std::string> headers = BinaryBody();
  if (!idempotency_key.empty()) headers["Idempotency-Key"] = idempotency_key;
  const HttpResponse response = Call("POST", "/v1/jobs", spec.SerializeAsString(), headers);
  if (CallResult result = Check(response); !result.ok()) return result;
  return ParseMessage(response, "job", job);
}

CallResult ApiClient::DryRunJob(const v1::JobSpec& spec, v1::DryRunResult* result) const {
  const HttpResponse response =
      Call("POST", "/v1/jobs:dryRun", spec.SerializeAsString(), BinaryBody());
  if (CallResult checked = Check(response); !checked.ok()) return checked;
  return ParseMessage(response, "dry run", result);
}

CallResult ApiClient::GetJob(const std::string& id, v1::Job* job) const {
  const HttpResponse response = Call("GET", "/v1/jobs/" + UrlEncode(id), "", BinaryReply());
  if (CallResult result = Check(response); !result.ok()) return result;
  return ParseMessage(response, "job", job);
}

CallResult ApiClient::CancelJob(const std::string& id, v1::Job* job) const {
  const HttpResponse response =
      Call("POST", "/v1/jobs/" + UrlEncode(id) + ":cancel", "", BinaryReply());
  if (CallResult result = Check(response); !result.ok()) return result;
  return ParseMessage(response, "job", job);
}

CallResult ApiClient::ListJobs(const std::string& queue, const std::vector<std::string>& states,
                               int page_size, const std::string& page_token,
                               v1::ListJobsResponse* response) const {
  std::string query;
  auto add = [&query](const std::string& key, const std::string& value) {
    query += (query.empty() ? "?" : "&") + key + "=" + UrlEncode(value);
  };
  if (!queue.empty()) add("queue", queue);
  for (const std::string& state : states) add("state", state);
  if (page_size > 0) add("page_size", std::to_string(page_size));
  if (!page_token.empty()) add("page_token", page_token);
  const HttpResponse http_response = Call("GET", "/v1/jobs" + query, "", BinaryReply());
  if (CallResult result = Check(http_response); !result.ok()) return result;
  return ParseMessage(http_response, "job list", response);
}

CallResult ApiClient::ListQueues(std::vector<v1::Queue>* queues) const {
  const HttpResponse response = Call("GET", "/v1/queues", "", BinaryReply());
  if (CallResult result = Check(response); !result.ok()) return result;
  v1::ListQueuesResponse list;
  if (CallResult result = ParseMessage(response, "queue list", &list); !result.ok()) {
    return result;
  }
  for (v1::Queue& queue : *list.mutable_queues()) queues->push_back(std::move(queue));
  return {};
}

CallResult ApiClient::ListNodes(std::vector<v1::Node>* nodes) const {
  const HttpResponse response = Call("GET", "/v1/nodes", "", BinaryReply());
  if (CallResult result = Check(response); !result.ok()) return result;
  v1::ListNodesResponse list;
  if (CallResult result = ParseMessage(response, "node list", &list); !result.ok()) {
    return result;
  }
  for (v1::Node& node : *list.mutable_nodes()) nodes->push_back(std::move(node));
  return {};
}

CallResult ApiClient::ListBackends(std::vector<v1::Backend>* backends) const {
  const HttpResponse response = Call("GET", "/v1/backends", "", BinaryReply());
  if (CallResult result = Check(response); !result.ok()) return result;
  v1::ListBackendsResponse list;
  if (CallResult result = ParseMessage(response, "backend list", &list); !result.ok()) {
    return result;
  }
  for (v1::Backend& backend : *list.mutable_backends()) backends->push_back(std::move(backend));
  return {};
}

CallResult ApiClient::WriteQueue(const v1::QueueSpec& spec, bool create, v1::Queue* queue) const {
  const std::string body = spec.SerializeAsString();
  const HttpResponse response = create
                                    ? Call("POST", "/v1/queues", body, BinaryBody())
                                    : Call("PUT", "/v1/queues/" + spec.name(), body, BinaryBody());
  if (CallResult result = Check(response); !result.ok()) return result;
  return ParseMessage(response, "queue", queue);
}

CallResult ApiClient::DeleteQueue(const std::string& name) const {
  return Check(Call("DELETE", "/v1/queues/" + name, ""));
}

CallResult ApiClient::NodeAction(const std::string& name, const std::string& action) const {
  return Check(Call("POST", "/v1/nodes/" + UrlEncode(name) + ":" + action, ""));
}

CallResult ApiClient::Backup(const BodySink& sink) const {
  return Check(http_.Download("/v1/admin/backup", timeout_, sink));
}

CallResult ApiClient::WatchEvents(uint64_t after_seq, int max, int wait_ms,
                                  v1::WatchEventsResponse* events) const {
  const std::string target = "/v1/events?after_seq=" + std::to_string(after_seq) +
                             "&max=" + std::to_string(max) + "&wait_ms=" + std::to_string(wait_ms);
  const HttpResponse response = Call("GET", target, "", BinaryReply(), wait_ms);
  if (CallResult result = Check(response); !result.ok()) return result;
  return ParseMessage(response, "events", events);
}

}  // namespace tessera::cli
