#include "kube/kubeconfig.h"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "kube/file_text.h"

namespace tessera::kube {
namespace {

namespace fs = std::filesystem;

// Reads one kubeconfig; each method returns false after setting error_ with the field named.
class KubeconfigReader {
 public:
  explicit KubeconfigReader(std::string path) : path_(std::move(path)) {
    folder_ = fs::path(path_).parent_path();
  }

  KubeOutcome<ClusterConfig> Read(const std::string& text, const std::string& wanted_context) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return Fail("", std::string("not valid YAML: ") + e.what());
    }
    if (!root.IsMap()) return Fail("", "not a kubeconfig (the top level is not a mapping)");

    std::string context_name = wanted_context;
    if (context_name.empty()) {
      if (!String(root, "current-context", "current-context", &context_name)) return error_;
      if (context_name.empty()) {
        return Fail("current-context", "not set, and no context was asked for");
      }
    }
    YAML::Node context;
    if (!Named(root, "contexts", "context", context_name, &context)) return error_;
    const std::string context_field = "contexts[" + context_name + "].context";

    ClusterConfig config;
    config.source = "kubeconfig " + path_ + ", context " + context_name;
    std::string cluster_name, user_name;
    if (!String(context, "cluster", context_field + ".cluster", &cluster_name)) return error_;
    if (cluster_name.empty()) return Fail(context_field + ".cluster", "missing");
    if (!String(context, "user", context_field + ".user", &user_name)) return error_;
    std::string namespace_name;
    if (!String(context, "namespace", context_field + ".namespace", &namespace_name)) {
      return error_;
    }
    if (!namespace_name.empty()) config.namespace_name = namespace_name;

    YAML::Node cluster;
    if (!Named(root, "clusters", "cluster", cluster_name, &cluster)) return error_;
    if (!ReadCluster(cluster, "clusters[" + cluster_name + "].cluster", &config)) return error_;
    if (!user_name.empty()) {
      YAML::Node user;
      if (!Named(root, "users", "user", user_name, &user)) return error_;
      if (!ReadUser(user, "users[" + user_name + "].user", &config)) return error_;
    }
    return config;
  }

 private:
  bool ReadCluster(const YAML::Node& cluster, const std::string& field, ClusterConfig* config) {
    if (!String(cluster, "server", field + ".server", &config->server)) return false;
    if (config->server.empty()) return Failed(field + ".server", "missing");
    if (!Pem(cluster, "certificate-authority", "certificate-authority-data", field,
             &config->ca_pem)) {
      return false;
    }
    if (const YAML::Node insecure = cluster["insecure-skip-tls-verify"]) {
      try {
        config->insecure_skip_tls_verify = insecure.as<bool>();
      } catch (const YAML::Exception&) {
        return Failed(field + ".insecure-skip-tls-verify", "not true or false");
      }
    }
    return String(cluster, "tls-server-name", field + ".tls-server-name", &config->tls_server_name);
  }

  bool ReadUser(const YAML::Node& user, const std::string& field, ClusterConfig* config) {
    if (user["exec"]) {
      return Failed(field + ".exec",
                    "exec credential plugins are not supported (this client runs no external "
                    "programs); give the user a token, tokenFile or client certificate");
    }
    if (user["auth-provider"]) {
      return Failed(field + ".auth-provider",
                    "auth-provider plugins are not supported; give the user a token, tokenFile "
                    "or client certificate");
    }
    if (user["username"] || user["password"]) {
      return Failed(field + ".username", "basic authentication is not supported");
    }
    if (!String(user, "token", field + ".token", &config->token)) return false;
    std::string token_file;
    if (!String(user, "tokenFile", field + ".tokenFile", &token_file)) return false;
    if (!token_file.empty()) {
      config->token_file = Resolve(token_file);
      std::string ignored, error;
      if (!ReadFileText(config->token_file, &ignored, &error)) {
        return Failed(field + ".tokenFile", config->token_file + ": " + error);
      }
    }
    if (!Pem(user, "client-certificate", "client-certificate-data", field,
             &config->client_cert_pem)) {
      return false;
    }
    if (!Pem(user, "client-key", "client-key-data", field, &config->client_key_pem)) return false;
    if (config->client_cert_pem.empty() != config->client_key_pem.empty()) {
      return Failed(
          field + (config->client_cert_pem.empty() ? ".client-certificate" : ".client-key"),
          "missing: a client certificate and its key come together");
    }
    return true;
  }

  // A PEM from `file_key` (a path) or `data_key` (base64); the -data field wins, as in kubectl.
  bool Pem(const YAML::Node& node, const std::string& file_key, const std::string& data_key,
           const std::string& field, std::string* pem) {
    std::string data, file;
    if (!String(node, data_key, field + "." + data_key, &data)) return false;
    if (!String(node, file_key, field + "." + file_key, &file)) return false;
    if (!data.empty()) {
      if (!DecodeBase64(data, pem)) return Failed(field + "." + data_key, "not valid base64");
      if (pem->find("-----BEGIN ") == std::string::npos) {
        return Failed(field + "." + data_key, "decodes to something that is not PEM");
      }
      return true;
    }
    if (file.empty()) return true;
    const std::string resolved = Resolve(file);
    std::string error;
    if (!ReadFileText(resolved, pem, &error)) {
      return Failed(field + "." + file_key, resolved + ": " + error);
    }
    if (pem->find("-----BEGIN ") == std::string::npos) {
      return Failed(field + "." + file_key, resolved + ": not a PEM file");
    }
    return true;
  }

  // The entry of `list_key` (a sequence of {name, <item_key>: {...}}) named `name`.
  bool Named(const YAML::Node& root, const std::string& list_key, const std::string& item_key,
             const std::string& name, YAML::Node* item) {
    const YAML::Node list = root[list_key];
    if (list && !list.IsSequence()) return Failed(list_key, "not a list");
    if (list) {
      for (const YAML::Node& entry : list) {
        if (!entry.IsMap() || !entry["name"] || !entry["name"].IsScalar()) continue;
        if (entry["name"].as<std::string>() != name) continue;
        const YAML::Node body = entry[item_key];
        if (!body || !body.IsMap()) {
          return Failed(list_key + "[" + name + "]." + item_key, "missing or not a mapping");
        }
        *item = body;
        return true;
      }
    }
    return Failed(list_key, "no entry named '" + name + "'");
  }

  // `key` of `node` as a string; "" when absent; false when present but not a scalar.
  bool String(const YAML::Node& node, const std::string& key, const std::string& field,
              std::string* value) {
    value->clear();
    const YAML::Node child = node[key];
    if (!child || child.IsNull()) return true;
    if (!child.IsScalar()) return Failed(field, "not a string");
    *value = child.as<std::string>();
    return true;
  }

  std::string Resolve(const std::string& file) const {
    const fs::path path(file);
    return path.is_absolute() ? file : (folder_ / path).lexically_normal().string();
  }

  bool Failed(const std::string& field, const std::string& why) {
    error_ = MakeError(KubeErrorKind::kConfig,
                       "kubeconfig " + path_ + (field.empty() ? "" : ": " + field) + ": " + why);
    return false;
  }
  KubeError Fail(const std::string& field, const std::string& why) {
    Failed(field, why);
    return error_;
  }

  std::string path_;
  fs::path folder_;
  KubeError error_;
};

std::string DefaultPath() {
  if (const char* list = std::getenv("KUBECONFIG"); list != nullptr && *list != '\0') {
    const std::string paths = list;
    std::string first;
    std::size_t start = 0;
    while (start <= paths.size()) {
      const std::size_t end = std::min(paths.find(':', start), paths.size());
      const std::string path = paths.substr(start, end - start);
      if (!path.empty()) {
        if (first.empty()) first = path;
        std::error_code ignored;
        if (fs::exists(path, ignored)) return path;
      }
      start = end + 1;
    }
    if (!first.empty()) return first;
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "") + "/.kube/config";
}

}  // namespace

bool DecodeBase64(const std::string& text, std::string* bytes) {
  std::string compact;
  compact.reserve(text.size());
  for (const char c : text) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') compact.push_back(c);
  }
  if (compact.size() % 4 != 0) return false;
  std::string out(compact.size() / 4 * 3, '\0');
  const int written = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(compact.data()),
                                      static_cast<int>(compact.size()));
  if (written < 0) return false;
  // EVP_DecodeBlock counts the padding as zero bytes; drop them.
  std::size_t size = static_cast<std::size_t>(written);
  if (!compact.empty() && compact.back() == '=') --size;
  if (compact.size() >= 2 && compact[compact.size() - 2] == '=') --size;
  out.resize(size);
  *bytes = std::move(out);
  return true;
}

KubeOutcome<ClusterConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                           const std::string& context) {
  return KubeconfigReader(path).Read(text, context);
}

KubeOutcome<ClusterConfig> LoadKubeconfig(const KubeconfigOptions& options) {
  const std::string path = options.path.empty() ? DefaultPath() : options.path;
  std::string text, error;
  if (!ReadFileText(path, &text, &error)) {
    return MakeError(KubeErrorKind::kConfig, "kubeconfig " + path + ": " + error);
  }
  return ParseKubeconfig(text, path, options.context);
}

}  // namespace tessera::kube
