#include <unistd.h>

#include <atomic>
#include <ctime>
#include <filesystem>

#include "router.h"

namespace tesserad {

namespace beast = boost::beast;
namespace http = beast::http;

// The backup is written next to the store (the same file system, a directory the daemon can
// write), opened, and unlinked at once: the open file streams to the client and its space is
// freed when the response is done, even if the daemon dies meanwhile.
ApiResponse Router::Backup() {
  if (!principal_.admin) return Forbidden(request_, "only an admin token may take backups");
  static std::atomic<uint64_t> taken{0};
  const std::string path = config_.store().path() + ".backup-" + std::to_string(getpid()) + "-" +
                           std::to_string(++taken);
  if (tessera::Status s = scheduler_.Backup(path); !s.ok()) return ErrorFor(request_, s);

  FileResponse response{http::status::ok, request_.version()};
  beast::error_code ec;
  response.body().open(path.c_str(), beast::file_mode::scan, ec);
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  if (ec) {
    return ErrorFor(request_, tessera::UnavailableError("backup: cannot read the copy '" + path +
                                                        "': " + ec.message()));
  }
  char name[64];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(name, sizeof(name), "tessera-backup-%Y%m%dT%H%M%SZ.db", &utc);
  response.set(http::field::server, "tesserad");
  response.set(http::field::content_type, "application/vnd.sqlite3");
  response.set(http::field::content_disposition,
               std::string("attachment; filename=\"") + name + "\"");
  response.keep_alive(request_.keep_alive());
  response.prepare_payload();
  return response;
}

// SQLite's check of the live store (Scheduler::CheckStore); 409 FAILED_PRECONDITION names the
// problems of a damaged one.
HttpResponse Router::CheckStore(const Query& query) {
  if (!principal_.admin) return Forbidden(request_, "only an admin token may check the store");
  const std::string level = First(query, "level").value_or("quick");
  if (level != "quick" && level != "full") {
    return ErrorFor(request_, tessera::InvalidFieldError(
                                  "level", "must be quick or full, got '" + level + "'"));
  }
  tessera::Status status = scheduler_.CheckStore(level == "full" ? tessera::StoreCheck::kFull
                                                                 : tessera::StoreCheck::kQuick);
  if (!status.ok()) return ErrorFor(request_, status);
  return MakeResponse(request_, 200, "application/json",
                      "{\"ok\":true,\"level\":\"" + level + "\"}\n");
}

}  // namespace tesserad
