// PluginHostProcess: the scheduler's side of one tessera-plugin-host process, which runs one
// plugin in isolation (PluginOptions::isolate): a crash, a leak or a stuck call in the plugin
// takes down that process, never the scheduler.
//
// The process is spawned with one end of a socketpair on fd 3 and speaks the frames of
// wire.h. A reader thread owns the receiving side: it matches replies to waiting calls, hands
// the plugin's log and emit_event frames to the host API given to Init, and answers now_us
// requests from that API's clock (so a plugin sees the scheduler's clock, virtual or real).
//
// Callbacks reach the host API from Init until the reply to on_shutdown, a failed on_init,
// Abandon, or the loss of the process, whichever comes first; never after.
//
// Loss: when the socket closes or carries a malformed frame, the process is killed (if it still
// runs) and reaped, every call waiting or later made fails with UNAVAILABLE naming how it ended
// ("killed by signal 6 (Aborted)"), and the on_lost callback runs once.
//
// Thread-safety: every method may be called from any thread; Call may be called from several
// threads at once (the replies are matched by id).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "plugins/remote/wire.h"
#include "tessera/plugin/abi.h"
#include "tessera/status.h"

namespace tessera {

class PluginHostProcess {
 public:
  struct Reply {
    tessera_status status = TESSERA_INTERNAL;
    std::string payload;  // what the plugin wrote to its out sink.
    std::string error;    // what it wrote to its error sink, or why the call did not happen.
  };

  // Spawns `executable` for the plugin at `plugin_path` and waits, at most `deadline`, for its
  // hello. Errors: NOT_FOUND (no executable), UNAVAILABLE (it did not start or answer),
  // INVALID_ARGUMENT (it could not load the plugin; the message says why).
  static StatusOr<std::unique_ptr<PluginHostProcess>> Start(const std::string& executable,
                                                            const std::string& plugin_path,
                                                            std::chrono::milliseconds deadline,
                                                            plugin_wire::DescriptorInfo* info);
  // Closes the socket, then kills and reaps the process if it has not left.
  ~PluginHostProcess();
  PluginHostProcess(const PluginHostProcess&) = delete;
  PluginHostProcess& operator=(const PluginHostProcess&) = delete;

  // Calls on_init in the process with `config`; `host` (which must outlive the instance) gets
  // the plugin's callbacks from now on.
  Reply Init(const tessera_host_api* host, const std::string& config);
  // Sends one call and waits for its reply, without a deadline of its own (the caller's
  // PluginWorker times it). TESSERA_UNAVAILABLE once the process is lost.
  Reply Call(plugin_wire::Function function, const std::string& payload);
  // Gives up on the plugin: no callback reaches the host API after this returns, and the
  // process is killed, so calls in flight return UNAVAILABLE promptly.
  void Abandon();
  // `on_lost(why)` runs once when the process is lost (at once if it already is), on the reader
  // thread; not when the destructor closes the connection.
  void SetOnLost(std::function<void(const std::string& why)> on_lost);

  pid_t pid() const { return pid_; }
  bool lost() const;

 private:
  PluginHostProcess(pid_t pid, int fd, std::string plugin_path);
  void ReadLoop();
  void Send(const plugin_wire::Frame& frame);
  // The connection ended (`why`): kill and reap the process, fail everything waiting.
  void Lose(const std::string& why);

  const pid_t pid_;
  const int fd_;
  const std::string plugin_path_;
  std::thread reader_;
  std::mutex write_mu_;

  // Callbacks: the host API, while it may be called.
  std::mutex host_mu_;
  const tessera_host_api* host_ = nullptr;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::optional<plugin_wire::Frame> hello_;
  uint64_t next_call_id_ = 1;
  std::map<uint64_t, std::optional<Reply>> pending_;
  bool lost_ = false;
  bool reaped_ = false;
  bool closing_ = false;  // the destructor runs: the loss is expected, on_lost is not called.
  std::string lost_why_;
  std::function<void(const std::string&)> on_lost_;
};

// Where tessera-plugin-host is when PluginOptions::host_executable is empty: next to the
// shared libtessera (as in the build tree), else in the bin/ beside its lib/ (as installed,
// multiarch lib/<triplet>/ included).
// Errors: NOT_FOUND, naming the places looked at.
StatusOr<std::string> DefaultPluginHostExecutable();

}  // namespace tessera
