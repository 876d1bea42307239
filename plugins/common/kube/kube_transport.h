// KubeTransport: HTTP(S) to one API server over a pool of keep-alive connections
// (http_connection.h). TLS is set up once from the ClusterConfig: the server's chain checked
// against the cluster CA (or the system store), the host name or `tls-server-name` checked
// against the certificate and sent as SNI, a client certificate presented when configured;
// `insecure-skip-tls-verify` turns verification off. Plain http is for tests and kubectl proxy.
//
// Each call takes an idle connection from the pool or opens a new one, so several threads (one
// holding a watch open for minutes, others sending requests) never wait for each other; at
// most `max_idle_connections` are kept between calls, each for at most `idle_timeout`. A
// request whose reused connection turns out to have been closed by the server while idle is
// sent once more on a fresh connection when that cannot run it twice (nothing was written, or
// the method is idempotent), as Go's net/http does. Authentication headers are the caller's
// (kube_client.h); the transport adds only Host, User-Agent and Content-Length.
//
// Thread-safe: Send() and OpenStream() may be called from any number of threads at once.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kube/cluster_config.h"
#include "kube/http_connection.h"
#include "kube/http_types.h"
#include "kube/kube_error.h"

namespace tessera::kube {

struct TransportOptions {
  // Idle connections kept for reuse; more than the number of threads that send requests at once
  // buys nothing.
  int max_idle_connections = 16;
  // An idle connection older than this is closed instead of reused (the API server closes idle
  // connections too, and a reused dead one costs a failed write).
  std::chrono::seconds idle_timeout = std::chrono::seconds(90);
  std::string user_agent = "tessera-kube/1";
};

class ConnectionPool;

// A reply whose body is read as it arrives (a watch). The connection goes back to the pool
// when the stream is destroyed after its body was read to the end; otherwise it is closed.
class ResponseStream {
 public:
  ResponseStream(std::shared_ptr<ConnectionPool> pool, std::unique_ptr<HttpConnection> connection,
                 HttpResponse head);
  ~ResponseStream();
  ResponseStream(const ResponseStream&) = delete;
  ResponseStream& operator=(const ResponseStream&) = delete;

  int status() const { return head_.status; }
  const HttpResponse& head() const { return head_; }
  // Appends the next piece of the body (up to 64 KiB) to `out`; false at the end of the body.
  KubeOutcome<bool> Read(std::string* out, const CallLimits& limits);
  // The rest of the body; kMalformedReply when it passes `max_bytes`.
  KubeOutcome<std::string> ReadAll(const CallLimits& limits, std::size_t max_bytes);

 private:
  std::shared_ptr<ConnectionPool> pool_;
  std::unique_ptr<HttpConnection> connection_;
  HttpResponse head_;
};

class KubeTransport {
 public:
  // kConfig when the URL or the TLS material (CA, client certificate or key) is unusable.
  static KubeOutcome<std::unique_ptr<KubeTransport>> Create(const ClusterConfig& config,
                                                            const TransportOptions& options = {});
  ~KubeTransport();

  // One request, its whole reply (any HTTP status); kTransport / kCancelled when no complete
  // reply came back within the limits.
  KubeOutcome<HttpResponse> Send(const HttpRequest& request, const CallLimits& limits);
  // One request; returns once the reply's headers are in, the body left to read.
  KubeOutcome<std::unique_ptr<ResponseStream>> OpenStream(const HttpRequest& request,
                                                          const CallLimits& limits);

  const ServerUrl& url() const;
  // Connections opened so far (tests check that keep-alive reuses them).
  int ConnectionsOpened() const;

 private:
  KubeTransport(ConnectTarget target, TransportOptions options);
  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace tessera::kube
