// Kubeconfig and in-cluster config (plugins/common/kube/kubeconfig.h, in_cluster.h) and the
// token file's re-reading (token_source.h). The base64 values below were made with coreutils'
// `base64 -w0` from the PEM text beside them, not by the decoder under test.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "kube/in_cluster.h"
#include "kube/kubeconfig.h"
#include "kube/token_source.h"

namespace tessera::kube {
namespace {

namespace fs = std::filesystem;

constexpr char kCaPem[] =
    "-----BEGIN CERTIFICATE-----\nTESSERA-TEST-CA\n-----END CERTIFICATE-----\n";
constexpr char kCaBase64[] =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClRFU1NFUkEtVEVTVC1DQQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0t"
    "Cg==";
constexpr char kClientPem[] =
    "-----BEGIN CERTIFICATE-----\nTESSERA-TEST-CLIENT\n-----END CERTIFICATE-----\n";
constexpr char kClientBase64[] =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClRFU1NFUkEtVEVTVC1DTElFTlQKLS0tLS1FTkQgQ0VSVElGSUNBVEUt"
    "LS0tLQo=";
constexpr char kKeyPem[] =
    "-----BEGIN PRIVATE KEY-----\nTESSERA-TEST-KEY\n-----END PRIVATE KEY-----\n";
constexpr char kKeyBase64[] =
    "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tClRFU1NFUkEtVEVTVC1LRVkKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0t"
    "LQo=";

// A fresh folder under the temporary directory, removed afterwards.
struct TempFolder {
  fs::path path;
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "tessera-kube-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string Write(const std::string& name, const std::string& text) const {
    const fs::path file = path / name;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
    return file.string();
  }
};

std::string TwoContexts() {
  return std::string(R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: )") +
         kCaBase64 + R"(
    tls-server-name: kubernetes.default.svc
- name: dev-cluster
  cluster:
    server: https://dev.example:8443
    certificate-authority: certs/ca.crt
    insecure-skip-tls-verify: false
contexts:
- name: prod
  context: {cluster: prod-cluster, user: robot, namespace: ml}
- name: dev
  context: {cluster: dev-cluster, user: alice}
users:
- name: robot
  user:
    token: static-token
    client-certificate-data: )" +
         kClientBase64 + R"(
    client-key-data: )" +
         kKeyBase64 + R"(
- name: alice
  user:
    tokenFile: secrets/token
    client-certificate: certs/alice.crt
    client-key: /ABSOLUTE/alice.key
)";
}

TEST_CASE("kube config: current-context with -data fields, base64 decoded") {
  auto config = ParseKubeconfig(TwoContexts(), "/nowhere/config");
  REQUIRE_MESSAGE(config.ok(), config.error().ToString());
  CHECK(config.value().server == "https://10.0.0.1:6443");
  CHECK(config.value().ca_pem == kCaPem);
  CHECK(config.value().tls_server_name == "kubernetes.default.svc");
  CHECK(config.value().token == "static-token");
  CHECK(config.value().token_file.empty());
  CHECK(config.value().client_cert_pem == kClientPem);
  CHECK(config.value().client_key_pem == kKeyPem);
  CHECK(config.value().namespace_name == "ml");
  CHECK_FALSE(config.value().insecure_skip_tls_verify);
}

TEST_CASE("kube config: a named context, its files read relative to the kubeconfig's folder") {
  TempFolder folder;
  folder.Write("kube/certs/ca.crt", kCaPem);
  folder.Write("kube/certs/alice.crt", kClientPem);
  const std::string key = folder.Write("keys/alice.key", kKeyPem);
  const std::string token = folder.Write("kube/secrets/token", "alice-token\n");
  std::string text = TwoContexts();
  text.replace(text.find("/ABSOLUTE/alice.key"), 19, key);
  const std::string path = folder.Write("kube/config", text);

  auto config = LoadKubeconfig({path, "dev"});
  REQUIRE_MESSAGE(config.ok(), config.error().ToString());
  CHECK(config.value().server == "https://dev.example:8443");
  CHECK(config.value().ca_pem == kCaPem);
  CHECK(config.value().client_cert_pem == kClientPem);
  CHECK(config.value().client_key_pem == kKeyPem);
  CHECK(config.value().token_file == token);
  CHECK(config.value().namespace_name == "default");
  CHECK(config.value().source.find("context dev") != std::string::npos);

  // $KUBECONFIG: the first path of the list that exists.
  const char* before = std::getenv("KUBECONFIG");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("KUBECONFIG", ((folder.path / "absent").string() + ":" + path).c_str(), 1);
  auto from_env = LoadKubeconfig({"", "dev"});
  if (before != nullptr) {
    ::setenv("KUBECONFIG", saved.c_str(), 1);
  } else {
    ::unsetenv("KUBECONFIG");
  }
  REQUIRE_MESSAGE(from_env.ok(), from_env.error().ToString());
  CHECK(from_env.value().server == "https://dev.example:8443");
}

// The error, which must be kConfig and mention every piece of `needles`.
void CheckRefused(const KubeOutcome<ClusterConfig>& config,
                  std::initializer_list<const char*> needles) {
  REQUIRE_FALSE(config.ok());
  CHECK(config.error().kind == KubeErrorKind::kConfig);
  for (const char* needle : needles) {
    CHECK_MESSAGE(config.error().message.find(needle) != std::string::npos, config.error().message,
                  " lacks ", needle);
  }
}

TEST_CASE("kube config: errors name the file and the field") {
  const std::string path = "/etc/kube/config";
  const std::string base = R"(current-context: c
clusters: [{name: k, cluster: {server: "https://h:6443"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
)";
  CheckRefused(ParseKubeconfig(base + R"(users: [{name: u, user: {exec: {command: aws}}}])", path),
               {path.c_str(), "users[u].user.exec", "not supported"});
  CheckRefused(
      ParseKubeconfig(base + R"(users: [{name: u, user: {auth-provider: {name: gcp}}}])", path),
      {"users[u].user.auth-provider"});
  CheckRefused(ParseKubeconfig(
                   base + R"(users: [{name: u, user: {client-certificate-data: "YWJ$"}}])", path),
               {"users[u].user.client-certificate-data", "base64"});
  CheckRefused(
      ParseKubeconfig(base + R"(users: [{name: u, user: {client-certificate-data: "YWJjZA=="}}])",
                      path),
      {"client-certificate-data", "not PEM"});
  CheckRefused(
      ParseKubeconfig(base + std::string(R"(users: [{name: u, user: {client-certificate-data: )") +
                          kClientBase64 + "}}]",
                      path),
      {"users[u].user.client-key", "together"});
  CheckRefused(
      ParseKubeconfig(base + R"(users: [{name: u, user: {tokenFile: /no/such/token}}])", path),
      {"users[u].user.tokenFile", "/no/such/token"});
  CheckRefused(ParseKubeconfig(base + R"(users: [{name: v, user: {token: t}}])", path),
               {"users", "no entry named 'u'"});
  CheckRefused(ParseKubeconfig(base + "users: []", path, "other"),
               {"contexts", "no entry named 'other'"});
  CheckRefused(ParseKubeconfig(R"(clusters: []
contexts: []
)",
                               path),
               {"current-context", "not set"});
  CheckRefused(ParseKubeconfig(R"(current-context: c
clusters: [{name: k, cluster: {certificate-authority: ca.pem}}]
contexts: [{name: c, context: {cluster: k}}]
)",
                               path),
               {"clusters[k].cluster.server", "missing"});
  CheckRefused(ParseKubeconfig(R"(current-context: c
clusters: [{name: k, cluster: {server: "https://h", certificate-authority: ca.pem}}]
contexts: [{name: c, context: {cluster: k}}]
)",
                               path),
               {"clusters[k].cluster.certificate-authority", "/etc/kube/ca.pem"});
  CheckRefused(ParseKubeconfig("current-context: [", path), {path.c_str(), "YAML"});
  CheckRefused(LoadKubeconfig({"/no/such/kubeconfig", ""}), {"/no/such/kubeconfig"});
}

TEST_CASE("kube config: base64 decoding, padding and line breaks") {
  std::string bytes;
  CHECK(DecodeBase64("YWI=", &bytes));
  CHECK(bytes == "ab");
  CHECK(DecodeBase64("YWJj\nZA==", &bytes));
  CHECK(bytes == "abcd");
  CHECK(DecodeBase64("", &bytes));
  CHECK(bytes.empty());
  CHECK_FALSE(DecodeBase64("YWJ", &bytes));
  CHECK_FALSE(DecodeBase64("YW*=", &bytes));
}

TEST_CASE("kube config: in-cluster from the service account folder and the environment") {
  TempFolder root;
  root.Write("ca.crt", kCaPem);
  root.Write("token", "sa-token\n");
  root.Write("namespace", "tessera-system\n");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  InClusterOptions options;
  options.root = root.path.string();
  options.getenv = [&env](const std::string& name) { return env[name]; };
  auto config = LoadInClusterConfig(options);
  REQUIRE_MESSAGE(config.ok(), config.error().ToString());
  CHECK(config.value().server == "https://10.96.0.1:443");
  CHECK(config.value().ca_pem == kCaPem);
  CHECK(config.value().token_file == (root.path / "token").string());
  CHECK(config.value().namespace_name == "tessera-system");

  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  config = LoadInClusterConfig(options);
  REQUIRE(config.ok());
  CHECK(config.value().server == "https://[fd00::1]:443");

  env.erase("KUBERNETES_SERVICE_PORT");
  CheckRefused(LoadInClusterConfig(options), {"KUBERNETES_SERVICE_PORT"});
  env["KUBERNETES_SERVICE_PORT"] = "443";
  fs::remove(root.path / "ca.crt");
  CheckRefused(LoadInClusterConfig(options), {"ca.crt"});
  root.Write("ca.crt", kCaPem);
  root.Write("token", "  \n");
  CheckRefused(LoadInClusterConfig(options), {"token", "empty"});
}

TEST_CASE(
    "kube config: a token file is re-read when old, at once after Invalidate, kept on a bad read") {
  TempFolder folder;
  const std::string file = folder.Write("token", "first\n");
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  TokenSource tokens("ignored-static", file, std::chrono::seconds(60), [&now] { return now; });
  auto token = tokens.Token();
  REQUIRE(token.ok());
  CHECK(token.value() == "first");
  CHECK(tokens.ReadsForTest() == 1);

  folder.Write("token", "second");
  now += std::chrono::seconds(59);
  CHECK(tokens.Token().value() == "first");  // still young: not read
  CHECK(tokens.ReadsForTest() == 1);
  now += std::chrono::seconds(1);
  CHECK(tokens.Token().value() == "second");  // a minute old: read again
  CHECK(tokens.ReadsForTest() == 2);

  folder.Write("token", "third");
  CHECK(tokens.Token().value() == "second");
  tokens.Invalidate();  // a 401
  CHECK(tokens.Token().value() == "third");
  CHECK(tokens.ReadsForTest() == 3);

  fs::remove(file);  // mid-rotation: keep the token in hand
  tokens.Invalidate();
  CHECK(tokens.Token().value() == "third");

  TokenSource missing("", (folder.path / "none").string());
  auto failed = missing.Token();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().kind == KubeErrorKind::kConfig);
  CHECK(failed.error().message.find("none") != std::string::npos);

  TokenSource fixed("static", "");
  CHECK(fixed.Token().value() == "static");
}

}  // namespace
}  // namespace tessera::kube
