#include "tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace tesserad {
namespace {

namespace ssl = boost::asio::ssl;

constexpr char kCertField[] = "server.tls_cert_file";
constexpr char kKeyField[] = "server.tls_key_file";

tessera::Status Invalid(const char* field, const std::string& message) {
  return tessera::InvalidArgumentError(std::string(field) + ": " + message);
}

// Separate from the PEM parsing so that "no such file" is not reported as "not PEM".
tessera::Status CheckReadable(const char* field, const std::string& path) {
  std::ifstream file(path);
  if (!file) return Invalid(field, "cannot read " + path + ": " + std::strerror(errno));
  return tessera::Status::Ok();
}

}  // namespace

tessera::StatusOr<std::unique_ptr<ssl::context>> LoadServerTlsContext(const std::string& cert_file,
                                                                      const std::string& key_file) {
  TESSERA_RETURN_IF_ERROR(CheckReadable(kCertField, cert_file));
  TESSERA_RETURN_IF_ERROR(CheckReadable(kKeyField, key_file));

  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = context->native_handle();
  // TLS 1.0 and 1.1 are deprecated (RFC 8996); every client tessctl is built with speaks 1.2+.
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  context->set_options(ssl::context::default_workarounds | ssl::context::single_dh_use);
  // Without a callback OpenSSL would prompt on the terminal for an encrypted key's passphrase.
  context->set_password_callback(
      [](std::size_t, ssl::context::password_purpose) { return std::string(); });

  // The key goes in first: loading the chain afterwards silently drops a key that does not
  // match, which the check below then reports as a mismatch rather than a parse error.
  // Asio reports the first error OpenSSL queued: the root cause ("no start line", "bad decrypt").
  boost::system::error_code ec;
  context->use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec) {
    return Invalid(kKeyField, key_file + " is not an unencrypted PEM private key: " + ec.message());
  }
  context->use_certificate_chain_file(cert_file, ec);
  if (ec) {
    return Invalid(kCertField, cert_file + " is not a PEM certificate chain: " + ec.message());
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    ERR_clear_error();
    return Invalid(kKeyField, key_file + " does not match " + std::string(kCertField) + " " +
                                  cert_file + " (the first certificate in the chain)");
  }
  return context;
}

}  // namespace tesserad
