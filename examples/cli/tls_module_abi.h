// The C interface between tessctl and its TLS module (libtessctl-tls.so).
//
// tessctl speaks plain HTTP itself and loads the module, with OpenSSL behind it, only for an
// https:// server: the dynamic loader's work on libssl and libcrypto (about 1.3 ms of CPU a start
// on the 2-core machines we measure on, a quarter of a whole `tessctl submit`) is then paid only
// by the commands that use TLS, and OpenSSL stays the system's shared library, so its security
// updates apply without rebuilding tessctl. Only C types cross: tessctl links its C++ runtime
// statically, and the module has its own, so no C++ object, allocation or exception may pass
// between them.
//
// Version: TESSCTL_TLS_ABI below; tessctl refuses a module that reports another.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TESSCTL_TLS_ABI 1

// What tessctl hands back to the module's calls: a place for strings the module produces.
enum tessctl_tls_field {
  TESSCTL_TLS_ERROR = 0,         // why the call failed (TLS set-up or transport error).
  TESSCTL_TLS_BODY = 1,          // a piece of the response body (appended).
  TESSCTL_TLS_CONTENT_TYPE = 2,  // the response's Content-Type.
};

struct tessctl_tls_output {
  void* context;
  void (*set)(void* context, enum tessctl_tls_field field, const char* data, size_t size);
};

// Where a 2xx body goes piece by piece (a download); null `write`: the body is returned whole
// through TESSCTL_TLS_BODY.
struct tessctl_tls_sink {
  void* context;
  // Stores one piece; 0 aborts the transfer.
  int (*write)(void* context, const char* data, size_t size);
  // Bytes received so far, and the total (-1 when the server did not say). May be null.
  void (*progress)(void* context, uint64_t received, int64_t total);
};

struct tessctl_tls_request {
  const char* host;
  const char* port;
  const char* bytes;  // the whole serialized HTTP/1.1 request.
  size_t size;
  int64_t timeout_ms;
};

// The module's version: TESSCTL_TLS_ABI.
typedef int (*tessctl_tls_abi_fn)(void);
// Makes the TLS client context: the PEM certificates in `ca_file` trusted (empty: the system's
// store), or no verification at all when `insecure`. Null, with TESSCTL_TLS_ERROR set, when the
// file cannot be used.
typedef void* (*tessctl_tls_open_fn)(const char* ca_file, int insecure,
                                     const struct tessctl_tls_output* out);
typedef void (*tessctl_tls_close_fn)(void* context);
// One request over a new TLS connection (TLS 1.2+, the certificate checked against `host`
// unless the context is insecure). Returns the HTTP status, or 0 when no response came back
// (TESSCTL_TLS_ERROR says why: refused, timed out, handshake or certificate verification).
typedef int (*tessctl_tls_perform_fn)(void* context, const struct tessctl_tls_request* request,
                                      const struct tessctl_tls_sink* sink,
                                      const struct tessctl_tls_output* out);

#ifdef __cplusplus
}
#endif
