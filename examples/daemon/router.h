// One authenticated request on its way to the scheduler: Route picks the handler by path and
// method, each handler checks what the caller's Principal may see and change, makes one
// tessera::Scheduler call and encodes its result (http_codec.h). The handlers live in one file
// per resource: job_routes.cc, queue_routes.cc, node_routes.cc, event_routes.cc,
// admin_routes.cc.
//
// Thread safety: a Router serves one request on one thread; many may run at once.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "alerts.h"
#include "auth.h"
#include "http_codec.h"
#include "tessera/scheduler.h"
#include "tessera/v1/config.pb.h"

namespace tesserad {

class Router {
 public:
  Router(tessera::Scheduler& scheduler, const tessera::v1::DaemonConfig& config,
         const std::atomic<bool>& stopping, const AlertMonitor* alerts, const HttpRequest& request,
         Principal principal)
      : scheduler_(scheduler),
        config_(config),
        stopping_(stopping),
        alerts_(alerts),
        request_(request),
        principal_(std::move(principal)) {}

  // `path` without the query string.
  ApiResponse Route(std::string_view path, const Query& query);

 private:
  // job_routes.cc
  HttpResponse SubmitJob();
  HttpResponse JobRoute(std::string_view rest);  // /v1/jobs/{id}[:cancel]
  HttpResponse ListJobs(const Query& query);

  // queue_routes.cc
  HttpResponse ListQueues();
  HttpResponse QueueRoute(const std::string& name);  // /v1/queues/{name}
  // POST /v1/queues (path_name empty) creates; PUT /v1/queues/{name} updates.
  HttpResponse WriteQueue(const std::string& path_name);

  // node_routes.cc
  HttpResponse ListNodes();
  HttpResponse NodeRoute(std::string_view rest);  // /v1/nodes/{name}:{action}

  // event_routes.cc
  HttpResponse WatchEvents(const Query& query);

  // admin_routes.cc
  ApiResponse Backup();

  tessera::Scheduler& scheduler_;
  const tessera::v1::DaemonConfig& config_;
  const std::atomic<bool>& stopping_;
  const AlertMonitor* alerts_;
  const HttpRequest& request_;
  const Principal principal_;
};

}  // namespace tesserad
