#include "router.h"

#include "metrics.h"

namespace tesserad {

namespace http = boost::beast::http;

ApiResponse Router::Route(std::string_view path, const Query& query) {
  const http::verb method = request_.method();
  if (path == "/metrics") {
    if (method != http::verb::get) return MethodNotAllowed(request_, "GET");
    return MakeResponse(request_, 200, "text/plain; version=0.0.4; charset=utf-8",
                        RenderMetrics(scheduler_, config_, alerts_, principal_));
  }
  if (path == "/v1/jobs") {
    if (method == http::verb::get) return ListJobs(query);
    if (method == http::verb::post) return SubmitJob();
    return MethodNotAllowed(request_, "GET, POST");
  }
  if (path == "/v1/jobs:dryRun") {
    if (method != http::verb::post) return MethodNotAllowed(request_, "POST");
    return DryRunJob();
  }
  if (path.substr(0, 9) == "/v1/jobs/") return JobRoute(path.substr(9));
  if (path == "/v1/queues") {
    if (method == http::verb::get) return ListQueues();
    if (method == http::verb::post) return WriteQueue("");
    return MethodNotAllowed(request_, "GET, POST");
  }
  if (path.substr(0, 11) == "/v1/queues/" && path.size() > 11) {
    return QueueRoute(PercentDecode(path.substr(11), false));
  }
  if (path == "/v1/nodes") {
    if (method != http::verb::get) return MethodNotAllowed(request_, "GET");
    return ListNodes();
  }
  if (path.substr(0, 10) == "/v1/nodes/" && path.size() > 10) {
    return NodeRoute(PercentDecode(path.substr(10), false));
  }
  if (path == "/v1/backends") {
    if (method != http::verb::get) return MethodNotAllowed(request_, "GET");
    return ListBackends();
  }
  if (path == "/v1/admin/backup") {
    if (method != http::verb::get) return MethodNotAllowed(request_, "GET");
    return Backup();
  }
  if (path == "/v1/admin/check-store") {
    if (method != http::verb::post) return MethodNotAllowed(request_, "POST");
    return CheckStore(query);
  }
  // GET is answered by WatchEventsAsync.
  if (path == "/v1/events") return MethodNotAllowed(request_, "GET");
  return ErrorFor(request_, tessera::NotFoundError("no route for " + std::string(path)));
}

}  // namespace tesserad
