// tesserad's HTTP edge cases through its real binary: every malformed request gets a status
// and a valid JSON error body (400, 408, 431) instead of a dropped connection, Expect:
// 100-continue is answered, and request bodies are parsed strictly (no unknown binary fields,
// no trailing commas).
#include <google/protobuf/unknown_field_set.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "daemon/daemon_harness.h"
#include "tessera/v1/job.pb.h"

namespace {

using namespace tesserad_test;
using std::chrono::milliseconds;

constexpr const char* kAdmin = "admin-secret";

std::string WriteConfig(const ScratchDir& dir) {
  const std::string path = dir.File("tesserad.yaml");
  std::ofstream config(path);
  config << "store:\n  path: " << dir.File("tessera.db") << "\n"
         << "server:\n  listen: 127.0.0.1:0\n  request_timeout_ms: 500\n"
         << "  max_header_bytes: 8192\n"
         << "auth:\n  tokens:\n    - {name: admin, admin: true, sha256: " << Sha256(kAdmin)
         << "}\n";
  return path;
}

// Sends `bytes` on a new connection and returns the response.
std::string Exchange(unsigned short port, const std::string& bytes) {
  RawConnection connection(port);
  REQUIRE(connection.connected());
  connection.Send(bytes);
  return connection.ReadResponse();
}

// Checks that `raw` is a `status` response with a valid JSON error body of `code`.
void CheckError(const std::string& raw, int status, const std::string& code) {
  INFO("response: ", raw);
  CHECK(StatusOf(raw) == status);
  const std::string body = BodyOf(raw);
  CHECK(nlohmann::json::accept(body));
  CHECK(body.find("\"code\":\"" + code + "\"") != std::string::npos);
}

const std::string kAuth = std::string("Authorization: Bearer ") + kAdmin + "\r\n";

TEST_CASE("tesserad answers malformed HTTP with 400, 408 and 431 and a JSON body") {
  const ScratchDir dir("http-edges");
  DaemonProcess daemon(WriteConfig(dir));
  const unsigned short port = daemon.port();

  SUBCASE("garbage") {
    CheckError(Exchange(port, std::string("\x01\x02 garbage \xff\r\n\r\n")), 400, "BAD_REQUEST");
  }
  SUBCASE("a header over server.max_header_bytes: 431") {
    const std::string raw = Exchange(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                               std::string(100 * 1024, 'a') + "\r\n\r\n");
    CheckError(raw, 431, "REQUEST_HEADER_FIELDS_TOO_LARGE");
    CHECK(BodyOf(raw).find("server.max_header_bytes (8192 bytes)") != std::string::npos);
  }
  SUBCASE("Content-Length together with Transfer-Encoding") {
    CheckError(Exchange(port,
                        "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
               400, "BAD_REQUEST");
    const std::string gzip =
        Exchange(port,
                 "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n"
                 "Content-Length: 2\r\n\r\n{}");
    CheckError(gzip, 400, "BAD_REQUEST");
    CHECK(BodyOf(gzip).find("Content-Length together with Transfer-Encoding") != std::string::npos);
  }
  SUBCASE("a negative Content-Length") {
    CheckError(Exchange(port, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"),
               400, "BAD_REQUEST");
  }
  SUBCASE("a NUL in a header") {
    CheckError(
        Exchange(port, std::string("GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n", 45)),
        400, "BAD_REQUEST");
  }
  SUBCASE("a request not complete within server.request_timeout_ms: 408") {
    RawConnection slow(port);
    slow.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n");  // and nothing more.
    const std::string raw = slow.ReadResponse();
    CheckError(raw, 408, "REQUEST_TIMEOUT");
    CHECK(BodyOf(raw).find("server.request_timeout_ms (500 ms)") != std::string::npos);
  }
  SUBCASE("an idle keep-alive connection is closed without a response") {
    RawConnection idle(port);
    CHECK(idle.PeerClosed());
  }
  SUBCASE("bytes that are not UTF-8 are not echoed raw into the JSON body") {
    const std::string raw =
        Exchange(port, "GET /v1/\xff\xfe\xc0\xaf HTTP/1.1\r\nHost: x\r\n" + kAuth + "\r\n");
    CheckError(raw, 404, "NOT_FOUND");
    CHECK(BodyOf(raw).find("\\ufffd") != std::string::npos);
  }
  SUBCASE("the daemon still serves after all that") {
    CHECK(Call(port, http::verb::get, "/healthz").status == 200);
  }
}

TEST_CASE("tesserad answers Expect: 100-continue before the client sends the body") {
  const ScratchDir dir("http-continue");
  DaemonProcess daemon(WriteConfig(dir));
  const std::string body = R"({"name":"research"})";
  RawConnection connection(daemon.port());
  connection.Send("POST /v1/queues HTTP/1.1\r\nHost: x\r\n" + kAuth +
                  "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n");
  const std::string interim = connection.ReadResponse();
  CHECK(StatusOf(interim) == 100);
  connection.Send(body);
  CHECK(StatusOf(connection.ReadResponse()) == 200);
}

TEST_CASE("tesserad parses request bodies strictly") {
  const ScratchDir dir("http-strict");
  DaemonProcess daemon(WriteConfig(dir));

  SUBCASE("binary protobuf with a field the message does not declare: 400 naming it") {
    tessera::v1::JobSpec spec;
    spec.set_queue("default");
    spec.mutable_task()->set_cpu_milli(100);
    spec.mutable_task()->set_memory_mib(64);
    const std::string valid = spec.SerializeAsString();
    // Field 999, varint 1: tag (999 << 3 | 0) as a varint, then the value.
    const std::string unknown_field = std::string("\xb8\x3e\x01", 3);
    for (const auto& [bytes, named] :
         std::vector<std::pair<std::string, std::string>>{{valid + unknown_field, "#999"}}) {
      RawConnection connection(daemon.port());
      connection.Send("POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + kAuth +
                      "Content-Type: application/x-protobuf\r\nContent-Length: " +
                      std::to_string(bytes.size()) + "\r\n\r\n" + bytes);
      const std::string raw = connection.ReadResponse();
      CheckError(raw, 400, "INVALID_ARGUMENT");
      CHECK(BodyOf(raw).find("has no field " + named) != std::string::npos);
    }
    // The same message without the extra field is accepted.
    RawConnection connection(daemon.port());
    connection.Send("POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + kAuth +
                    "Content-Type: application/x-protobuf\r\nContent-Length: " +
                    std::to_string(valid.size()) + "\r\n\r\n" + valid);
    CHECK(StatusOf(connection.ReadResponse()) == 200);
  }
  SUBCASE("binary protobuf with an unknown field inside a nested message") {
    tessera::v1::JobSpec spec;
    spec.set_queue("default");
    spec.mutable_task()->set_cpu_milli(100);
    spec.mutable_task()
        ->GetReflection()
        ->MutableUnknownFields(spec.mutable_task())
        ->AddVarint(999, 1);
    const std::string bytes = spec.SerializeAsString();
    RawConnection connection(daemon.port());
    connection.Send("POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + kAuth +
                    "Content-Type: application/x-protobuf\r\nContent-Length: " +
                    std::to_string(bytes.size()) + "\r\n\r\n" + bytes);
    const std::string raw = connection.ReadResponse();
    CheckError(raw, 400, "INVALID_ARGUMENT");
    CHECK(BodyOf(raw).find("has no field task.#999") != std::string::npos);
  }
  SUBCASE("JSON with a trailing comma: 400") {
    Reply reply =
        Call(daemon.port(), http::verb::post, "/v1/queues", R"({"name":"research",})", kAdmin);
    CHECK(reply.status == 400);
    CHECK(nlohmann::json::accept(reply.body));
    CHECK(reply.body.find("malformed JSON") != std::string::npos);
    CHECK(Call(daemon.port(), http::verb::get, "/v1/queues/research", "", kAdmin).status == 404);
  }
}

}  // namespace
