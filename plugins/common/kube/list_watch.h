// ListWatch: keep up with one kind of object (pods of a namespace, all nodes, …) as client-go's
// reflector does, for a backend that needs every change and must not miss one.
//
//   1. List, page by page (`limit` / `continue`; a continue token that expired restarts the
//      list), and hand the handler a sync: the first time every object as added, later the
//      difference from what it knew (relist_diff.h).
//   2. Watch from the list's resourceVersion with allowWatchBookmarks and a server-side
//      timeoutSeconds, delivering ADDED / MODIFIED / DELETED as they come and saving the
//      resourceVersion of every event and bookmark.
//   3. When the watch ends (its timeout, a dropped connection, a broken line) watch again from
//      the last saved resourceVersion: nothing is missed and nothing repeated.
//   4. When the server says the resourceVersion is too old (410 Gone, as the HTTP status of the
//      watch or as an ERROR event in the stream), go back to 1: the relist's difference is
//      exactly the events the watch would have delivered, folded together.
//
// Failures (unreachable server, 5xx, 429, a watch ending at once) back off with full jitter;
// each is also reported to OnError for logging. Stop() ends it promptly, in the middle of a
// list, a watch read or a back-off.
//
// Threading: Start() runs the loop on a thread of its own; every handler call is made on that
// thread, one at a time, in the server's order, never while a lock of this class is held. A
// handler should hand the change to its backend's own queue and return (a slow handler holds
// the watch back, and the server drops watchers that fall too far behind, which is then a
// relist). Stop() may be called from any thread, a handler included (it then only asks, and
// the loop ends when the handler returns). Run() is the same loop on the caller's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <stop_token>
#include <string>
#include <thread>

#include "kube/kube_client.h"
#include "kube/relist_diff.h"
#include "kube/resource_path.h"
#include "kube/retry_policy.h"
#include "kube/watch_event.h"

namespace tessera::kube {

struct ListWatchOptions {
  Resource resource = Resource::Pods();
  std::string namespace_name;  // empty: all namespaces (or a cluster-scoped resource)
  std::string label_selector;
  std::string field_selector;
  // Page size of the lists; 0 lists in one reply.
  int page_size = 500;
  // The server ends each watch after this long (client-go picks 5–10 min); the loop then
  // watches again from the last resourceVersion.
  int watch_timeout_seconds = 300;
  // A watch that sends nothing (not even a bookmark) for this long past its timeout is taken
  // for dead and reopened.
  std::chrono::seconds read_grace = std::chrono::seconds(30);
  // Back-off between failed attempts (max_attempts is unused: the loop never gives up).
  RetryPolicy backoff{0, std::chrono::milliseconds(200), std::chrono::seconds(30),
                      std::chrono::seconds(60)};
};

// What a (re)list found.
struct ListSync {
  bool initial = false;          // the first list (every object in `diff.added`)
  RelistDiff diff;               // changes from what the handler was last told
  std::string resource_version;  // the list's; the watch starts from it
  std::size_t objects = 0;       // objects now known
};

class ListWatchHandler {
 public:
  virtual ~ListWatchHandler() = default;
  virtual void OnSync(const ListSync& sync) = 0;
  // ADDED, MODIFIED or DELETED (bookmarks and errors are the loop's own business).
  virtual void OnEvent(const WatchEvent& event) = 0;
  // A failure the loop will recover from (it backs off and tries again); for logs.
  virtual void OnError(const KubeError& error) { (void)error; }
};

struct ListWatchStats {
  std::int64_t lists = 0;    // (re)lists completed
  std::int64_t pages = 0;    // list pages read
  std::int64_t watches = 0;  // watches opened
  std::int64_t events = 0;   // events delivered
  std::int64_t bookmarks = 0;
  std::int64_t gone_at_start = 0;   // watches refused with HTTP 410: relisted
  std::int64_t gone_in_stream = 0;  // ERROR events with code 410: relisted
  std::int64_t errors = 0;          // other failures (each backed off)
};

class ListWatch {
 public:
  // `client` and `handler` must outlive the ListWatch.
  ListWatch(KubeClient* client, ListWatchOptions options, ListWatchHandler* handler);
  ~ListWatch();  // Stop()
  ListWatch(const ListWatch&) = delete;
  ListWatch& operator=(const ListWatch&) = delete;

  void Start();
  void Stop();
  // The loop, on the calling thread, until `stop` is requested.
  void Run(std::stop_token stop);

  // The last resourceVersion seen (list, event or bookmark); "" before the first list.
  std::string resource_version() const;
  ListWatchStats Stats() const;

 private:
  enum class WatchEnd { kEnded, kGone, kFailed, kStopped };
  // Lists every page; false on failure (reported) or stop.
  bool ListAll(const std::stop_token& stop, bool initial);
  WatchEnd WatchOnce(const std::stop_token& stop, bool* progressed);
  void Deliver(const WatchEvent& event);
  void Fail(const KubeError& error);
  void SetResourceVersion(const std::string& rv);
  // Backs off (the last failure's Retry-After honoured); false when stopped meanwhile.
  bool Pause(int failures, const std::stop_token& stop);

  KubeClient* const client_;
  const ListWatchOptions options_;
  ListWatchHandler* const handler_;
  const std::string collection_;

  ObjectStore known_;     // the loop thread's alone
  KubeError last_error_;  // the loop thread's alone
  std::mt19937_64 random_;

  mutable std::mutex mutex_;
  std::string resource_version_;  // guarded by mutex_
  ListWatchStats stats_;          // guarded by mutex_

  std::jthread thread_;
};

}  // namespace tessera::kube
