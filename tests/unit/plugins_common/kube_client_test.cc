// The Kubernetes transport, client and list-watch loop (plugins/common/kube) against a scripted
// loopback HTTP server (kube_scripted_server.h): keep-alive reuse, a watch stream beside
// requests, deadlines and stop tokens, a connection the server dropped while idle, retries on
// 429 (Retry-After) and 5xx, a rotated token after 401, a create whose reply was lost, and the
// list-watch loop through pagination, bookmarks, 410 mid-stream and at watch start. The TLS
// paths and a real etcd-backed API are the kube_fake integration test's.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "kube/kube_client.h"
#include "kube/list_watch.h"
#include "unit/plugins_common/kube_scripted_server.h"

namespace tessera::kube {
namespace {

using json = nlohmann::json;
using testing::ScriptedHttpServer;
using testing::ScriptedReply;
using testing::ScriptedRequest;
using namespace std::chrono_literals;

std::string Status(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
              {"reason", reason}, {"message", message}, {"code", code}}
      .dump();
}

std::unique_ptr<KubeClient> MakeClient(const std::string& url, KubeClientOptions options = {},
                                       const std::string& token_file = "") {
  ClusterConfig config;
  config.server = url;
  config.token = "t0ken";
  config.token_file = token_file;
  options.random_seed = 1;
  options.retry.initial_backoff = 10ms;
  options.retry.max_backoff = 50ms;
  auto client = KubeClient::Create(config, options);
  REQUIRE_MESSAGE(client.ok(), client.error().ToString());
  return std::move(client).value();
}

json Pod(const std::string& name, const std::string& rv, const std::string& uid = "") {
  return {{"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "ml"},
            {"uid", uid.empty() ? "uid-" + name : uid},
            {"resourceVersion", rv}}}};
}

TEST_CASE("kube client: requests share one keep-alive connection; errors parsed from Status") {
  ScriptedHttpServer server([](const ScriptedRequest& request, ScriptedReply& reply) {
    if (request.target == "/api/v1/namespaces/ml/pods/missing") {
      reply.Send(404, Status(404, "NotFound", "pods \"missing\" not found"));
      return;
    }
    reply.Send(200, Pod("p", "5").dump());
  });
  auto client = MakeClient(server.url());
  for (int i = 0; i < 3; ++i) {
    auto pod = client->Get("/api/v1/namespaces/ml/pods/p");
    REQUIRE_MESSAGE(pod.ok(), pod.error().ToString());
    CHECK(pod.value()["metadata"]["name"] == "p");
  }
  auto missing = client->Get("/api/v1/namespaces/ml/pods/missing");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == KubeErrorKind::kNotFound);
  CHECK(missing.error().message == "pods \"missing\" not found");
  CHECK(server.connections() == 1);
  CHECK(client->ConnectionsOpened() == 1);
  const auto seen = server.requests();
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].authorization == "Bearer t0ken");
  CHECK(client->Stats().retries == 0);  // a 404 is an answer
}

TEST_CASE("kube client: verbs send their bodies and content types") {
  ScriptedHttpServer server(
      [](const ScriptedRequest&, ScriptedReply& reply) { reply.Send(200, "{}"); });
  auto client = MakeClient(server.url());
  const std::string pod = "/api/v1/namespaces/ml/pods/p";
  REQUIRE(client->Patch(pod, {{"metadata", {{"labels", {{"a", "b"}}}}}}).ok());
  REQUIRE(
      client
          ->Patch(pod + "/status", {{"status", {{"phase", "Running"}}}}, PatchType::kStrategicMerge)
          .ok());
  REQUIRE(client->Replace(pod, Pod("p", "7")).ok());
  DeleteOptions options;
  options.grace_period_seconds = 30;
  options.propagation_policy = "Background";
  options.precondition_uid = "uid-p";
  REQUIRE(client->Delete(pod, options).ok());
  REQUIRE(client
              ->Create(pod + "/binding", {{"kind", "Binding"},
                                          {"metadata", {{"name", "p"}}},
                                          {"target", {{"kind", "Node"}, {"name", "n1"}}}})
              .ok());
  const auto seen = server.requests();
  REQUIRE(seen.size() == 5);
  CHECK(seen[0].method == "PATCH");
  CHECK(seen[0].content_type == "application/merge-patch+json");
  CHECK(seen[1].target == pod + "/status");
  CHECK(seen[1].content_type == "application/strategic-merge-patch+json");
  CHECK(seen[2].method == "PUT");
  CHECK(json::parse(seen[2].body)["metadata"]["resourceVersion"] == "7");
  CHECK(seen[3].method == "DELETE");
  CHECK(json::parse(seen[3].body) == json::parse(R"({"kind":"DeleteOptions","apiVersion":"v1",
      "gracePeriodSeconds":30,"propagationPolicy":"Background","preconditions":{"uid":"uid-p"}})"));
  CHECK(seen[4].method == "POST");
  CHECK(seen[4].target == pod + "/binding");
}

TEST_CASE("kube client: a watch stream does not hold up requests; lines cross chunk bounds") {
  std::atomic<bool> release{false};
  ScriptedHttpServer server([&release](const ScriptedRequest& request, ScriptedReply& reply) {
    if (request.target.find("watch=true") == std::string::npos) {
      reply.Send(200, Pod("q", "3").dump());
      return;
    }
    reply.StartChunked(200);
    const std::string line = json{{"type", "ADDED"}, {"object", Pod("a", "2")}}.dump() + "\n";
    reply.Chunk(line.substr(0, 10));
    reply.Chunk(line.substr(10) + line.substr(0, 5));
    reply.Chunk(line.substr(5));
    for (int i = 0; i < 500 && !release; ++i) std::this_thread::sleep_for(10ms);
    reply.EndChunked();
  });
  auto client = MakeClient(server.url());
  ListOptions options;
  options.watch = true;
  auto stream = client->OpenWatch("/api/v1/pods", options);
  REQUIRE_MESSAGE(stream.ok(), stream.error().ToString());
  WatchLineSplitter splitter;
  std::vector<std::string> lines;
  std::string bytes;
  while (lines.size() < 2) {
    bytes.clear();
    auto more = stream.value()->Read(&bytes, CallLimits::Within(5s));
    REQUIRE(more.ok());
    REQUIRE(more.value());
    splitter.Feed(bytes, [&lines](std::string_view line) { lines.emplace_back(line); });
  }
  CHECK(lines[0] == lines[1]);
  CHECK(ParseWatchEvent(lines[0]).value().object["metadata"]["name"] == "a");

  // The watch is still open; a request goes through on a second connection at once.
  const auto start = std::chrono::steady_clock::now();
  auto pod = client->Get("/api/v1/namespaces/ml/pods/q");
  REQUIRE(pod.ok());
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  CHECK(server.connections() == 2);
  release = true;
  bytes.clear();
  auto end = stream.value()->Read(&bytes, CallLimits::Within(5s));
  REQUIRE(end.ok());
  CHECK_FALSE(end.value());
}

TEST_CASE("kube client: a deadline ends a stalled call; a stop token ends a blocked read") {
  std::atomic<bool> release{false};
  ScriptedHttpServer server([&release](const ScriptedRequest& request, ScriptedReply& reply) {
    if (request.target.find("watch=true") != std::string::npos) reply.StartChunked(200);
    for (int i = 0; i < 500 && !release; ++i) std::this_thread::sleep_for(10ms);
    reply.Close();
  });
  KubeClientOptions options;
  options.request_timeout = 200ms;
  options.retry.max_attempts = 1;
  auto client = MakeClient(server.url(), options);
  auto start = std::chrono::steady_clock::now();
  auto stalled = client->Get("/api/v1/nodes");
  REQUIRE_FALSE(stalled.ok());
  CHECK(stalled.error().kind == KubeErrorKind::kTransport);
  CHECK(stalled.error().message.find("deadline exceeded") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < 2s);

  ListOptions watch;
  watch.watch = true;
  auto stream = client->OpenWatch("/api/v1/pods", watch);
  REQUIRE_MESSAGE(stream.ok(), stream.error().ToString());
  std::stop_source stop;
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(100ms);
    stop.request_stop();
  });
  start = std::chrono::steady_clock::now();
  std::string bytes;
  auto read = stream.value()->Read(
      &bytes, CallLimits{std::chrono::steady_clock::time_point::max(), stop.get_token()});
  stopper.join();
  REQUIRE_FALSE(read.ok());
  CHECK(read.error().kind == KubeErrorKind::kCancelled);
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  release = true;
}

TEST_CASE("kube client: a connection the server closed while idle is replaced, not an error") {
  ScriptedHttpServer server(
      [](const ScriptedRequest&, ScriptedReply& reply) { reply.Send(200, "{}"); });
  KubeClientOptions options;
  options.retry.max_attempts = 1;  // the transport's own resend, not the retry loop
  auto client = MakeClient(server.url(), options);
  REQUIRE(client->Get("/api/v1/nodes").ok());
  server.DropConnections();
  std::this_thread::sleep_for(50ms);
  auto again = client->Get("/api/v1/nodes");
  REQUIRE_MESSAGE(again.ok(), again.error().ToString());
  CHECK(server.connections() == 2);
}

TEST_CASE("kube client: 429 honours Retry-After, 5xx backs off, both bounded") {
  std::atomic<int> calls{0};
  ScriptedHttpServer server([&calls](const ScriptedRequest& request, ScriptedReply& reply) {
    const int call = calls.fetch_add(1);
    if (request.target == "/always-503") {
      reply.Send(503, Status(503, "ServiceUnavailable", "busy"));
    } else if (call == 0) {
      reply.Send(429, Status(429, "TooManyRequests", "slow down"), {{"Retry-After", "1"}});
    } else if (call == 1) {
      reply.Send(500, Status(500, "InternalError", "oops"));
    } else {
      reply.Send(200, "{}");
    }
  });
  KubeClientOptions options;
  options.retry.max_attempts = 4;
  auto client = MakeClient(server.url(), options);
  const auto start = std::chrono::steady_clock::now();
  auto reply = client->Get("/api/v1/nodes");
  REQUIRE_MESSAGE(reply.ok(), reply.error().ToString());
  CHECK(std::chrono::steady_clock::now() - start >= 1s);
  CHECK(calls == 3);
  CHECK(client->Stats().retries == 2);

  calls = 0;
  auto failing = client->Get("/always-503");
  REQUIRE_FALSE(failing.ok());
  CHECK(failing.error().kind == KubeErrorKind::kServerError);
  CHECK(calls == 4);  // max_attempts
}

TEST_CASE("kube client: a 401 re-reads the token file once, picking up a rotated token") {
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("tessera-kube-token-" + std::to_string(::getpid())))
                               .string();
  std::ofstream(file) << "old-token\n";
  ScriptedHttpServer server([](const ScriptedRequest& request, ScriptedReply& reply) {
    if (request.authorization == "Bearer new-token") {
      reply.Send(200, "{}");
    } else {
      reply.Send(401, Status(401, "Unauthorized", "Unauthorized"));
    }
  });
  auto client = MakeClient(server.url(), {}, file);
  std::ofstream(file) << "new-token\n";  // the kubelet rotated it
  auto reply = client->Get("/api/v1/nodes");
  REQUIRE_MESSAGE(reply.ok(), reply.error().ToString());
  CHECK(client->Stats().token_rereads == 1);
  std::ofstream(file) << "bad-token\n";
  auto refused = client->Get("/api/v1/nodes");  // the token in hand is still good
  REQUIRE(refused.ok());
  std::filesystem::remove(file);
}

TEST_CASE("kube client: a create whose reply was lost is recovered when the object is ours") {
  std::atomic<int> posts{0};
  ScriptedHttpServer server([&posts](const ScriptedRequest& request, ScriptedReply& reply) {
    if (request.method == "POST") {
      if (posts.fetch_add(1) == 0) {
        reply.Close();  // created, but the reply never arrives
      } else {
        reply.Send(409, Status(409, "AlreadyExists", "pods \"p\" already exists"));
      }
      return;
    }
    json pod = Pod("p", "9");
    pod["metadata"]["labels"] = {{"tessera.io/task", "t-1"}};
    reply.Send(200, pod.dump());
  });
  auto client = MakeClient(server.url());
  json body = Pod("p", "");
  body["metadata"]["labels"] = {{"tessera.io/task", "t-1"}};

  // Without a way to tell its own object apart, a lost create is not resent.
  auto plain = client->Create("/api/v1/namespaces/ml/pods", body);
  REQUIRE_FALSE(plain.ok());
  CHECK(plain.error().kind == KubeErrorKind::kTransport);
  CHECK(posts == 1);

  posts = 0;
  CreateOptions create;
  create.is_ours = [](const json& existing) {
    return existing.value("/metadata/labels/tessera.io~1task"_json_pointer, "") == "t-1";
  };
  auto recovered = client->Create("/api/v1/namespaces/ml/pods", body, create);
  REQUIRE_MESSAGE(recovered.ok(), recovered.error().ToString());
  CHECK(recovered.value()["metadata"]["resourceVersion"] == "9");
  CHECK(client->Stats().recovered_creates == 1);
  CHECK(server.requests().back().target == "/api/v1/namespaces/ml/pods/p");

  posts = 0;
  create.is_ours = [](const json&) { return false; };  // someone else's pod of that name
  auto theirs = client->Create("/api/v1/namespaces/ml/pods", body, create);
  REQUIRE_FALSE(theirs.ok());
  CHECK(theirs.error().kind == KubeErrorKind::kAlreadyExists);
}

// Records what a ListWatch hands over.
class Recorder : public ListWatchHandler {
 public:
  void OnSync(const ListSync& sync) override {
    std::lock_guard<std::mutex> lock(mutex);
    std::string line = sync.initial ? "sync initial" : "sync";
    for (const json& o : sync.diff.added) line += " +" + Name(o);
    for (const json& o : sync.diff.modified) line += " ~" + Name(o);
    for (const json& o : sync.diff.deleted) line += " -" + Name(o);
    log.push_back(line + " @" + sync.resource_version);
  }
  void OnEvent(const WatchEvent& event) override {
    std::lock_guard<std::mutex> lock(mutex);
    log.push_back(std::string(WatchEventTypeName(event.type)) + " " + Name(event.object));
  }
  void OnError(const KubeError& error) override {
    std::lock_guard<std::mutex> lock(mutex);
    errors.push_back(error.ToString());
  }
  static std::string Name(const json& o) {
    return o["metadata"]["name"].get<std::string>() + "@" +
           o["metadata"]["resourceVersion"].get<std::string>();
  }
  std::vector<std::string> Log() {
    std::lock_guard<std::mutex> lock(mutex);
    return log;
  }
  std::mutex mutex;
  std::vector<std::string> log;
  std::vector<std::string> errors;
};

std::string EventLine(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump() + "\n";
}

json PodList(std::vector<json> items, const std::string& rv, const std::string& next = "") {
  json list = {
      {"kind", "PodList"}, {"items", std::move(items)}, {"metadata", {{"resourceVersion", rv}}}};
  if (!next.empty()) list["metadata"]["continue"] = next;
  return list;
}

TEST_CASE("kube list-watch: pages, bookmarks, 410 mid-stream and at start, the relist diff") {
  std::atomic<bool> release{false};
  std::atomic<int> lists{0};
  ScriptedHttpServer server([&](const ScriptedRequest& request, ScriptedReply& reply) {
    const std::string& target = request.target;
    const bool watch = target.find("watch=true") != std::string::npos;
    const auto rv_at = target.find("resourceVersion=");
    const std::string rv = rv_at == std::string::npos
                               ? ""
                               : target.substr(rv_at + 16, target.find('&', rv_at) - rv_at - 16);
    if (!watch) {
      CHECK(target.find("labelSelector=app%3Dx") != std::string::npos);
      CHECK(target.find("limit=2") != std::string::npos);
      const int list = lists.fetch_add(1);
      if (list == 0 && target.find("continue=") == std::string::npos) {
        lists = 0;
        reply.Send(200, PodList({Pod("a", "5"), Pod("b", "6")}, "10", "page-2").dump());
      } else if (list == 0) {
        lists = 1;
        reply.Send(200, PodList({Pod("c", "7")}, "10").dump());
      } else if (list == 1) {  // after the 410 mid-stream: b changed, c gone, d new
        reply.Send(200, PodList({Pod("a", "11"), Pod("b", "13"), Pod("d", "14")}, "14").dump());
      } else {  // after the 410 at watch start: nothing changed meanwhile
        reply.Send(200, PodList({Pod("a", "11"), Pod("b", "13"), Pod("d", "14")}, "15").dump());
      }
      return;
    }
    CHECK(target.find("allowWatchBookmarks=true") != std::string::npos);
    CHECK(target.find("timeoutSeconds=") != std::string::npos);
    if (rv == "10") {
      reply.StartChunked(200);
      reply.Chunk(EventLine("MODIFIED", Pod("a", "11")));
      reply.Chunk(
          EventLine("BOOKMARK", {{"kind", "Pod"}, {"metadata", {{"resourceVersion", "12"}}}}));
      reply.Chunk(EventLine(
          "ERROR", json::parse(Status(410, "Expired", "too old resource version: 12 (14)"))));
      reply.EndChunked();
    } else if (rv == "14" || rv == "12") {
      reply.Send(410, Status(410, "Expired", "too old resource version"));
    } else if (rv == "15") {
      reply.StartChunked(200);
      reply.Chunk(EventLine("ADDED", Pod("e", "16")));
      reply.EndChunked();  // the watch's timeoutSeconds
    } else {
      CHECK(rv == "16");
      reply.StartChunked(200);
      for (int i = 0; i < 500 && !release; ++i) std::this_thread::sleep_for(10ms);
      reply.EndChunked();
    }
  });
  auto client = MakeClient(server.url());
  Recorder recorder;
  ListWatchOptions options;
  options.label_selector = "app=x";
  options.page_size = 2;
  options.backoff.initial_backoff = 10ms;
  ListWatch list_watch(client.get(), options, &recorder);
  list_watch.Start();
  for (int i = 0; i < 300 && list_watch.resource_version() != "16"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  std::this_thread::sleep_for(50ms);  // the watch from 16 is open, blocked in a read
  const auto start = std::chrono::steady_clock::now();
  list_watch.Stop();
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  release = true;

  const std::vector<std::string> expected = {
      "sync initial +a@5 +b@6 +c@7 @10",
      "MODIFIED a@11",
      "sync +d@14 ~b@13 -c@7 @14",
      "sync @15",
      "ADDED e@16",
  };
  CHECK(recorder.Log() == expected);
  const ListWatchStats stats = list_watch.Stats();
  CHECK(stats.lists == 3);
  CHECK(stats.pages == 4);
  CHECK(stats.bookmarks == 1);
  CHECK(stats.gone_in_stream == 1);
  CHECK(stats.gone_at_start == 1);
  CHECK(stats.events == 2);
  CHECK(list_watch.resource_version() == "16");
}

}  // namespace
}  // namespace tessera::kube
