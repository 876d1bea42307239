// The server side of tesserad's TLS: an Asio SSL context built from server.tls_cert_file and
// server.tls_key_file, refusing anything that would only fail later, at the first handshake.
//
// Thread safety: LoadServerTlsContext is a plain function; the context it returns is shared by
// every connection and only read once built (OpenSSL allows that from many threads).
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "tessera/status.h"

namespace tesserad {

// Loads a PEM certificate chain (leaf first) and its private key into a TLS 1.2+ server context.
// Errors: INVALID_ARGUMENT naming the field: a file is missing or unreadable, is not PEM of the
// right kind, or the key does not match the certificate.
tessera::StatusOr<std::unique_ptr<boost::asio::ssl::context>> LoadServerTlsContext(
    const std::string& cert_file, const std::string& key_file);

}  // namespace tesserad
