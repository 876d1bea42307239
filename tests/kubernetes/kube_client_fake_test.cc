// The Kubernetes API client (plugins/common/kube) against the fake API server
// (plugins/kubernetes/testing/fake_apiserver.py over a real etcd on loopback, both started
// here): TLS against the fake's CA with a client certificate, a bearer token and a token file
// from the kubeconfig it writes; a wrong CA, a wrong server name and a bad token refused; 404,
// 409 AlreadyExists and Conflict, 422 parsed from real Status bodies; keep-alive; list pages;
// and the list-watch loop through bookmarks, a 410 mid-stream and a 410 at watch start (etcd
// compacted while the watch was away), the objects created, changed and deleted meanwhile
// arriving as the relist's difference, so that what the consumer holds matches the server.
// The fake cannot answer 429; the client's 429 handling is unit-tested against a scripted
// server (tests/unit/plugins_common/kube_client_test.cc). Exits 77 (ctest: skipped) when etcd,
// openssl or python3-etcd3 is missing (scripts/install-deps.sh installs them).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "kube/kube_client.h"
#include "kube/kubeconfig.h"
#include "kube/list_watch.h"
#include "kubernetes/fake_apiserver_process.h"

namespace tessera::kube {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

json g_info;  // the fake's start-up line: url, kubeconfig, token, ca, …

std::unique_ptr<KubeClient> ClientFor(const std::string& context, KubeClientOptions options = {}) {
  auto config = LoadKubeconfig({g_info["kubeconfig"].get<std::string>(), context});
  REQUIRE_MESSAGE(config.ok(), config.error().ToString());
  options.retry.initial_backoff = 20ms;
  options.retry.max_backoff = 200ms;
  auto client = KubeClient::Create(config.value(), options);
  REQUIRE_MESSAGE(client.ok(), client.error().ToString());
  return std::move(client).value();
}

// POST /fake/<what>: the fake's test controls.
void Control(KubeClient& client, const std::string& what) {
  const json empty = json::object();
  auto reply = client.Request("POST", "/fake/" + what, &empty, "application/json", nullptr, {});
  REQUIRE_MESSAGE(reply.ok(), reply.error().ToString());
}

json PodBody(const std::string& name, const std::string& app = "kc") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"app", app}}}}},
          {"spec", {{"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
}

void EnsureNamespace(KubeClient& client, const std::string& name) {
  auto made =
      client.Create("/api/v1/namespaces",
                    {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
  if (!made.ok())
    REQUIRE_MESSAGE(made.error().kind == KubeErrorKind::kAlreadyExists, made.error().ToString());
}

TEST_CASE("kube_client_fake: TLS with the cluster CA, client certificate, token, token file") {
  for (const char* context : {"fake", "fake-token", "fake-tokenfile"}) {
    CAPTURE(context);
    auto client = ClientFor(context);
    auto namespaces = client->List("/api/v1/namespaces", {});
    REQUIRE_MESSAGE(namespaces.ok(), namespaces.error().ToString());
    std::set<std::string> names;
    for (const json& item : namespaces.value()["items"]) names.insert(item["metadata"]["name"]);
    CHECK(names.count("default") == 1);
    CHECK_FALSE(namespaces.value()["metadata"]["resourceVersion"].get<std::string>().empty());
  }
}

TEST_CASE("kube_client_fake: wrong CA, wrong server name and a bad token are refused") {
  auto config = LoadKubeconfig({g_info["kubeconfig"].get<std::string>(), "fake-token"});
  REQUIRE(config.ok());
  KubeClientOptions options;
  options.retry.max_attempts = 1;

  ClusterConfig system_store = config.value();
  system_store.ca_pem.clear();  // the system's CAs do not know the fake's
  auto client = KubeClient::Create(system_store, options);
  REQUIRE(client.ok());
  auto refused = client.value()->Get("/api/v1/namespaces/default");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == KubeErrorKind::kTransport);
  CHECK(refused.error().message.find("TLS handshake") != std::string::npos);

  ClusterConfig wrong_name = config.value();
  wrong_name.tls_server_name = "not-the-apiserver.example";
  client = KubeClient::Create(wrong_name, options);
  REQUIRE(client.ok());
  refused = client.value()->Get("/api/v1/namespaces/default");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == KubeErrorKind::kTransport);

  ClusterConfig insecure = system_store;
  insecure.insecure_skip_tls_verify = true;
  client = KubeClient::Create(insecure, options);
  REQUIRE(client.ok());
  auto accepted = client.value()->Get("/api/v1/namespaces/default");
  CHECK_MESSAGE(accepted.ok(), accepted.error().ToString());

  ClusterConfig bad_token = config.value();
  bad_token.token = "not-a-token";
  client = KubeClient::Create(bad_token, options);
  REQUIRE(client.ok());
  refused = client.value()->Get("/api/v1/namespaces/default");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == KubeErrorKind::kUnauthorized);
  CHECK(refused.error().http_status == 401);
}

TEST_CASE("kube_client_fake: 404, 409 AlreadyExists and Conflict, 422 from Status bodies") {
  auto client = ClientFor("fake");
  EnsureNamespace(*client, "kc-errors");
  const std::string pods = CollectionPath(Resource::Pods(), "kc-errors");
  auto missing = client->Get(ObjectPath(Resource::Pods(), "kc-errors", "nobody"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == KubeErrorKind::kNotFound);
  CHECK(missing.error().reason == "NotFound");
  CHECK(missing.error().message.find("nobody") != std::string::npos);

  auto made = client->Create(pods, PodBody("twice"));
  REQUIRE_MESSAGE(made.ok(), made.error().ToString());
  auto again = client->Create(pods, PodBody("twice"));
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().kind == KubeErrorKind::kAlreadyExists);
  CHECK(again.error().http_status == 409);

  json stale = made.value();
  auto patched = client->Patch(ObjectPath(Resource::Pods(), "kc-errors", "twice"),
                               {{"metadata", {{"labels", {{"touched", "yes"}}}}}});
  REQUIRE_MESSAGE(patched.ok(), patched.error().ToString());
  CHECK(patched.value()["metadata"]["labels"]["touched"] == "yes");
  stale["metadata"]["labels"]["late"] = "yes";
  auto conflict = client->Replace(ObjectPath(Resource::Pods(), "kc-errors", "twice"), stale);
  REQUIRE_FALSE(conflict.ok());
  CHECK(conflict.error().kind == KubeErrorKind::kConflict);

  json invalid = PodBody("no-containers");
  invalid["spec"]["containers"] = json::array();
  auto rejected = client->Create(pods, invalid);
  REQUIRE_FALSE(rejected.ok());
  CHECK(rejected.error().kind == KubeErrorKind::kInvalid);
  CHECK(rejected.error().http_status == 422);

  DeleteOptions now;
  now.grace_period_seconds = 0;
  now.precondition_uid = "some-other-uid";
  auto wrong_uid = client->Delete(ObjectPath(Resource::Pods(), "kc-errors", "twice"), now);
  REQUIRE_FALSE(wrong_uid.ok());
  CHECK(wrong_uid.error().kind == KubeErrorKind::kConflict);
  now.precondition_uid = made.value()["metadata"]["uid"];
  auto deleted = client->Delete(ObjectPath(Resource::Pods(), "kc-errors", "twice"), now);
  REQUIRE_MESSAGE(deleted.ok(), deleted.error().ToString());

  // All of it on one kept-alive connection.
  CHECK(client->ConnectionsOpened() == 1);
}

// A consumer as a backend would be: applies syncs and events to its own map; can be made to
// hold on one event (so the watch is away while the test changes things).
class Mirror : public ListWatchHandler {
 public:
  void OnSync(const ListSync& sync) override {
    std::unique_lock<std::mutex> lock(mutex_);
    for (const json& o : sync.diff.deleted) objects_.erase(ObjectKey(o));
    for (const json& o : sync.diff.added) objects_[ObjectKey(o)] = Rv(o);
    for (const json& o : sync.diff.modified) objects_[ObjectKey(o)] = Rv(o);
    std::string line = sync.initial ? "initial" : "relist";
    for (const json& o : sync.diff.added) line += " +" + Name(o);
    for (const json& o : sync.diff.modified) line += " ~" + Name(o);
    for (const json& o : sync.diff.deleted) line += " -" + Name(o);
    syncs_.push_back(line);
    changed_.notify_all();
  }
  void OnEvent(const WatchEvent& event) override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (event.type == WatchEventType::kDeleted) {
      objects_.erase(ObjectKey(event.object));
    } else {
      objects_[ObjectKey(event.object)] = Rv(event.object);
    }
    events_.push_back(std::string(WatchEventTypeName(event.type)) + " " + Name(event.object));
    if (Name(event.object) == hold_on_) {
      held_ = true;
      changed_.notify_all();
      changed_.wait(lock, [this] { return hold_on_.empty(); });
      held_ = false;
    }
    changed_.notify_all();
  }

  void HoldOn(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    hold_on_ = name;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mutex_);
    hold_on_.clear();
    changed_.notify_all();
  }
  bool WaitHeld() {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, 10s, [this] { return held_; });
  }
  bool WaitSyncs(std::size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] { return syncs_.size() >= count; });
  }
  bool WaitEvent(const std::string& line) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] {
      return std::find(events_.begin(), events_.end(), line) != events_.end();
    });
  }
  std::map<std::string, std::string> Objects() {
    std::lock_guard<std::mutex> lock(mutex_);
    return objects_;
  }
  std::vector<std::string> Syncs() {
    std::lock_guard<std::mutex> lock(mutex_);
    return syncs_;
  }

 private:
  static std::string Name(const json& o) { return o["metadata"]["name"].get<std::string>(); }
  static std::string Rv(const json& o) { return o["metadata"]["resourceVersion"]; }
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> objects_;  // key -> resourceVersion
  std::vector<std::string> syncs_;
  std::vector<std::string> events_;
  std::string hold_on_;
  bool held_ = false;
};

// What the server holds now, as the mirror should: key -> resourceVersion.
std::map<std::string, std::string> ServerView(KubeClient& client, const std::string& ns) {
  ListOptions options;
  options.label_selector = "app=kc";
  auto list = client.List(CollectionPath(Resource::Pods(), ns), options);
  REQUIRE_MESSAGE(list.ok(), list.error().ToString());
  std::map<std::string, std::string> view;
  for (const json& item : list.value()["items"]) {
    view[ObjectKey(item)] = item["metadata"]["resourceVersion"];
  }
  return view;
}

bool WaitFor(const std::function<bool()>& done, std::chrono::seconds limit = 10s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

TEST_CASE("kube_client_fake: list pages, watch with bookmarks, 410 mid-stream, nothing lost") {
  auto client = ClientFor("fake");
  const std::string ns = "kc-watch";
  EnsureNamespace(*client, ns);
  const std::string pods = CollectionPath(Resource::Pods(), ns);
  for (int i = 0; i < 7; ++i) REQUIRE(client->Create(pods, PodBody("p-" + std::to_string(i))).ok());
  REQUIRE(client->Create(pods, PodBody("other", "not-kc")).ok());

  Mirror mirror;
  ListWatchOptions options;
  options.namespace_name = ns;
  options.label_selector = "app=kc";
  options.page_size = 3;
  options.backoff.initial_backoff = 20ms;
  ListWatch watch(client.get(), options, &mirror);
  watch.Start();
  REQUIRE(mirror.WaitSyncs(1));
  CHECK(mirror.Syncs()[0].rfind("initial", 0) == 0);
  CHECK(mirror.Objects().size() == 7);
  CHECK(watch.Stats().pages == 3);

  // Live events, and bookmarks (the fake sends one a second here).
  REQUIRE(client->Create(pods, PodBody("live")).ok());
  CHECK(mirror.WaitEvent("ADDED live"));
  CHECK(WaitFor([&] { return watch.Stats().bookmarks >= 1; }));

  // The watch is held on an event; its stream gets an ERROR 410 and ends; meanwhile one pod
  // changes, one goes, one comes, and etcd is compacted past where the watch was.
  mirror.HoldOn("trigger-1");
  REQUIRE(client->Create(pods, PodBody("trigger-1")).ok());
  REQUIRE(mirror.WaitHeld());
  Control(*client, "expire-watches");
  REQUIRE(client
              ->Patch(ObjectPath(Resource::Pods(), ns, "p-0"),
                      {{"metadata", {{"annotations", {{"changed", "while-away"}}}}}})
              .ok());
  DeleteOptions at_once;
  at_once.grace_period_seconds = 0;
  REQUIRE(client->Delete(ObjectPath(Resource::Pods(), ns, "p-1"), at_once).ok());
  REQUIRE(client->Create(pods, PodBody("new-1")).ok());
  Control(*client, "compact");
  mirror.Release();

  REQUIRE(mirror.WaitSyncs(2));
  CHECK(mirror.Syncs()[1] == "relist +new-1 ~p-0 -p-1");
  CHECK(watch.Stats().gone_in_stream == 1);
  CHECK(WaitFor([&] { return mirror.Objects() == ServerView(*client, ns); }));

  // And the watch goes on from the relist.
  REQUIRE(client->Delete(ObjectPath(Resource::Pods(), ns, "live"), at_once).ok());
  CHECK(mirror.WaitEvent("DELETED live"));
  watch.Stop();
  CHECK(mirror.Objects() == ServerView(*client, ns));
  // The watch streams and the requests each kept their own connections alive.
  CHECK(client->ConnectionsOpened() <= 4);
}

TEST_CASE("kube_client_fake: 410 at watch start after a watch timed out while away") {
  auto client = ClientFor("fake-token");
  const std::string ns = "kc-start";
  EnsureNamespace(*client, ns);
  const std::string pods = CollectionPath(Resource::Pods(), ns);
  for (int i = 0; i < 4; ++i) REQUIRE(client->Create(pods, PodBody("p-" + std::to_string(i))).ok());

  Mirror mirror;
  ListWatchOptions options;
  options.namespace_name = ns;
  options.label_selector = "app=kc";
  options.watch_timeout_seconds = 2;
  options.backoff.initial_backoff = 20ms;
  ListWatch watch(client.get(), options, &mirror);
  watch.Start();
  REQUIRE(mirror.WaitSyncs(1));

  mirror.HoldOn("trigger-2");
  REQUIRE(client->Create(pods, PodBody("trigger-2")).ok());
  REQUIRE(mirror.WaitHeld());
  std::this_thread::sleep_for(2500ms);  // the server ends that watch (timeoutSeconds=2)
  DeleteOptions at_once;
  at_once.grace_period_seconds = 0;
  REQUIRE(client->Delete(ObjectPath(Resource::Pods(), ns, "p-2"), at_once).ok());
  REQUIRE(client->Create(pods, PodBody("new-2")).ok());
  REQUIRE(client
              ->Patch(ObjectPath(Resource::Pods(), ns, "p-3"),
                      {{"metadata", {{"labels", {{"tier", "changed"}}}}}},
                      PatchType::kStrategicMerge)
              .ok());
  Control(*client, "compact");
  mirror.Release();

  REQUIRE(mirror.WaitSyncs(2));
  CHECK(mirror.Syncs()[1] == "relist +new-2 ~p-3 -p-2");
  CHECK(watch.Stats().gone_at_start == 1);
  CHECK(watch.Stats().gone_in_stream == 0);
  CHECK(WaitFor([&] { return mirror.Objects() == ServerView(*client, ns); }));
  const auto start = std::chrono::steady_clock::now();
  watch.Stop();
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

bool OnPath(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

}  // namespace
}  // namespace tessera::kube

int main(int argc, char** argv) {
  for (const char* tool : {"etcd", "openssl"}) {
    if (!tessera::kube::OnPath(tool)) {
      std::cout << "SKIP kube_client_fake: " << tool
                << " not found (Debian packages etcd-server, openssl; scripts/install-deps.sh)\n";
      return 77;
    }
  }
  const std::string probe =
      std::string(TESSERA_DEBIAN_PYTHON3) + " -c 'import etcd3, yaml' >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0) {
    std::cout << "SKIP kube_client_fake: python3-etcd3 or python3-yaml missing "
                 "(scripts/install-deps.sh installs them)\n";
    return 77;
  }
  tessera::testing::FakeApiServerProcess fake;
  std::string error;
  if (!fake.Start(TESSERA_DEBIAN_PYTHON3, TESSERA_KUBE_FAKE_APISERVER, &error)) {
    std::cerr << error << "\n";
    return 1;
  }
  tessera::kube::g_info = fake.info();
  doctest::Context context(argc, argv);
  return context.run();
}
