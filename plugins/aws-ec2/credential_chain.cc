#include "credential_chain.h"

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

namespace tessera::aws_ec2 {
namespace {

using plugin::PluginStatus;

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  const size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

// "2026-12-02T08:22:00Z" as a time; epoch when it does not parse.
std::chrono::system_clock::time_point ParseIso8601(const std::string& text) {
  std::tm tm{};
  if (::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return {};
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

aws::Ec2Outcome<aws::HttpResponse> ImdsGet(aws::HttpTransport& transport,
                                           const aws::HttpEndpoint& imds, const std::string& token,
                                           const std::string& path) {
  aws::HttpRequest request;
  request.method = "GET";
  request.target = path;
  request.headers = {{"X-aws-ec2-metadata-token", token}};
  return transport.Send(imds, request);
}

}  // namespace

CredentialChain::CredentialChain(CredentialSources sources) : sources_(std::move(sources)) {
  if (!sources_.transport) {
    sources_.transport = std::make_shared<aws::BeastHttpTransport>(std::chrono::seconds(2));
  }
}

CredentialChain::Found CredentialChain::FromEnvironment(std::string* why, PluginStatus* error) {
  const char* key = sources_.getenv("AWS_ACCESS_KEY_ID");
  const char* secret = sources_.getenv("AWS_SECRET_ACCESS_KEY");
  const bool has_key = key != nullptr && *key != '\0';
  const bool has_secret = secret != nullptr && *secret != '\0';
  if (has_key != has_secret) {
    *error = PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                 std::string("credentials: the environment has ") +
                                     (has_key ? "AWS_ACCESS_KEY_ID but no AWS_SECRET_ACCESS_KEY"
                                              : "AWS_SECRET_ACCESS_KEY but no AWS_ACCESS_KEY_ID"));
    return Found::kNo;
  }
  if (!has_key) {
    *why = "the environment (no AWS_ACCESS_KEY_ID)";
    return Found::kNo;
  }
  const char* token = sources_.getenv("AWS_SESSION_TOKEN");
  credentials_ = {key, secret, token != nullptr ? token : ""};
  source_ = "the environment";
  return Found::kYes;
}

CredentialChain::Found CredentialChain::FromSharedFile(std::string* why, PluginStatus* error) {
  std::string path = sources_.shared_credentials_file;
  if (path.empty()) {
    const char* from_env = sources_.getenv("AWS_SHARED_CREDENTIALS_FILE");
    const char* home = sources_.getenv("HOME");
    if (from_env != nullptr && *from_env != '\0') {
      path = from_env;
    } else {
      path = std::string(home != nullptr ? home : "") + "/.aws/credentials";
    }
  }
  std::string profile = sources_.profile;
  if (profile.empty()) {
    const char* from_env = sources_.getenv("AWS_PROFILE");
    profile = from_env != nullptr && *from_env != '\0' ? from_env : "default";
  }
  std::ifstream in(path);
  if (!in) {
    *why = "the shared credentials file " + path + " (not there)";
    return Found::kNo;
  }
  // INI: [profile] sections of "key = value" lines; '#' and ';' start comments.
  std::string line, section;
  bool found_section = false;
  aws::Credentials found;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = Trim(line.substr(1, line.size() - 2));
      found_section = found_section || section == profile;
      continue;
    }
    if (section != profile) continue;
    const size_t equals = line.find('=');
    if (equals == std::string::npos) continue;
    const std::string key = Trim(line.substr(0, equals));
    const std::string value = Trim(line.substr(equals + 1));
    if (key == "aws_access_key_id") found.access_key_id = value;
    if (key == "aws_secret_access_key") found.secret_access_key = value;
    if (key == "aws_session_token") found.session_token = value;
  }
  const std::string where = "profile '" + profile + "' of " + path;
  if (!found_section) {
    *why = "the shared credentials file " + path + " (no profile '" + profile + "')";
    return Found::kNo;
  }
  if (found.access_key_id.empty() || found.secret_access_key.empty()) {
    *error = PluginStatus::Error(
        TESSERA_INVALID_ARGUMENT,
        "credentials: " + where + " lacks aws_access_key_id or aws_secret_access_key");
    return Found::kNo;
  }
  credentials_ = std::move(found);
  source_ = where;
  return Found::kYes;
}

CredentialChain::Found CredentialChain::FromInstanceRole(std::string* why) {
  const aws::HttpEndpoint& imds = sources_.imds;
  const std::string where = "instance metadata at " + imds.scheme + "://" + imds.HostHeader();
  aws::HttpRequest token_request;
  token_request.method = "PUT";
  token_request.target = "/latest/api/token";
  token_request.headers = {{"X-aws-ec2-metadata-token-ttl-seconds", "21600"}};
  auto token = sources_.transport->Send(imds, token_request);
  if (!token.ok() || token.value().status != 200) {
    *why = where + " (" +
           (token.ok() ? "token request answered HTTP " + std::to_string(token.value().status)
                       : "no answer: " + token.error().message) +
           ")";
    return Found::kNo;
  }
  const std::string session = token.value().body;
  auto roles =
      ImdsGet(*sources_.transport, imds, session, "/latest/meta-data/iam/security-credentials/");
  if (!roles.ok() || roles.value().status != 200 || Trim(roles.value().body).empty()) {
    *why = where + " (no instance role)";
    return Found::kNo;
  }
  const std::string role = Trim(roles.value().body.substr(0, roles.value().body.find('\n')));
  auto keys = ImdsGet(*sources_.transport, imds, session,
                      "/latest/meta-data/iam/security-credentials/" + role);
  const nlohmann::json doc = keys.ok() && keys.value().status == 200
                                 ? nlohmann::json::parse(keys.value().body, nullptr, false)
                                 : nlohmann::json();
  if (!doc.is_object() || !doc.value("AccessKeyId", nlohmann::json()).is_string() ||
      !doc.value("SecretAccessKey", nlohmann::json()).is_string()) {
    *why = where + " (role '" + role + "' gave no keys)";
    return Found::kNo;
  }
  credentials_ = {doc["AccessKeyId"].get<std::string>(), doc["SecretAccessKey"].get<std::string>(),
                  doc.value("Token", std::string())};
  expiration_ = ParseIso8601(doc.value("Expiration", std::string()));
  role_ = role;
  from_instance_role_ = true;
  source_ =
      "instance role '" + role + "' (IMDSv2 at " + imds.scheme + "://" + imds.HostHeader() + ")";
  return Found::kYes;
}

PluginStatus CredentialChain::Resolve() {
  std::lock_guard lock(mutex_);
  from_instance_role_ = false;
  PluginStatus error;
  std::string looked;
  auto note = [&looked](const std::string& why) { looked += (looked.empty() ? "" : "; ") + why; };
  std::string why;
  if (FromEnvironment(&why, &error) == Found::kYes) return PluginStatus::Ok();
  if (!error.ok()) return error;
  note(why);
  if (FromSharedFile(&why, &error) == Found::kYes) return PluginStatus::Ok();
  if (!error.ok()) return error;
  note(why);
  const char* disabled = sources_.getenv("AWS_EC2_METADATA_DISABLED");
  if (sources_.imds.host.empty() || (disabled != nullptr && std::string(disabled) == "true")) {
    note("instance metadata (off)");
  } else {
    if (FromInstanceRole(&why) == Found::kYes) return PluginStatus::Ok();
    note(why);
  }
  return PluginStatus::Error(TESSERA_FAILED_PRECONDITION,
                             "no AWS credentials found: looked in " + looked);
}

aws::Credentials CredentialChain::Current() {
  std::lock_guard lock(mutex_);
  if (from_instance_role_ && expiration_ != std::chrono::system_clock::time_point{} &&
      sources_.now() > expiration_ - std::chrono::minutes(5)) {
    const aws::Credentials old = credentials_;
    std::string why;
    if (FromInstanceRole(&why) == Found::kNo) credentials_ = old;
  }
  return credentials_;
}

std::string CredentialChain::source() const {
  std::lock_guard lock(mutex_);
  return source_;
}

}  // namespace tessera::aws_ec2
