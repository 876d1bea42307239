// TlsTransport: tessctl's HTTPS, through its TLS module (libtessctl-tls.so) loaded on first need.
//
// tessctl links no OpenSSL itself (tls_module_abi.h says why). For an https:// server it loads
// the module, which makes the client context at once (so a bad --cacert is a usage error before
// any request) and then carries each request over a new TLS connection. The module is looked
// for in TESSCTL_TLS_MODULE (a path), beside the tessctl executable (a build tree), in
// ../lib/tessera/ and ../lib/<multiarch>/tessera/ from it (an installed tree), and last by the
// dynamic loader's own search.
//
// Thread safety: one TlsTransport may serve several threads' requests at once.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "http_client.h"

namespace tessera::cli {

class TlsTransport {
 public:
  // Loads the module and makes its client context from `options`. Null, with `error` set, when
  // the module cannot be found or loaded, or the context cannot be made.
  static std::shared_ptr<TlsTransport> Load(const TlsOptions& options, std::string* error);
  ~TlsTransport();
  TlsTransport(const TlsTransport&) = delete;
  TlsTransport& operator=(const TlsTransport&) = delete;

  // Sends `request` (a whole serialized HTTP request) to host:port over TLS and reads the
  // response, as HttpClient does over plain TCP; a 2xx body goes to `sink` when given.
  HttpResponse Perform(const std::string& host, const std::string& port, const std::string& request,
                       std::chrono::milliseconds timeout, const BodySink* sink) const;

 private:
  struct Module;
  TlsTransport(std::unique_ptr<Module> module, void* context);

  std::unique_ptr<Module> module_;
  void* context_;
};

}  // namespace tessera::cli
