#include "router.h"

#include "tessera/v1/api.pb.h"

namespace tesserad {

namespace http = boost::beast::http;
using tessera::Status;

HttpResponse Router::ListNodes() {
  auto nodes = scheduler_.ListNodes();
  if (!nodes.ok()) return ErrorFor(request_, nodes.status());
  tessera::v1::ListNodesResponse response;
  for (auto& node : *nodes) *response.add_nodes() = std::move(node);
  return Reply(request_, response);
}

HttpResponse Router::ListBackends() {
  auto backends = scheduler_.ListBackends();
  if (!backends.ok()) return ErrorFor(request_, backends.status());
  tessera::v1::ListBackendsResponse response;
  for (auto& backend : *backends) {
    // The latest failed operation names a job and what the plugin said of it: another tenant's,
    // perhaps. Admins see it; tenants see the counts.
    if (!principal_.admin) backend.clear_last_operation_failure();
    *response.add_backends() = std::move(backend);
  }
  return Reply(request_, response);
}

HttpResponse Router::NodeRoute(std::string_view rest) {
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) {
    return ErrorFor(request_, tessera::NotFoundError("no route for node \"" + std::string(rest) +
                                                     "\" (expected :cordon, :drain, :uncordon)"));
  }
  const std::string name(rest.substr(0, colon));
  const std::string_view verb = rest.substr(colon + 1);
  if (verb != "cordon" && verb != "drain" && verb != "uncordon") {
    return ErrorFor(request_,
                    tessera::NotFoundError("no node action \"" + std::string(verb) + "\""));
  }
  if (request_.method() != http::verb::post) return MethodNotAllowed(request_, "POST");
  if (!principal_.admin) return Forbidden(request_, "only an admin token may change nodes");
  Status s =
      verb == "drain" ? scheduler_.DrainNode(name) : scheduler_.CordonNode(name, verb == "cordon");
  if (!s.ok()) return ErrorFor(request_, s);
  auto nodes = scheduler_.ListNodes();
  if (!nodes.ok()) return ErrorFor(request_, nodes.status());
  for (const auto& node : *nodes) {
    if (node.spec().name() == name) return Reply(request_, node);
  }
  return ErrorFor(request_, tessera::NotFoundError("node \"" + name + "\" not found"));
}

}  // namespace tesserad
