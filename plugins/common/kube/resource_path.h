// Where a Kubernetes resource lives in the REST API, and the query of a list or watch. The core
// group ("v1") is under /api, every other group ("batch/v1") under /apis:
//
//   ObjectPath(Resource::Pods(), "ml", "p-1", "binding") ==
//   "/api/v1/namespaces/ml/pods/p-1/binding" CollectionPath(Resource::Nodes(), "") ==
//   "/api/v1/nodes" CollectionPath(Resource::Pods(), "")                 == "/api/v1/pods" (all
//   namespaces)
//
// ListQuery writes ListOptions as the query string, each value percent-encoded (selectors hold
// '=', ',' and '!'). Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tessera::kube {

struct Resource {
  std::string group_version = "v1";  // "v1" or "<group>/<version>"
  std::string plural = "pods";
  bool namespaced = true;

  static Resource Pods() { return {"v1", "pods", true}; }
  static Resource Nodes() { return {"v1", "nodes", false}; }
  static Resource Events() { return {"v1", "events", true}; }
  static Resource Jobs() { return {"batch/v1", "jobs", true}; }
};

// The collection: "/api/v1/namespaces/<ns>/pods", or across all namespaces (and for
// cluster-scoped resources) when `namespace_name` is empty.
std::string CollectionPath(const Resource& resource, std::string_view namespace_name);
// One object, and optionally a subresource ("status", "binding", "eviction").
std::string ObjectPath(const Resource& resource, std::string_view namespace_name,
                       std::string_view name, std::string_view subresource = {});

struct ListOptions {
  std::string label_selector;  // "app=x,tier!=db"
  std::string field_selector;  // "spec.nodeName=n1,status.phase!=Succeeded"
  std::optional<int> limit;    // page size of a list
  std::string continue_token;  // the previous page's metadata.continue
  std::string resource_version;
  // Watch only.
  bool watch = false;
  bool allow_watch_bookmarks = false;
  std::optional<int> timeout_seconds;
};

// "?labelSelector=app%3Dx&limit=500" (empty when nothing is set).
std::string ListQuery(const ListOptions& options);
// RFC 3986: every byte but the unreserved ones as %XX.
std::string PercentEncode(std::string_view text);

}  // namespace tessera::kube
