#include "kube/list_watch.h"

#include <condition_variable>
#include <vector>

namespace tessera::kube {

using json = nlohmann::json;

ListWatch::ListWatch(KubeClient* client, ListWatchOptions options, ListWatchHandler* handler)
    : client_(client),
      options_(std::move(options)),
      handler_(handler),
      collection_(CollectionPath(options_.resource, options_.namespace_name)),
      random_(std::random_device{}()) {}

ListWatch::~ListWatch() { Stop(); }

void ListWatch::Start() {
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

void ListWatch::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  if (std::this_thread::get_id() != thread_.get_id()) thread_.join();
}

std::string ListWatch::resource_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return resource_version_;
}

ListWatchStats ListWatch::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void ListWatch::SetResourceVersion(const std::string& rv) {
  if (rv.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  resource_version_ = rv;
}

void ListWatch::Fail(const KubeError& error) {
  last_error_ = error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error.kind != KubeErrorKind::kGone) ++stats_.errors;
  }
  handler_->OnError(error);
}

bool ListWatch::Pause(int failures, const std::stop_token& stop) {
  const auto delay = options_.backoff.Delay(failures, last_error_, random_);
  std::mutex mutex;
  std::condition_variable_any woken;
  std::unique_lock<std::mutex> lock(mutex);
  woken.wait_for(lock, stop, delay, [] { return false; });
  return !stop.stop_requested();
}

bool ListWatch::ListAll(const std::stop_token& stop, bool initial) {
  ListOptions list;
  list.label_selector = options_.label_selector;
  list.field_selector = options_.field_selector;
  if (options_.page_size > 0) list.limit = options_.page_size;
  std::vector<json> items;
  std::string rv;
  bool restarted = false;
  while (true) {
    auto page = client_->List(collection_, list, stop);
    if (!page.ok()) {
      if (page.error().kind == KubeErrorKind::kGone && !list.continue_token.empty() && !restarted) {
        // The continue token outlived the server's history: list again from the start.
        restarted = true;
        items.clear();
        list.continue_token.clear();
        continue;
      }
      if (page.error().kind != KubeErrorKind::kCancelled) Fail(page.error());
      return false;
    }
    json& body = page.value();
    const auto found = body.find("items");
    if (found != body.end() && found->is_array()) {
      for (json& item : *found) items.push_back(std::move(item));
    } else if (found != body.end() && !found->is_null()) {
      Fail(MakeError(KubeErrorKind::kMalformedReply,
                     "list of " + collection_ + ": items is not a list"));
      return false;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.pages;
    }
    rv = body.value("/metadata/resourceVersion"_json_pointer, std::string());
    list.continue_token = body.value("/metadata/continue"_json_pointer, std::string());
    if (list.continue_token.empty()) break;
  }
  if (rv.empty()) {
    Fail(MakeError(KubeErrorKind::kMalformedReply,
                   "list of " + collection_ + " has no metadata.resourceVersion"));
    return false;
  }
  ListSync sync;
  sync.initial = initial;
  sync.diff = DiffRelist(known_, items);
  sync.resource_version = rv;
  known_.clear();
  for (json& item : items) {
    std::string key = ObjectKey(item);
    known_.emplace(std::move(key), std::move(item));
  }
  sync.objects = known_.size();
  SetResourceVersion(rv);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.lists;
  }
  handler_->OnSync(sync);
  return true;
}

void ListWatch::Deliver(const WatchEvent& event) {
  const std::string key = ObjectKey(event.object);
  if (event.type == WatchEventType::kDeleted) {
    known_.erase(key);
  } else {
    known_[key] = event.object;
  }
  SetResourceVersion(event.ResourceVersion());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.events;
  }
  handler_->OnEvent(event);
}

ListWatch::WatchEnd ListWatch::WatchOnce(const std::stop_token& stop, bool* progressed) {
  ListOptions watch;
  watch.label_selector = options_.label_selector;
  watch.field_selector = options_.field_selector;
  watch.resource_version = resource_version();
  watch.watch = true;
  watch.allow_watch_bookmarks = true;
  watch.timeout_seconds = options_.watch_timeout_seconds;
  auto stream = client_->OpenWatch(collection_, watch, stop);
  if (!stream.ok()) {
    if (stream.error().kind == KubeErrorKind::kCancelled) return WatchEnd::kStopped;
    Fail(stream.error());
    if (stream.error().kind != KubeErrorKind::kGone) return WatchEnd::kFailed;
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.gone_at_start;
    return WatchEnd::kGone;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.watches;
  }
  WatchLineSplitter splitter;
  std::string bytes;
  std::optional<KubeError> failure;
  bool gone = false;
  const auto idle = std::chrono::seconds(options_.watch_timeout_seconds) + options_.read_grace;
  while (!failure && !gone) {
    bytes.clear();
    auto more = stream.value()->Read(&bytes, CallLimits::Within(idle, stop));
    if (!more.ok()) {
      if (more.error().kind == KubeErrorKind::kCancelled) return WatchEnd::kStopped;
      failure = more.error();
      break;
    }
    if (!more.value()) break;  // the server ended the watch (timeoutSeconds)
    const bool fits = splitter.Feed(bytes, [&](std::string_view line) {
      if (failure || gone) return;
      auto event = ParseWatchEvent(line);
      if (!event.ok()) {
        failure = event.error();
        return;
      }
      switch (event.value().type) {
        case WatchEventType::kBookmark: {
          SetResourceVersion(event.value().ResourceVersion());
          std::lock_guard<std::mutex> lock(mutex_);
          ++stats_.bookmarks;
          *progressed = true;
          return;
        }
        case WatchEventType::kError: {
          const KubeError error = WatchErrorOf(event.value());
          if (error.kind == KubeErrorKind::kGone) {
            Fail(error);
            std::lock_guard<std::mutex> lock(mutex_);
            ++stats_.gone_in_stream;
            gone = true;
          } else {
            failure = error;
          }
          return;
        }
        default:
          Deliver(event.value());
          *progressed = true;
      }
    });
    if (!fits) {
      failure = MakeError(KubeErrorKind::kMalformedReply,
                          "watch of " + collection_ + ": a line passes the size limit");
    }
  }
  if (gone) return WatchEnd::kGone;
  if (failure) {
    Fail(*failure);
    return WatchEnd::kFailed;
  }
  return WatchEnd::kEnded;
}

void ListWatch::Run(std::stop_token stop) {
  bool need_list = true;
  bool initial = true;
  int failures = 0;
  while (!stop.stop_requested()) {
    if (need_list) {
      if (!ListAll(stop, initial)) {
        if (stop.stop_requested()) return;
        ++failures;
        if (!Pause(failures, stop)) return;
        continue;
      }
      initial = false;
      need_list = false;
      failures = 0;
    }
    const auto opened = std::chrono::steady_clock::now();
    bool progressed = false;
    const WatchEnd end = WatchOnce(stop, &progressed);
    switch (end) {
      case WatchEnd::kStopped:
        return;
      case WatchEnd::kGone:
        need_list = true;
        break;
      case WatchEnd::kEnded:
        // A watch the server closes at once, again and again, is a failure in disguise.
        if (progressed || std::chrono::steady_clock::now() - opened > std::chrono::seconds(1)) {
          failures = 0;
          break;
        }
        [[fallthrough]];
      case WatchEnd::kFailed:
        if (progressed) failures = 0;
        ++failures;
        if (!Pause(failures, stop)) return;
        break;
    }
  }
}

}  // namespace tessera::kube
