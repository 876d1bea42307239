// Private helpers of the daemon configuration (tessera/daemon_config.h): the embedded defaults
// and the parsing of server.listen, which tesserad also needs to bind its socket.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/daemon_config.h"
#include "tessera/status.h"

namespace tessera {

inline constexpr char kDefaultDaemonStorePath[] = "./var/tessera.db";
inline constexpr char kDefaultListenAddress[] = "127.0.0.1:8080";
inline constexpr int64_t kDefaultMaxRequestBytes = 1 << 20;
inline constexpr int64_t kDefaultRequestTimeoutMs = 30000;
inline constexpr int32_t kDefaultMaxConnections = 1000;
inline constexpr int32_t kDefaultMaxLongPollsPerToken = 16;
inline constexpr int64_t kDefaultMaxHeaderBytes = 16384;
inline constexpr int64_t kDefaultAnswerTimeoutMs = 30000;

// A host:port split. IPv6 hosts are written in brackets ("[::1]:8080"); `host` keeps them out.
struct ListenAddress {
  std::string host;
  uint16_t port = 0;  // 0: any free port (tests).
};

// Errors: INVALID_ARGUMENT "server.listen: '<text>' is not host:port" (or a bad port).
StatusOr<ListenAddress> ParseListenAddress(const std::string& text);

// True for localhost, 127.0.0.0/8 and ::1: addresses no other machine can reach.
bool IsLoopbackHost(const std::string& host);

}  // namespace tessera
