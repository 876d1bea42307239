// One HTTP/1.1 exchange over a connected stream, plain or TLS, with deadlines: what tessctl's
// plain client (http_client.cc) and its TLS module (tls_module.cc) both do once connected.
//
// Beast's deadlines (expires_after) bound asynchronous operations only; blocking calls would wait
// for ever on a server that accepts and never answers. So every step runs asynchronously on the
// call's own io_context, which runs until the step is done or its deadline has passed, and a
// failed step throws beast::system_error like the blocking call would.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "http_client.h"

namespace tessera::cli::exchange {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

inline constexpr std::chrono::seconds kConnectTimeout{5};

inline void RunStep(asio::io_context& io, const beast::error_code& result) {
  io.run();
  io.restart();
  if (result) throw beast::system_error(result);
}

template <typename Endpoints>
void Connect(asio::io_context& io, beast::tcp_stream& stream, const Endpoints& endpoints,
             std::chrono::milliseconds timeout) {
  beast::error_code result;
  stream.expires_after(std::min<std::chrono::milliseconds>(kConnectTimeout, timeout));
  stream.async_connect(endpoints, [&result](beast::error_code ec, const auto&) { result = ec; });
  RunStep(io, result);
}

inline bool IsTimeout(const beast::error_code& ec) {
  return ec == beast::error::timeout || ec == asio::error::timed_out;
}

// Writes `request` (a whole serialized HTTP request) and reads the response over a connected
// plain or TLS stream: the whole response within `timeout` from now, or, with a `sink`, a 2xx
// body piece by piece into it, each piece within `timeout`.
template <typename Stream>
void Exchange(asio::io_context& io, Stream& stream, const std::string& request,
              std::chrono::milliseconds timeout, const BodySink* sink, HttpResponse* result) {
  beast::get_lowest_layer(stream).expires_after(timeout);
  beast::error_code step;
  asio::async_write(stream, asio::buffer(request),
                    [&step](beast::error_code ec, size_t) { step = ec; });
  RunStep(io, step);
  beast::flat_buffer buffer;
  if (sink == nullptr) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    http::async_read(stream, buffer, parser, [&step](beast::error_code ec, size_t) { step = ec; });
    RunStep(io, step);
    result->status = static_cast<int>(parser.get().result_int());
    result->content_type = std::string(parser.get()[http::field::content_type]);
    result->body = std::move(parser.get().body());
    return;
  }
  http::response_parser<http::buffer_body> parser;
  // No limit; not boost::none, which Boost 1.74 compares as "exceeded" for a known length.
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  http::async_read_header(stream, buffer, parser,
                          [&step](beast::error_code ec, size_t) { step = ec; });
  RunStep(io, step);
  result->status = static_cast<int>(parser.get().result_int());
  const bool to_sink = result->status >= 200 && result->status < 300;
  const std::optional<uint64_t> total =
      parser.content_length() ? std::optional<uint64_t>(*parser.content_length()) : std::nullopt;
  uint64_t received = 0;
  std::vector<char> piece(1 << 16);
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    beast::get_lowest_layer(stream).expires_after(timeout);
    http::async_read(stream, buffer, parser, [&step](beast::error_code ec, size_t) { step = ec; });
    io.run();
    io.restart();
    if (step && step != http::error::need_buffer) throw beast::system_error(step);
    const size_t got = piece.size() - parser.get().body().size;
    if (!to_sink) {
      result->body.append(piece.data(), got);
      continue;
    }
    if (got > 0 && !sink->write(piece.data(), got)) {
      throw beast::system_error(asio::error::operation_aborted);
    }
    received += got;
    if (sink->progress) sink->progress(received, total);
  }
}

// The transport error of a failed exchange, as tessctl prints it; empty when `ec` needs more
// context than the code (a failed TLS handshake: the module says why).
inline std::string TransportError(const beast::error_code& ec, std::chrono::milliseconds timeout) {
  if (ec == asio::error::operation_aborted) return "the received data could not be stored";
  if (IsTimeout(ec)) return "no reply within " + std::to_string(timeout.count()) + " ms";
  return ec.message();
}

}  // namespace tessera::cli::exchange
