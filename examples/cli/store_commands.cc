// tessctl backup and restore: the daemon's online backup downloaded to a file, and a backup put
// back in place of a stopped daemon's store.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <utility>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "commands.h"
#include "progress.h"
#include "tessera/restore.h"

namespace tessera::cli {
namespace {

// {"key": "value", ...} with the values escaped as JSON needs (file names may hold quotes).
std::string JsonObject(const std::vector<std::pair<std::string, std::string>>& fields) {
  google::protobuf::Struct object;
  for (const auto& [key, value] : fields) {
    (*object.mutable_fields())[key].set_string_value(value);
  }
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(object, &json);
  return json;
}

std::string Percent(uint64_t done, uint64_t total) {
  if (total == 0) return "";
  char text[16];
  std::snprintf(text, sizeof(text), " (%.0f%%)", 100.0 * static_cast<double>(done) / total);
  return text;
}

}  // namespace

ExitCode Backup(const ApiClient& api, const Output& output, const std::string& file, bool quiet) {
  const std::string partial = file + ".partial";
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::cerr << "tessctl: cannot write " << partial << ": " << std::strerror(errno) << '\n';
    return ExitCode::kUsage;
  }
  Progress progress("backup", quiet);
  uint64_t written = 0;
  std::string write_error;
  BodySink sink;
  sink.write = [&](const char* data, size_t size) {
    while (size > 0) {
      const ssize_t n = ::write(fd, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        write_error = std::strerror(errno);
        return false;
      }
      data += n;
      size -= static_cast<size_t>(n);
      written += static_cast<uint64_t>(n);
    }
    return true;
  };
  sink.progress = [&](uint64_t received, std::optional<uint64_t> total) {
    progress.Update(HumanBytes(received) +
                    (total ? " of " + HumanBytes(*total) + Percent(received, *total) : ""));
  };
  const auto start = std::chrono::steady_clock::now();
  CallResult result = api.Backup(sink);
  // The copy is renamed into place only once it is on disk, so FILE is never a partial backup.
  const bool synced = result.ok() && ::fsync(fd) == 0;
  ::close(fd);
  std::error_code ignored;
  if (!result.ok() || !synced) {
    std::filesystem::remove(partial, ignored);
    if (!write_error.empty()) {
      std::cerr << "tessctl: cannot write " << partial << ": " << write_error << '\n';
      return ExitCode::kUsage;
    }
    if (!result.ok()) {
      std::cerr << "tessctl: " << result.error << '\n';
      return result.code;
    }
    std::cerr << "tessctl: cannot sync " << partial << ": " << std::strerror(errno) << '\n';
    return ExitCode::kUsage;
  }
  std::error_code renamed;
  std::filesystem::rename(partial, file, renamed);
  if (renamed) {
    std::cerr << "tessctl: cannot rename " << partial << " to " << file << ": " << renamed.message()
              << '\n';
    return ExitCode::kUsage;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char took[32];
  std::snprintf(took, sizeof(took), "%.1f s", seconds);
  progress.Finish(HumanBytes(written) + " in " + took);
  if (output.json) {
    std::cout << JsonObject({{"file", file}, {"bytes", std::to_string(written)}}) << '\n';
  } else {
    std::cout << file << '\n';
  }
  return ExitCode::kOk;
}

ExitCode Restore(const Output& output, const std::string& file, const std::string& store,
                 bool discard_current, bool quiet) {
  std::string phase;
  std::unique_ptr<Progress> progress;
  RestoreOptions options;
  options.discard_current = discard_current;
  options.progress = [&](const RestoreProgress& p) {
    if (p.phase != phase) {
      if (progress) progress->Finish("done");
      phase = p.phase;
      progress = std::make_unique<Progress>(phase, quiet);
    }
    progress->Update(
        std::to_string(p.pages_done) + " of " + std::to_string(p.pages_total) + " pages" +
        Percent(static_cast<uint64_t>(p.pages_done), static_cast<uint64_t>(p.pages_total)));
  };
  const Status status = RestoreStore(file, store, options);
  if (!status.ok()) {
    if (progress) progress->Finish("failed");
    std::cerr << "tessctl: restore: " << status.message() << '\n';
    // A store in use means the daemon still runs: the server-side condition, not a usage error.
    return status.code() == StatusCode::kUnavailable ? ExitCode::kUnavailable : ExitCode::kUsage;
  }
  if (progress) progress->Finish("done");
  // Where the replaced store went; empty when there was none or it was discarded.
  std::string saved = store + ".pre-restore";
  if (discard_current || !std::filesystem::exists(saved)) saved.clear();
  if (output.json) {
    std::cout << JsonObject({{"store", store}, {"previous", saved}}) << '\n';
  } else {
    std::cout << "restored " << file << " into " << store;
    if (!saved.empty()) {
      std::cout << "; the previous store is in " << saved;
    }
    std::cout << '\n';
  }
  return ExitCode::kOk;
}

}  // namespace tessera::cli
