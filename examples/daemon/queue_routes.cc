#include "router.h"

#include "tessera/v1/api.pb.h"

namespace tesserad {

namespace http = boost::beast::http;
using tessera::Status;

HttpResponse Router::ListQueues() {
  auto queues = scheduler_.ListQueues();
  if (!queues.ok()) return ErrorFor(request_, queues.status());
  tessera::v1::ListQueuesResponse visible;
  for (auto& q : *queues) {
    if (principal_.Owns(q.spec().name())) *visible.add_queues() = std::move(q);
  }
  return Reply(request_, visible);
}

HttpResponse Router::QueueRoute(const std::string& name) {
  switch (request_.method()) {
    case http::verb::get: {
      if (!principal_.Owns(name)) {
        return ErrorFor(request_, tessera::NotFoundError("queue \"" + name + "\" not found"));
      }
      auto queue = scheduler_.GetQueue(name);
      if (!queue.ok()) return ErrorFor(request_, queue.status());
      return Reply(request_, *queue);
    }
    case http::verb::put:
      return WriteQueue(name);
    case http::verb::delete_: {
      if (!principal_.admin) return Forbidden(request_, "only an admin token may delete queues");
      if (Status s = scheduler_.DeleteQueue(name); !s.ok()) return ErrorFor(request_, s);
      return MakeResponse(request_, 200, kJsonType, "{}");
    }
    default:
      return MethodNotAllowed(request_, "GET, PUT, DELETE");
  }
}

HttpResponse Router::WriteQueue(const std::string& path_name) {
  if (!principal_.admin) return Forbidden(request_, "only an admin token may change queues");
  tessera::v1::QueueSpec spec;
  if (Status s = ParseBody(request_, &spec); !s.ok()) return ErrorFor(request_, s);
  if (!path_name.empty()) {
    if (spec.name().empty()) spec.set_name(path_name);
    if (spec.name() != path_name) {
      return ErrorFor(request_, tessera::InvalidArgumentError("name: \"" + spec.name() +
                                                              "\" differs from the path's \"" +
                                                              path_name + "\""));
    }
  }
  Status s = path_name.empty() ? scheduler_.CreateQueue(spec) : scheduler_.UpdateQueue(spec);
  if (!s.ok()) return ErrorFor(request_, s);
  auto queue = scheduler_.GetQueue(spec.name());
  if (!queue.ok()) return ErrorFor(request_, queue.status());
  return Reply(request_, *queue);
}

}  // namespace tesserad
