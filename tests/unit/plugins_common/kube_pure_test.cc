// The pure parts of the Kubernetes client (plugins/common/kube): Status bodies into errors, the
// watch line splitter and event parser, the token bucket, back-off and Retry-After, the relist
// difference, and resource paths. The Status bodies are as kube-apiserver sends them (their
// shape from k8s.io/apimachinery/pkg/api/errors and the API concepts page).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "kube/kube_error.h"
#include "kube/relist_diff.h"
#include "kube/resource_path.h"
#include "kube/retry_policy.h"
#include "kube/token_bucket.h"
#include "kube/watch_event.h"

namespace tessera::kube {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::string StatusBody(int code, const std::string& reason, const std::string& message,
                       const json& details = json()) {
  json status = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason},
                 {"code", code}};
  if (!details.is_null()) status["details"] = details;
  return status.dump();
}

TEST_CASE("kube errors: Status bodies give kind, code, reason and message") {
  struct Case {
    int code;
    const char* reason;
    KubeErrorKind kind;
  };
  const std::vector<Case> cases = {
      {401, "Unauthorized", KubeErrorKind::kUnauthorized},
      {403, "Forbidden", KubeErrorKind::kForbidden},
      {404, "NotFound", KubeErrorKind::kNotFound},
      {409, "AlreadyExists", KubeErrorKind::kAlreadyExists},
      {409, "Conflict", KubeErrorKind::kConflict},
      {410, "Expired", KubeErrorKind::kGone},
      {422, "Invalid", KubeErrorKind::kInvalid},
      {429, "TooManyRequests", KubeErrorKind::kTooManyRequests},
      {500, "InternalError", KubeErrorKind::kServerError},
      {503, "ServiceUnavailable", KubeErrorKind::kServerError},
      {400, "BadRequest", KubeErrorKind::kBadRequest},
      {405, "MethodNotAllowed", KubeErrorKind::kOther},
  };
  for (const Case& c : cases) {
    CAPTURE(c.code);
    CAPTURE(c.reason);
    const KubeError error = ErrorFromReply(c.code, StatusBody(c.code, c.reason, "the message"));
    CHECK(error.kind == c.kind);
    CHECK(error.http_status == c.code);
    CHECK(error.reason == c.reason);
    CHECK(error.message == "the message");
    CHECK(error.Retryable() == (c.code == 429 || c.code >= 500));
  }
  const KubeError not_found =
      ErrorFromReply(404, StatusBody(404, "NotFound", "pods \"p-1\" not found"));
  CHECK(not_found.ToString() == "NotFound (HTTP 404): pods \"p-1\" not found");
}

TEST_CASE("kube errors: Retry-After from the header or the Status details; bodies not Status") {
  KubeError throttled = ErrorFromReply(429, StatusBody(429, "TooManyRequests", "slow down"), "3");
  REQUIRE(throttled.retry_after.has_value());
  CHECK(*throttled.retry_after == 3s);
  throttled = ErrorFromReply(
      429, StatusBody(429, "TooManyRequests", "slow down", {{"retryAfterSeconds", 7}}));
  REQUIRE(throttled.retry_after.has_value());
  CHECK(*throttled.retry_after == 7s);
  throttled = ErrorFromReply(429, "", "Wed, 21 Oct 2015 07:28:00 GMT");  // a date: not honoured
  CHECK_FALSE(throttled.retry_after.has_value());

  const KubeError gateway = ErrorFromReply(502, "<html>bad gateway</html>");
  CHECK(gateway.kind == KubeErrorKind::kServerError);
  CHECK(gateway.message == "<html>bad gateway</html>");
  CHECK(gateway.reason.empty());
  const KubeError empty = ErrorFromReply(409, "");
  CHECK(empty.kind == KubeErrorKind::kConflict);
  CHECK(empty.message == "empty reply body");
  CHECK(MakeError(KubeErrorKind::kTransport, "connecting").Retryable());
  CHECK_FALSE(MakeError(KubeErrorKind::kCancelled, "stopped").Retryable());
}

TEST_CASE("kube watch: lines split across reads, several in one read, CRLF and blank lines") {
  WatchLineSplitter splitter;
  std::vector<std::string> lines;
  const auto collect = [&lines](std::string_view line) { lines.emplace_back(line); };
  CHECK(splitter.Feed(R"({"type":"ADDED","obj)", collect));
  CHECK(lines.empty());
  CHECK(splitter.pending() == 20);
  CHECK(splitter.Feed(R"(ect":{}})", collect));
  CHECK(lines.empty());
  CHECK(splitter.Feed("\n{\"a\":1}\r\n\n  \n{\"b\"", collect));
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == R"({"type":"ADDED","object":{}})");
  CHECK(lines[1] == R"({"a":1})");
  CHECK(splitter.Feed(":2}\n", collect));
  REQUIRE(lines.size() == 3);
  CHECK(lines[2] == R"({"b":2})");
  CHECK(splitter.pending() == 0);

  WatchLineSplitter small(8);
  CHECK(small.Feed("1234", collect));
  CHECK_FALSE(small.Feed("56789", collect));
  WatchLineSplitter whole(8);
  CHECK_FALSE(whole.Feed("123456789\n", collect));
}

TEST_CASE("kube watch: events parsed; an ERROR's Status becomes the error, 410 as Gone") {
  auto added = ParseWatchEvent(
      R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p","resourceVersion":"12"}}})");
  REQUIRE(added.ok());
  CHECK(added.value().type == WatchEventType::kAdded);
  CHECK(added.value().ResourceVersion() == "12");
  auto bookmark = ParseWatchEvent(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"40"}}})");
  REQUIRE(bookmark.ok());
  CHECK(bookmark.value().type == WatchEventType::kBookmark);
  CHECK(bookmark.value().ResourceVersion() == "40");
  auto gone = ParseWatchEvent(
      R"j({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (40)","reason":"Expired","code":410}})j");
  REQUIRE(gone.ok());
  const KubeError error = WatchErrorOf(gone.value());
  CHECK(error.kind == KubeErrorKind::kGone);
  CHECK(error.http_status == 410);
  CHECK(error.reason == "Expired");
  CHECK(error.message == "too old resource version: 5 (40)");

  for (const char* bad : {"not json", "[1]", R"({"type":"ADDED"})", R"({"type":"X","object":{}})",
                          R"({"object":{}})"}) {
    CAPTURE(bad);
    auto parsed = ParseWatchEvent(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().kind == KubeErrorKind::kMalformedReply);
  }
}

TEST_CASE("kube rate limit: burst at once, then one token per 1/qps, refilled up to burst") {
  TokenBucket bucket(10, 3);
  const auto start = std::chrono::steady_clock::time_point{} + 1h;
  CHECK(bucket.Reserve(start) == 0ms);
  CHECK(bucket.Reserve(start) == 0ms);
  CHECK(bucket.Reserve(start) == 0ms);
  CHECK(bucket.Reserve(start) == 100ms);  // the 4th waits for one token at 10/s
  CHECK(bucket.Reserve(start) == 200ms);  // reservations queue behind each other
  // 0.25 s later: 2.5 tokens accrued, 2 owed: 0.5 in hand, so the next one waits 50 ms.
  CHECK(bucket.Reserve(start + 250ms) == 50ms);
  // A long quiet spell refills only up to the burst.
  const auto later = start + 1h;
  CHECK(bucket.Reserve(later) == 0ms);
  CHECK(bucket.Reserve(later) == 0ms);
  CHECK(bucket.Reserve(later) == 0ms);
  CHECK(bucket.Reserve(later) == 100ms);

  TokenBucket unlimited(0, 1);
  for (int i = 0; i < 100; ++i) CHECK(unlimited.Reserve(start) == 0ms);

  // Acquire: refuses a wait that would pass the deadline, and gives the token back.
  TokenBucket slow(1, 1);
  CHECK(slow.Acquire(std::chrono::steady_clock::time_point::max(), {}));
  CHECK_FALSE(slow.Acquire(std::chrono::steady_clock::now() + 100ms, {}));
  std::stop_source stop;
  stop.request_stop();
  CHECK_FALSE(slow.Acquire(std::chrono::steady_clock::time_point::max(), stop.get_token()));
}

TEST_CASE("kube retries: full-jitter back-off doubles to its cap; Retry-After is the floor") {
  RetryPolicy policy;
  policy.initial_backoff = 100ms;
  policy.max_backoff = 1000ms;
  policy.max_retry_after = 5s;
  CHECK(policy.Ceiling(1) == 100ms);
  CHECK(policy.Ceiling(2) == 200ms);
  CHECK(policy.Ceiling(4) == 800ms);
  CHECK(policy.Ceiling(5) == 1000ms);
  CHECK(policy.Ceiling(60) == 1000ms);

  std::mt19937_64 random(7);
  const KubeError plain = MakeError(KubeErrorKind::kServerError, "");
  std::chrono::milliseconds low = 1h, high = 0ms;
  for (int i = 0; i < 2000; ++i) {
    const auto delay = policy.Delay(3, plain, random);
    CHECK(delay >= 0ms);
    CHECK(delay <= 400ms);
    low = std::min(low, delay);
    high = std::max(high, delay);
  }
  CHECK(low < 40ms);  // spread over the whole range, not clustered at the ceiling
  CHECK(high > 360ms);

  KubeError throttled = MakeError(KubeErrorKind::kTooManyRequests, "");
  throttled.retry_after = 2s;
  for (int i = 0; i < 100; ++i) CHECK(policy.Delay(1, throttled, random) == 2s);
  throttled.retry_after = 60s;
  CHECK(policy.Delay(1, throttled, random) == 5s);  // cut to max_retry_after
}

TEST_CASE("kube retries: which verbs are resent on which errors") {
  const KubeError server = MakeError(KubeErrorKind::kServerError, "");
  const KubeError transport = MakeError(KubeErrorKind::kTransport, "");
  KubeError unsent = transport;
  unsent.unsent = true;
  const KubeError throttled = MakeError(KubeErrorKind::kTooManyRequests, "");
  const KubeError invalid = MakeError(KubeErrorKind::kInvalid, "");
  const KubeError conflict = MakeError(KubeErrorKind::kConflict, "");
  for (const char* verb : {"GET", "PUT", "PATCH", "DELETE"}) {
    CAPTURE(verb);
    CHECK(ShouldRetry(verb, server, false));
    CHECK(ShouldRetry(verb, transport, false));
    CHECK(ShouldRetry(verb, throttled, false));
    CHECK_FALSE(ShouldRetry(verb, invalid, false));
    CHECK_FALSE(ShouldRetry(verb, conflict, false));
  }
  CHECK(ShouldRetry("POST", throttled, false));
  CHECK(ShouldRetry("POST", unsent, false));
  CHECK_FALSE(ShouldRetry("POST", server, false));
  CHECK_FALSE(ShouldRetry("POST", transport, false));
  CHECK(ShouldRetry("POST", server, true));
  CHECK(ShouldRetry("POST", transport, true));
  CHECK_FALSE(ShouldRetry("POST", invalid, true));
}

json Pod(const std::string& name, const std::string& uid, const std::string& rv) {
  return {
      {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", uid}, {"resourceVersion", rv}}}};
}

std::vector<std::string> Names(const std::vector<json>& objects) {
  std::vector<std::string> names;
  for (const json& object : objects) {
    names.push_back(object["metadata"]["name"].get<std::string>() + "@" +
                    object["metadata"]["resourceVersion"].get<std::string>());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST_CASE("kube relist: the difference is what was added, changed, deleted and remade") {
  ObjectStore known;
  for (const json& pod : {Pod("same", "u1", "10"), Pod("changed", "u2", "11"),
                          Pod("gone", "u3", "12"), Pod("remade", "u4", "13")}) {
    known[ObjectKey(pod)] = pod;
  }
  const std::vector<json> listed = {Pod("same", "u1", "10"), Pod("changed", "u2", "20"),
                                    Pod("remade", "u9", "21"), Pod("new", "u5", "22")};
  const RelistDiff diff = DiffRelist(known, listed);
  CHECK(Names(diff.added) == std::vector<std::string>{"new@22", "remade@21"});
  CHECK(Names(diff.modified) == std::vector<std::string>{"changed@20"});
  CHECK(Names(diff.deleted) == std::vector<std::string>{"gone@12", "remade@13"});
  CHECK(DiffRelist(known, {Pod("same", "u1", "10"), Pod("changed", "u2", "11"),
                           Pod("gone", "u3", "12"), Pod("remade", "u4", "13")})
            .empty());
  CHECK(ObjectKey(Pod("p", "u", "1")) == "ml/p");
  CHECK(ObjectKey(json{{"metadata", {{"name", "node-1"}}}}) == "node-1");
}

TEST_CASE("kube paths: core and group resources, subresources, percent-encoded queries") {
  CHECK(CollectionPath(Resource::Pods(), "ml") == "/api/v1/namespaces/ml/pods");
  CHECK(CollectionPath(Resource::Pods(), "") == "/api/v1/pods");
  CHECK(CollectionPath(Resource::Nodes(), "ignored") == "/api/v1/nodes");
  CHECK(CollectionPath(Resource::Jobs(), "ml") == "/apis/batch/v1/namespaces/ml/jobs");
  CHECK(ObjectPath(Resource::Pods(), "ml", "p-1", "binding") ==
        "/api/v1/namespaces/ml/pods/p-1/binding");
  CHECK(ObjectPath(Resource::Pods(), "ml", "p-1", "status") ==
        "/api/v1/namespaces/ml/pods/p-1/status");
  ListOptions options;
  CHECK(ListQuery(options).empty());
  options.label_selector = "app=x,tier!=db";
  options.field_selector = "spec.nodeName=n 1";
  options.limit = 500;
  options.continue_token = "abc+/=";
  CHECK(ListQuery(options) ==
        "?labelSelector=app%3Dx%2Ctier%21%3Ddb&fieldSelector=spec.nodeName%3Dn%201&limit=500"
        "&continue=abc%2B%2F%3D");
  ListOptions watch;
  watch.watch = true;
  watch.resource_version = "41";
  watch.allow_watch_bookmarks = true;
  watch.timeout_seconds = 300;
  CHECK(ListQuery(watch) ==
        "?resourceVersion=41&watch=true&allowWatchBookmarks=true&timeoutSeconds=300");
}

}  // namespace
}  // namespace tessera::kube
