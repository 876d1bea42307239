#include "http_codec.h"

#include <google/protobuf/util/json_util.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <utility>
#include <vector>

namespace tesserad {
namespace {

namespace http = boost::beast::http;
using tessera::Status;
using tessera::StatusCode;

// The length of the well-formed UTF-8 sequence at the start of `s`, or 0 when it is not one
// (a stray continuation byte, a truncated or overlong sequence, a surrogate, past U+10FFFF).
size_t Utf8SequenceLength(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  uint32_t min = 0;
  uint32_t code = 0;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, min = 0x80, code = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, min = 0x800, code = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, min = 0x10000, code = lead & 0x07;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i) & 0x3F);
  }
  if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

// `s` as the inside of a JSON string. Bytes that are not UTF-8 (a raw path or header echoed
// into a message) become U+FFFD, so the body stays valid JSON.
std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t length = Utf8SequenceLength(s.substr(i));
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(s.substr(i, length));
        i += length;
      }
      continue;
    }
    ++i;
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
        if (c < 0x20 || c == 0x7F) {
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

// The path of the first field set in `message` (or a message inside it) that its type does not
// declare, as "task.#17"; empty when there is none.
std::string FirstUnknownField(const google::protobuf::Message& message, const std::string& path) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  const google::protobuf::UnknownFieldSet& unknown = reflection->GetUnknownFields(message);
  if (!unknown.empty()) return path + "#" + std::to_string(unknown.field(0).number());
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const std::string inner = path + field->name() + ".";
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        std::string found =
            FirstUnknownField(reflection->GetRepeatedMessage(message, field, i), inner);
        if (!found.empty()) return found;
      }
    } else {
      std::string found = FirstUnknownField(reflection->GetMessage(message, field), inner);
      if (!found.empty()) return found;
    }
  }
  return "";
}

// Checks JSON syntax only: builds nothing, so deep nesting costs no recursion.
class JsonSyntaxCheck final : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 9: ..." without the tag.
    const std::string what = error.what();
    const size_t tag_end = what.find("] ");
    error_ = tag_end == std::string::npos ? what : what.substr(tag_end + 2);
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

// Why `text` is not one JSON value under RFC 8259, or empty when it is.
std::string JsonSyntaxError(const std::string& text) {
  JsonSyntaxCheck check;
  nlohmann::json::sax_parse(text, &check);
  return check.error();
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

HttpResponse ErrorResponse(int http_status, std::string_view code, std::string_view message,
                           std::string_view field) {
  HttpResponse response{static_cast<http::status>(http_status), 11};
  response.set(http::field::server, "tesserad");
  response.set(http::field::content_type, std::string(kJsonType));
  std::string body =
      "{\"code\":\"" + JsonEscape(code) + "\",\"message\":\"" + JsonEscape(message) + "\"";
  if (!field.empty()) body += ",\"field\":\"" + JsonEscape(field) + "\"";
  response.body() = body + "}";
  response.prepare_payload();
  return response;
}

HttpResponse ErrorFor(const HttpRequest& request, const Status& status) {
  HttpResponse response =
      ErrorResponse(HttpStatusFor(status.code()), tessera::StatusCodeName(status.code()),
                    status.message(), status.field());
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

Status CheckFraming(const HttpRequest& request) {
  if (request.count(http::field::content_length) > 0 &&
      request.count(http::field::transfer_encoding) > 0) {
    return tessera::InvalidArgumentError("Content-Length together with Transfer-Encoding");
  }
  return Status::Ok();
}

bool ExpectsContinue(const HttpRequest& request) {
  return boost::beast::iequals(request[http::field::expect], "100-continue");
}

Status ParseBody(const HttpRequest& request, google::protobuf::Message* message) {
  const std::string& body = request.body();
  const std::string_view type = Sv(request[http::field::content_type]);
  if (type.substr(0, kProtobufType.size()) == kProtobufType) {
    if (!message->ParseFromString(body)) {
      return tessera::InvalidArgumentError("request body: not a valid binary " +
                                           message->GetTypeName());
    }
    if (std::string unknown = FirstUnknownField(*message, ""); !unknown.empty()) {
      return tessera::InvalidArgumentError("request body: " + message->GetTypeName() +
                                           " has no field " + unknown);
    }
    return Status::Ok();
  }
  if (body.empty()) {
    return tessera::InvalidArgumentError("request body: empty, expected a JSON " +
                                         message->GetTypeName());
  }
  // The protobuf JSON parser is lenient (it takes a trailing comma); the body must be JSON.
  if (std::string error = JsonSyntaxError(body); !error.empty()) {
    return tessera::InvalidArgumentError("request body: malformed JSON " + message->GetTypeName() +
                                         ": " + error);
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
