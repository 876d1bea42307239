#include "api.h"

#include <google/protobuf/util/json_util.h>

#include <charconv>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics.h"

namespace tesserad {
namespace {

namespace http = boost::beast::http;
using tessera::Status;
using tessera::StatusCode;

constexpr std::string_view kProtobufType = "application/x-protobuf";
constexpr std::string_view kJsonType = "application/json";
// Longest an event long poll waits, whatever the client asks.
constexpr std::chrono::milliseconds kMaxEventWait{60000};

// Boost 1.74's Beast has its own string_view.
std::string_view Sv(boost::beast::string_view s) { return {s.data(), s.size()}; }

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kResourceExhausted:
      return 507;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out;
}

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int value = 0;
      auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, value, 16);
      if (ec == std::errc() && p == s.data() + i + 3) {
        out.push_back(static_cast<char>(value));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && s[i] == '+' ? ' ' : s[i]);
  }
  return out;
}

using Query = std::multimap<std::string, std::string, std::less<>>;

Query ParseQuery(std::string_view query) {
  Query params;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq), true);
    std::string value =
        eq == std::string_view::npos ? std::string() : PercentDecode(pair.substr(eq + 1), true);
    params.emplace(std::move(key), std::move(value));
  }
  return params;
}

std::optional<std::string> First(const Query& query, std::string_view key) {
  auto it = query.find(key);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

template <typename Int>
tessera::StatusOr<Int> QueryInt(const Query& query, std::string_view key, Int fallback) {
  auto text = First(query, key);
  if (!text) return fallback;
  Int value{};
  auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || p != text->data() + text->size()) {
    return tessera::InvalidArgumentError(std::string(key) + ": not an integer: \"" + *text + "\"");
  }
  return value;
}

HttpResponse Make(const HttpRequest& request, int status, std::string_view content_type,
                  std::string body) {
  HttpResponse response{static_cast<http::status>(status), request.version()};
  response.set(http::field::server, "tesserad");
  response.set(http::field::content_type, std::string(content_type));
  response.keep_alive(request.keep_alive());
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

HttpResponse ErrorFor(const HttpRequest& request, const Status& status) {
  HttpResponse response = Api::Error(HttpStatusFor(status.code()),
                                     tessera::StatusCodeName(status.code()), status.message());
  response.version(request.version());
  response.keep_alive(request.keep_alive());
  return response;
}

bool WantsBinary(const HttpRequest& request) {
  return Sv(request[http::field::accept]).find(kProtobufType) != std::string_view::npos;
}

Status ParseBody(const HttpRequest& request, google::protobuf::Message* message) {
  const std::string& body = request.body();
  const std::string_view type = Sv(request[http::field::content_type]);
  if (type.substr(0, kProtobufType.size()) == kProtobufType) {
    if (!message->ParseFromString(body)) {
      return tessera::InvalidArgumentError("request body: not a valid binary " +
                                           message->GetTypeName());
    }
    return Status::Ok();
  }
  if (body.empty()) {
    return tessera::InvalidArgumentError("request body: empty, expected a JSON " +
                                         message->GetTypeName());
  }
  auto parsed = google::protobuf::util::JsonStringToMessage(body, message);
  if (!parsed.ok()) {
    return tessera::InvalidArgumentError("request body: malformed JSON " + message->GetTypeName() +
                                         ": " + std::string(parsed.message()));
  }
  return Status::Ok();
}

HttpResponse Reply(const HttpRequest& request, const google::protobuf::Message& message) {
  if (WantsBinary(request)) {
    return Make(request, 200, kProtobufType, message.SerializeAsString());
  }
  std::string json;
  auto printed = google::protobuf::util::MessageToJsonString(message, &json);
  if (!printed.ok()) {
    return ErrorFor(request, tessera::InternalError(std::string(printed.message())));
  }
  return Make(request, 200, kJsonType, std::move(json));
}

// {"<field>":[...]}, or in binary the wire form of a message whose field 1 is `repeated T`.
template <typename T>
HttpResponse ReplyList(const HttpRequest& request, std::string_view field,
                       const std::vector<T>& items) {
  std::string body;
  if (WantsBinary(request)) {
    for (const T& item : items) {
      std::string bytes = item.SerializeAsString();
      body.push_back('\x0a');  // field 1, length-delimited.
      for (uint64_t n = bytes.size();; n >>= 7) {
        if (n < 0x80) {
          body.push_back(static_cast<char>(n));
          break;
        }
        body.push_back(static_cast<char>((n & 0x7f) | 0x80));
      }
      body += bytes;
    }
    return Make(request, 200, kProtobufType, std::move(body));
  }
  body = "{\"";
  body += field;
  body += "\":[";
  for (size_t i = 0; i < items.size(); ++i) {
    std::string json;
    auto printed = google::protobuf::util::MessageToJsonString(items[i], &json);
    if (!printed.ok()) {
      return ErrorFor(request, tessera::InternalError(std::string(printed.message())));
    }
    if (i > 0) body += ',';
    body += json;
  }
  body += "]}";
  return Make(request, 200, kJsonType, std::move(body));
}

HttpResponse MethodNotAllowed(const HttpRequest& request, std::string_view allow) {
  HttpResponse response =
      Api::Error(405, "METHOD_NOT_ALLOWED",
                 std::string(Sv(request.method_string())) + " " +
                     std::string(Sv(request.target())) + ": allowed: " + std::string(allow));
  response.version(request.version());
  response.keep_alive(request.keep_alive());
  response.set(http::field::allow, std::string(allow));
  return response;
}

HttpResponse Forbidden(const HttpRequest& request, const std::string& what) {
  return ErrorFor(request, tessera::PermissionDeniedError(what));
}

// Routes one authenticated request; `principal` decides what it may see and change.
class Router {
 public:
  Router(tessera::Scheduler& scheduler, const tessera::v1::DaemonConfig& config,
         const std::atomic<bool>& stopping, const HttpRequest& request, Principal principal)
      : scheduler_(scheduler),
        config_(config),
        stopping_(stopping),
        request_(request),
        principal_(std::move(principal)) {}

  HttpResponse Route(std::string_view path, const Query& query) {
    const http::verb method = request_.method();
    if (path == "/metrics") {
      if (method != http::verb::get) return MethodNotAllowed(request_, "GET");
      return Make(request_, 200, "text/plain; version=0.0.4; charset=utf-8",
                  RenderMetrics(scheduler_, config_));
    }
    if (path == "/v1/jobs") {
      if (method == http::verb::get) return ListJobs(query);
      if (method == http::verb::post) return Submit();
      return MethodNotAllowed(request_, "GET, POST");
    }
    if (path.substr(0, 9) == "/v1/jobs/") return JobRoute(path.substr(9));
    if (path == "/v1/queues") {
      if (method == http::verb::get) return ListQueues();
      if (method == http::verb::post) return WriteQueue("");
      return MethodNotAllowed(request_, "GET, POST");
    }
    if (path.substr(0, 11) == "/v1/queues/" && path.size() > 11) {
      return QueueRoute(PercentDecode(path.substr(11), false));
    }
    if (path == "/v1/nodes") {
      if (method != http::verb::get) return MethodNotAllowed(request_, "GET");
      auto nodes = scheduler_.ListNodes();
      if (!nodes.ok()) return ErrorFor(request_, nodes.status());
      return ReplyList(request_, "nodes", *nodes);
    }
    if (path.substr(0, 10) == "/v1/nodes/" && path.size() > 10) {
      return NodeRoute(PercentDecode(path.substr(10), false));
    }
    if (path == "/v1/events") {
      if (method != http::verb::get) return MethodNotAllowed(request_, "GET");
      return WatchEvents(query);
    }
    return ErrorFor(request_, tessera::NotFoundError("no route for " + std::string(path)));
  }

 private:
  HttpResponse Submit() {
    tessera::v1::JobSpec spec;
    if (Status s = ParseBody(request_, &spec); !s.ok()) return ErrorFor(request_, s);
    if (!principal_.Owns(spec.queue())) {
      return Forbidden(request_, "queue \"" + spec.queue() + "\" is outside the token's queues \"" +
                                     principal_.queue_prefix + "\"");
    }
    tessera::SubmitOptions options;
    options.idempotency_key = std::string(Sv(request_["Idempotency-Key"]));
    auto job = scheduler_.Submit(spec, options);
    if (!job.ok()) return ErrorFor(request_, job.status());
    return Reply(request_, *job);
  }

  HttpResponse JobRoute(std::string_view rest) {
    bool cancel = false;
    constexpr std::string_view kCancel = ":cancel";
    if (rest.size() > kCancel.size() && rest.substr(rest.size() - kCancel.size()) == kCancel) {
      cancel = true;
      rest.remove_suffix(kCancel.size());
    }
    tessera::JobId id = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), id);
    if (ec != std::errc() || p != rest.data() + rest.size()) {
      return ErrorFor(request_, tessera::NotFoundError("no job \"" + std::string(rest) + "\""));
    }
    if (cancel && request_.method() != http::verb::post) return MethodNotAllowed(request_, "POST");
    if (!cancel && request_.method() != http::verb::get) return MethodNotAllowed(request_, "GET");
    auto job = scheduler_.GetJob(id);
    if (!job.ok()) return ErrorFor(request_, job.status());
    // Another tenant's job does not exist as far as this caller can tell.
    if (!principal_.Owns(job->spec().queue())) {
      return ErrorFor(request_, tessera::NotFoundError("job " + std::to_string(id) + " not found"));
    }
    if (!cancel) return Reply(request_, *job);
    auto cancelled = scheduler_.Cancel(id);
    if (!cancelled.ok()) return ErrorFor(request_, cancelled.status());
    return Reply(request_, *cancelled);
  }

  HttpResponse ListJobs(const Query& query) {
    tessera::v1::ListJobsRequest list;
    list.set_queue(First(query, "queue").value_or(""));
    for (auto [it, end] = query.equal_range("state"); it != end; ++it) {
      std::string_view states = it->second;
      while (!states.empty()) {
        size_t comma = states.find(',');
        std::string name(states.substr(0, comma));
        states = comma == std::string_view::npos ? std::string_view() : states.substr(comma + 1);
        tessera::v1::JobState state;
        if (!tessera::v1::JobState_Parse(name, &state)) {
          return ErrorFor(
              request_, tessera::InvalidArgumentError("state: unknown job state \"" + name + "\""));
        }
        list.add_states(state);
      }
    }
    for (auto [it, end] = query.equal_range("label"); it != end; ++it) {
      size_t eq = it->second.find('=');
      if (eq == std::string::npos) {
        return ErrorFor(request_, tessera::InvalidArgumentError(
                                      "label: expected key=value, got \"" + it->second + "\""));
      }
      (*list.mutable_labels())[it->second.substr(0, eq)] = it->second.substr(eq + 1);
    }
    auto page_size = QueryInt<int32_t>(query, "page_size", 0);
    if (!page_size.ok()) return ErrorFor(request_, page_size.status());
    list.set_page_size(*page_size);
    list.set_page_token(First(query, "page_token").value_or(""));
    if (!principal_.admin) {
      const std::string& prefix = principal_.queue_prefix;
      if (list.queue().empty()) {
        // The tenant's whole subtree: its prefix is either a leaf (exact match) or has children
        // (a subtree filter); a queue holding jobs cannot have children.
        auto queues = scheduler_.ListQueues();
        if (!queues.ok()) return ErrorFor(request_, queues.status());
        bool has_children = false;
        for (const auto& q : *queues) {
          if (q.spec().name().size() > prefix.size() && principal_.Owns(q.spec().name())) {
            has_children = true;
          }
        }
        list.set_queue(has_children ? prefix + "/" : prefix);
      } else {
        std::string_view queue = list.queue();
        if (queue.back() == '/') queue.remove_suffix(1);
        if (!principal_.Owns(queue)) {
          return Forbidden(request_, "queue \"" + list.queue() +
                                         "\" is outside the token's queues \"" + prefix + "\"");
        }
      }
    }
    auto jobs = scheduler_.ListJobs(list);
    if (!jobs.ok()) return ErrorFor(request_, jobs.status());
    return Reply(request_, *jobs);
  }

  HttpResponse ListQueues() {
    auto queues = scheduler_.ListQueues();
    if (!queues.ok()) return ErrorFor(request_, queues.status());
    std::vector<tessera::v1::Queue> visible;
    for (auto& q : *queues) {
      if (principal_.Owns(q.spec().name())) visible.push_back(std::move(q));
    }
    return ReplyList(request_, "queues", visible);
  }

  HttpResponse QueueRoute(const std::string& name) {
    switch (request_.method()) {
      case http::verb::get: {
        if (!principal_.Owns(name)) {
          return ErrorFor(request_, tessera::NotFoundError("queue \"" + name + "\" not found"));
        }
        auto queue = scheduler_.GetQueue(name);
        if (!queue.ok()) return ErrorFor(request_, queue.status());
        return Reply(request_, *queue);
      }
      case http::verb::put:
        return WriteQueue(name);
      case http::verb::delete_: {
        if (!principal_.admin) return Forbidden(request_, "only an admin token may delete queues");
        if (Status s = scheduler_.DeleteQueue(name); !s.ok()) return ErrorFor(request_, s);
        return Make(request_, 200, kJsonType, "{}");
      }
      default:
        return MethodNotAllowed(request_, "GET, PUT, DELETE");
    }
  }

  // POST /v1/queues (path_name empty) creates; PUT /v1/queues/{name} updates.
  HttpResponse WriteQueue(const std::string& path_name) {
    if (!principal_.admin) return Forbidden(request_, "only an admin token may change queues");
    tessera::v1::QueueSpec spec;
    if (Status s = ParseBody(request_, &spec); !s.ok()) return ErrorFor(request_, s);
    if (!path_name.empty()) {
      if (spec.name().empty()) spec.set_name(path_name);
      if (spec.name() != path_name) {
        return ErrorFor(request_, tessera::InvalidArgumentError("name: \"" + spec.name() +
                                                                "\" differs from the path's \"" +
                                                                path_name + "\""));
      }
    }
    Status s = path_name.empty() ? scheduler_.CreateQueue(spec) : scheduler_.UpdateQueue(spec);
    if (!s.ok()) return ErrorFor(request_, s);
    auto queue = scheduler_.GetQueue(spec.name());
    if (!queue.ok()) return ErrorFor(request_, queue.status());
    return Reply(request_, *queue);
  }

  HttpResponse NodeRoute(std::string_view rest) {
    size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) {
      return ErrorFor(request_, tessera::NotFoundError("no route for node \"" + std::string(rest) +
                                                       "\" (expected :cordon, :drain, :uncordon)"));
    }
    const std::string name(rest.substr(0, colon));
    const std::string_view verb = rest.substr(colon + 1);
    if (verb != "cordon" && verb != "drain" && verb != "uncordon") {
      return ErrorFor(request_,
                      tessera::NotFoundError("no node action \"" + std::string(verb) + "\""));
    }
    if (request_.method() != http::verb::post) return MethodNotAllowed(request_, "POST");
    if (!principal_.admin) return Forbidden(request_, "only an admin token may change nodes");
    Status s = verb == "drain" ? scheduler_.DrainNode(name)
                               : scheduler_.CordonNode(name, verb == "cordon");
    if (!s.ok()) return ErrorFor(request_, s);
    auto nodes = scheduler_.ListNodes();
    if (!nodes.ok()) return ErrorFor(request_, nodes.status());
    for (const auto& node : *nodes) {
      if (node.spec().name() == name) return Reply(request_, node);
    }
    return ErrorFor(request_, tessera::NotFoundError("node \"" + name + "\" not found"));
  }

  HttpResponse WatchEvents(const Query& query) {
    auto after = QueryInt<uint64_t>(query, "after_seq", 0);
    if (!after.ok()) return ErrorFor(request_, after.status());
    auto max = QueryInt<int>(query, "max", 100);
    if (!max.ok()) return ErrorFor(request_, max.status());
    auto wait_ms = QueryInt<int64_t>(query, "wait_ms", 0);
    if (!wait_ms.ok()) return ErrorFor(request_, wait_ms.status());
    if (*max < 1 || *max > 1000) {
      return ErrorFor(request_, tessera::InvalidArgumentError("max: must be in 1..1000, got " +
                                                              std::to_string(*max)));
    }
    if (*wait_ms < 0) {
      return ErrorFor(request_, tessera::InvalidArgumentError("wait_ms: must be >= 0"));
    }
    using Clock = std::chrono::steady_clock;
    const auto deadline =
        Clock::now() + std::min(std::chrono::milliseconds(*wait_ms), kMaxEventWait);
    uint64_t cursor = *after;
    std::vector<tessera::v1::Event> visible;
    // Waits in short slices so that SIGTERM need not wait for a long poll to run out.
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto slice = std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(200));
      auto events = scheduler_.WatchEvents(cursor, *max, slice);
      if (!events.ok()) return ErrorFor(request_, events.status());
      for (auto& event : *events) {
        cursor = event.seq();
        if (principal_.admin || (!event.queue().empty() && principal_.Owns(event.queue()))) {
          visible.push_back(std::move(event));
        }
      }
      if (!visible.empty() || Clock::now() >= deadline || stopping_.load()) break;
    }
    return ReplyList(request_, "events", visible);
  }

  tessera::Scheduler& scheduler_;
  const tessera::v1::DaemonConfig& config_;
  const std::atomic<bool>& stopping_;
  const HttpRequest& request_;
  const Principal principal_;
};

}  // namespace

Api::Api(tessera::Scheduler* scheduler, tessera::v1::DaemonConfig config,
         const std::atomic<bool>* stopping)
    : scheduler_(scheduler),
      config_(std::move(config)),
      auth_(config_.auth()),
      stopping_(stopping) {}

HttpResponse Api::Error(int http_status, std::string_view code, std::string_view message) {
  HttpResponse response{static_cast<http::status>(http_status), 11};
  response.set(http::field::server, "tesserad");
  response.set(http::field::content_type, std::string(kJsonType));
  response.body() =
      "{\"code\":\"" + JsonEscape(code) + "\",\"message\":\"" + JsonEscape(message) + "\"}";
  response.prepare_payload();
  return response;
}

HttpResponse Api::Handle(const HttpRequest& request) {
  std::string_view target = Sv(request.target());
  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const Query query = ParseQuery(question == std::string_view::npos ? std::string_view()
                                                                    : target.substr(question + 1));

  if (path == "/healthz" || path == "/readyz") {
    if (request.method() != http::verb::get) return MethodNotAllowed(request, "GET");
    if (path == "/readyz" && stopping_->load()) {
      return ErrorFor(request, tessera::UnavailableError("shutting down"));
    }
    return Make(request, 200, "text/plain", "ok\n");
  }
  auto principal = auth_.Authenticate(Sv(request[http::field::authorization]));
  if (!principal) {
    HttpResponse response = Error(401, "UNAUTHENTICATED",
                                  request[http::field::authorization].empty()
                                      ? "missing Authorization: Bearer <token> header"
                                      : "unknown or malformed bearer token");
    response.version(request.version());
    response.keep_alive(request.keep_alive());
    response.set(http::field::www_authenticate, "Bearer");
    return response;
  }
  Router router(*scheduler_, config_, *stopping_, request, std::move(*principal));
  return router.Route(path, query);
}

}  // namespace tesserad
