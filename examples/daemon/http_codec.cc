#include "http_codec.h"

#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <utility>

namespace tesserad {
namespace {

namespace http = boost::beast::http;
using tessera::Status;
using tessera::StatusCode;

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

bool WantsBinary(const HttpRequest& request) {
  return Sv(request[http::field::accept]).find(kProtobufType) != std::string_view::npos;
}

}  // namespace

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

HttpResponse MakeResponse(const HttpRequest& request, int status, std::string_view content_type,
                          std::string body) {
  HttpResponse response{static_cast<http::status>(status), request.version()};
  response.set(http::field::server, "tesserad");
  response.set(http::field::content_type, std::string(content_type));
  response.keep_alive(request.keep_alive());
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

HttpResponse ErrorResponse(int http_status, std::string_view code, std::string_view message) {
  HttpResponse response{static_cast<http::status>(http_status), 11};
  response.set(http::field::server, "tesserad");
  response.set(http::field::content_type, std::string(kJsonType));
  response.body() =
      "{\"code\":\"" + JsonEscape(code) + "\",\"message\":\"" + JsonEscape(message) + "\"}";
  response.prepare_payload();
  return response;
}

HttpResponse ErrorFor(const HttpRequest& request, const Status& status) {
  HttpResponse response = ErrorResponse(HttpStatusFor(status.code()),
                                        tessera::StatusCodeName(status.code()), status.message());
  response.version(request.version());
  response.keep_alive(request.keep_alive());
  return response;
}

HttpResponse MethodNotAllowed(const HttpRequest& request, std::string_view allow) {
  HttpResponse response =
      ErrorResponse(405, "METHOD_NOT_ALLOWED",
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
    return MakeResponse(request, 200, kProtobufType, message.SerializeAsString());
  }
  std::string json;
  auto printed = google::protobuf::util::MessageToJsonString(message, &json);
  if (!printed.ok()) {
    return ErrorFor(request, tessera::InternalError(std::string(printed.message())));
  }
  return MakeResponse(request, 200, kJsonType, std::move(json));
}

}  // namespace tesserad
