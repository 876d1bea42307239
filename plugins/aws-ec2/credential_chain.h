// CredentialChain: where the aws-ec2 provider's AWS credentials come from, looked for in the
// order of the AWS SDKs' default chain:
//
//   1. the environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN too, for
//      temporary keys); one of the two without the other is an error, not a fall-through;
//   2. the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials), the
//      profile named in the config, else AWS_PROFILE, else "default": aws_access_key_id,
//      aws_secret_access_key, aws_session_token;
//   3. the instance's role through the instance metadata service, IMDSv2 only (a session token
//      from PUT /latest/api/token, then /latest/meta-data/iam/security-credentials/<role>):
//      temporary keys, renewed five minutes before their Expiration.
//
// Resolve() finds the first that has credentials; when none has, its error names every place
// it looked and what it found there, so an operator sees one message, not a retry storm. Not
// checked here: whether EC2 accepts them (the provider's first call says, AuthFailure).
// Current() may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "aws/http_transport.h"
#include "aws/sigv4.h"
#include "tessera/plugin/plugin.h"

namespace tessera::aws_ec2 {

struct CredentialSources {
  std::function<const char*(const char*)> getenv = [](const char* name) {
    return std::getenv(name);
  };
  std::string shared_credentials_file;  // empty: the environment's, else ~/.aws/credentials
  std::string profile;                  // empty: AWS_PROFILE, else "default"
  // Empty host: skip the metadata service (config "off", or AWS_EC2_METADATA_DISABLED=true).
  aws::HttpEndpoint imds;
  std::shared_ptr<aws::HttpTransport> transport;  // null: a BeastHttpTransport, 2 s deadline
  std::function<std::chrono::system_clock::time_point()> now = [] {
    return std::chrono::system_clock::now();
  };
};

class CredentialChain {
 public:
  explicit CredentialChain(CredentialSources sources);

  // Errors: INVALID_ARGUMENT for half a key pair or an unreadable profile; FAILED_PRECONDITION
  // "no AWS credentials found: ..." when no source has any.
  plugin::PluginStatus Resolve();
  // The credentials to sign with now (instance-role keys renewed when near expiry; a renewal
  // that fails keeps the old keys, and EC2's AuthFailure then says so).
  aws::Credentials Current();
  // Where the credentials came from: "the environment", "profile 'p' of /root/.aws/credentials",
  // "instance role 'r' (IMDSv2 at http://169.254.169.254)".
  std::string source() const;

 private:
  enum class Found { kYes, kNo };
  Found FromEnvironment(std::string* why, plugin::PluginStatus* error);
  Found FromSharedFile(std::string* why, plugin::PluginStatus* error);
  Found FromInstanceRole(std::string* why);

  CredentialSources sources_;
  mutable std::mutex mutex_;
  aws::Credentials credentials_;
  std::string source_;
  bool from_instance_role_ = false;
  std::string role_;
  std::chrono::system_clock::time_point expiration_{};
};

}  // namespace tessera::aws_ec2
