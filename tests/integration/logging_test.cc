// Options::log: each scheduler's lines reach its own sink at or above its level, and the library
// writes nothing to stdout, with a sink or without one (stderr).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "integration/fixture.h"
#include "support/faulty_vfs.h"
#include "tessera/logging.h"

namespace tessera {
namespace {

using namespace testing;

struct Line {
  LogLevel level;
  std::string message;
};

// A thread-safe sink that keeps what it gets.
class RecordingSink {
 public:
  LogSink Sink() {
    return [this](LogLevel level, std::string_view message) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back({level, std::string(message)});
    };
  }
  std::vector<Line> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  std::string Joined() {
    std::string all;
    for (const Line& line : lines())
      all += std::string(LogLevelName(line.level)) + ": " + line.message + "\n";
    return all;
  }
  bool Has(LogLevel level, const std::string& part) {
    for (const Line& line : lines()) {
      if (line.level == level && line.message.find(part) != std::string::npos) return true;
    }
    return false;
  }

 private:
  std::mutex mu_;
  std::vector<Line> lines_;
};

// Everything written to file descriptor 1 while it lives, by anyone in the process.
class StdoutCapture {
 public:
  explicit StdoutCapture(const std::string& path) : path_(path) {
    std::fflush(stdout);
    saved_ = ::dup(1);
    const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(file >= 0);
    ::dup2(file, 1);
    ::close(file);
  }
  ~StdoutCapture() { Restore(); }
  // Puts stdout back and returns what was written meanwhile.
  std::string Restore() {
    if (saved_ < 0) return captured_;
    std::fflush(stdout);
    ::dup2(saved_, 1);
    ::close(saved_);
    saved_ = -1;
    std::FILE* file = std::fopen(path_.c_str(), "rb");
    char buffer[4096];
    size_t n = 0;
    while (file != nullptr && (n = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
      captured_.append(buffer, n);
    }
    if (file != nullptr) std::fclose(file);
    return captured_;
  }

 private:
  std::string path_;
  int saved_ = -1;
  std::string captured_;
};

Options StoreAt(const std::string& path) {
  Options options;
  options.store.path = path;
  options.simulated_cluster = OneNode(4);
  return options;
}

// Makes the engine fail a store write (its cancel of a pending job), which it logs as an error,
// and lets the store recover.
void FailOneEngineWrite(TestScheduler& t, FaultyVfs& vfs) {
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, QueueSpec("team"));
  MustSubmit(s, JobSpecBuilder("team").Gpus(4).Build());
  const uint64_t pending = MustSubmit(s, JobSpecBuilder("team").Gpus(4).Build()).id();
  t->WaitIdle();
  vfs.FailNth(FaultyVfs::Op::kWrite, 1, /*persistent=*/true, FaultyVfs::Failure::kDiskFull);
  CHECK(s->Cancel(pending).status().code() == StatusCode::kResourceExhausted);
  t->WaitIdle();
  vfs.Disarm();
  t.clock->AdvanceUs(2'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, pending).status().state() == v1::CANCELLED);
}

TEST_CASE("logging: a store write that fails reaches the scheduler's own sink, not another's") {
  ScratchDir dir;
  FaultyVfs vfs;  // outlives the schedulers' connections.
  StdoutCapture stdout_capture(dir.File("stdout"));
  RecordingSink first_sink;
  RecordingSink second_sink;
  {
    Options first_options = StoreAt(dir.File("first.db"));
    first_options.log.sink = first_sink.Sink();
    Options second_options = StoreAt(dir.File("second.db"));
    second_options.log.sink = second_sink.Sink();
    auto first = Open(first_options);
    auto second = Open(second_options);
    FailOneEngineWrite(first, vfs);
  }
  const std::string written = stdout_capture.Restore();
  CHECK_MESSAGE(first_sink.Has(LogLevel::kError, "store write failed, pausing decisions"),
                first_sink.Joined());
  CHECK_MESSAGE(second_sink.lines().empty(), second_sink.Joined());
  CHECK_MESSAGE(written.empty(), written);
}

TEST_CASE("logging: lines below the level are not passed; kOff passes none") {
  ScratchDir dir;
  FaultyVfs vfs;
  RecordingSink sink;
  Options options = StoreAt(dir.File("state.db"));
  options.log.sink = sink.Sink();
  options.log.level = LogLevel::kOff;
  {
    auto t = Open(options);
    FailOneEngineWrite(t, vfs);
  }
  CHECK(sink.lines().empty());
}

TEST_CASE("logging: with no sink the library writes to stderr, never to stdout") {
  ScratchDir dir;
  FaultyVfs vfs;
  StdoutCapture stdout_capture(dir.File("stdout"));
  {
    auto t = Open(StoreAt(dir.File("state.db")));
    FailOneEngineWrite(t, vfs);
  }
  const std::string written = stdout_capture.Restore();
  CHECK_MESSAGE(written.empty(), written);
}

TEST_CASE("logging: a sink that throws loses its line to stderr; the scheduler carries on") {
  ScratchDir dir;
  FaultyVfs vfs;
  Options options = StoreAt(dir.File("state.db"));
  std::atomic<int> calls{0};
  options.log.sink = [&calls](LogLevel, std::string_view) {
    ++calls;
    throw std::runtime_error("the host's logger is broken");
  };
  auto t = Open(options);
  FailOneEngineWrite(t, vfs);
  CHECK(calls > 0);
}

#if TESSERA_HAVE_BACKEND_PLUGINS
TEST_CASE("logging: what a plugin logs reaches the sink with the plugin's name and level") {
  RecordingSink info_sink;
  RecordingSink warning_sink;
  auto options_with = [](RecordingSink& sink, LogLevel level) {
    Options options;
    options.plugin_dirs = {TESSERA_PLUGIN_DIR};
    PluginOptions plugin;
    plugin.plugin = "sim";
    plugin.config = R"({"groups":[{"namePrefix":"n","count":2,"cpuMilli":8000,)"
                    R"("memoryMib":16384,"gpus":2,"gpuModel":"A100","gpuMemoryMib":81920}]})";
    options.executor_plugin = plugin;
    options.log.sink = sink.Sink();
    options.log.level = level;
    return options;
  };
  {
    auto info = Open(options_with(info_sink, LogLevel::kInfo));
    auto warning = Open(options_with(warning_sink, LogLevel::kWarning));
  }
  CHECK_MESSAGE(info_sink.Has(LogLevel::kInfo, "[sim] sim: 2 nodes, 4 GPUs"), info_sink.Joined());
  CHECK(!warning_sink.Has(LogLevel::kInfo, "[sim]"));
}
#endif

}  // namespace
}  // namespace tessera
