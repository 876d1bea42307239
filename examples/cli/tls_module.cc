// libtessctl-tls.so: tessctl's HTTPS, loaded only for https:// servers (tls_module_abi.h says
// why). It owns everything that needs OpenSSL: the client context, the certificate and host
// name checks, the handshake and its error messages.
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <string>

#include "http_exchange.h"
#include "tls_module_abi.h"

namespace tessera::cli {
namespace {

using namespace exchange;  // NOLINT: the exchange helpers, asio, beast and http.
namespace ssl = asio::ssl;

void Set(const tessctl_tls_output* out, tessctl_tls_field field, const std::string& text) {
  out->set(out->context, field, text.data(), text.size());
}

// Asks OpenSSL to check the certificate against `host` during the handshake: the DNS names (or
// IP addresses, for an address literal) in its subjectAltName. Also sends the name as SNI.
void ExpectPeerName(SSL* ssl, const std::string& host) {
  beast::error_code ec;
  asio::ip::make_address(host, ec);
  if (!ec) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
    return;
  }
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  SSL_set1_host(ssl, host.c_str());
  SSL_set_tlsext_host_name(ssl, host.c_str());
}

// What the user can do about a certificate that failed verification, when it is not obvious.
std::string VerifyHint(long verify_result) {
  switch (verify_result) {
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      return " (--cacert FILE trusts a private CA or a self-signed certificate)";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return " (the certificate's subjectAltName does not name the URL's host)";
    default:
      return "";
  }
}

// The module's sink, over tessctl's C one.
BodySink SinkOf(const tessctl_tls_sink* sink) {
  BodySink body;
  body.write = [sink](const char* data, size_t size) {
    return sink->write(sink->context, data, size) != 0;
  };
  if (sink->progress != nullptr) {
    body.progress = [sink](uint64_t received, std::optional<uint64_t> total) {
      sink->progress(sink->context, received, total ? static_cast<int64_t>(*total) : -1);
    };
  }
  return body;
}

int Perform(ssl::context& context, const tessctl_tls_request& request, const tessctl_tls_sink* sink,
            const tessctl_tls_output* out) {
  const std::chrono::milliseconds timeout(request.timeout_ms);
  const std::string host = request.host;
  const std::string bytes(request.bytes, request.size);
  const std::optional<BodySink> body = sink != nullptr && sink->write != nullptr
                                           ? std::optional<BodySink>(SinkOf(sink))
                                           : std::nullopt;
  HttpResponse result;
  asio::io_context io;
  std::optional<beast::ssl_stream<beast::tcp_stream>> stream;
  bool handshaking = false;
  try {
    asio::ip::tcp::resolver resolver(io);
    const auto endpoints = resolver.resolve(host, request.port);
    stream.emplace(io, context);
    ExpectPeerName(stream->native_handle(), host);
    Connect(io, beast::get_lowest_layer(*stream), endpoints, timeout);
    handshaking = true;
    beast::error_code handshake;
    beast::get_lowest_layer(*stream).expires_after(timeout);
    stream->async_handshake(ssl::stream_base::client,
                            [&handshake](beast::error_code ec) { handshake = ec; });
    RunStep(io, handshake);
    handshaking = false;
    Exchange(io, *stream, bytes, timeout, body ? &*body : nullptr, &result);
    // No close_notify exchange: the response is complete by its Content-Length, so a truncation
    // cannot go unnoticed, and waiting for the server's close_notify would only add a round trip.
    beast::get_lowest_layer(*stream).close();
  } catch (const beast::system_error& e) {
    std::string why = TransportError(e.code(), timeout);
    if (handshaking && IsTimeout(e.code())) {
      why += " (during the TLS handshake)";
    } else if (handshaking) {
      why = "TLS handshake failed: " + e.code().message();
      const long verify = SSL_get_verify_result(stream->native_handle());
      if (verify != X509_V_OK) {
        why = std::string("TLS certificate verification failed: ") +
              X509_verify_cert_error_string(verify) + VerifyHint(verify);
      }
    }
    Set(out, TESSCTL_TLS_ERROR, why);
    return 0;
  }
  if (!result.content_type.empty()) Set(out, TESSCTL_TLS_CONTENT_TYPE, result.content_type);
  if (!result.body.empty()) Set(out, TESSCTL_TLS_BODY, result.body);
  return result.status;
}

}  // namespace
}  // namespace tessera::cli

extern "C" {

__attribute__((visibility("default"))) int tessctl_tls_abi() { return TESSCTL_TLS_ABI; }

__attribute__((visibility("default"))) void* tessctl_tls_open(const char* ca_file, int insecure,
                                                              const tessctl_tls_output* out) {
  namespace ssl = boost::asio::ssl;
  try {
    auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
    if (insecure != 0) {
      context->set_verify_mode(ssl::verify_none);
      return context.release();
    }
    context->set_verify_mode(ssl::verify_peer);
    boost::beast::error_code ec;
    const std::string file = ca_file == nullptr ? "" : ca_file;
    if (file.empty()) {
      context->set_default_verify_paths(ec);
    } else {
      context->load_verify_file(file, ec);
    }
    if (ec) {
      tessera::cli::Set(out, TESSCTL_TLS_ERROR,
                        file.empty()
                            ? "cannot load the system's trusted certificates: " + ec.message()
                            : "--cacert " + file + ": not a readable PEM certificate file");
      return nullptr;
    }
    return context.release();
  } catch (const std::exception& e) {
    tessera::cli::Set(out, TESSCTL_TLS_ERROR, std::string("TLS set-up failed: ") + e.what());
    return nullptr;
  }
}

__attribute__((visibility("default"))) void tessctl_tls_close(void* context) {
  delete static_cast<boost::asio::ssl::context*>(context);
}

__attribute__((visibility("default"))) int tessctl_tls_perform(void* context,
                                                               const tessctl_tls_request* request,
                                                               const tessctl_tls_sink* sink,
                                                               const tessctl_tls_output* out) {
  try {
    return tessera::cli::Perform(*static_cast<boost::asio::ssl::context*>(context), *request, sink,
                                 out);
  } catch (const std::exception& e) {  // nothing may cross into tessctl's C++ runtime.
    tessera::cli::Set(out, TESSCTL_TLS_ERROR, e.what());
    return 0;
  }
}

}  // extern "C"
