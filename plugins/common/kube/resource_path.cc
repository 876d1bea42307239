#include "kube/resource_path.h"

#include <cctype>

namespace tessera::kube {
namespace {

std::string Root(const Resource& resource) {
  return (resource.group_version.find('/') == std::string::npos ? "/api/" : "/apis/") +
         resource.group_version;
}

}  // namespace

std::string CollectionPath(const Resource& resource, std::string_view namespace_name) {
  std::string path = Root(resource);
  if (resource.namespaced && !namespace_name.empty()) {
    path += "/namespaces/" + PercentEncode(namespace_name);
  }
  return path + "/" + resource.plural;
}

std::string ObjectPath(const Resource& resource, std::string_view namespace_name,
                       std::string_view name, std::string_view subresource) {
  std::string path = CollectionPath(resource, namespace_name) + "/" + PercentEncode(name);
  if (!subresource.empty()) path += "/" + std::string(subresource);
  return path;
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xF]);
    }
  }
  return out;
}

std::string ListQuery(const ListOptions& options) {
  std::string query;
  const auto add = [&query](std::string_view key, std::string_view value) {
    query += query.empty() ? "?" : "&";
    query += std::string(key) + "=" + PercentEncode(value);
  };
  if (!options.label_selector.empty()) add("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) add("fieldSelector", options.field_selector);
  if (options.limit) add("limit", std::to_string(*options.limit));
  if (!options.continue_token.empty()) add("continue", options.continue_token);
  if (!options.resource_version.empty()) add("resourceVersion", options.resource_version);
  if (options.watch) add("watch", "true");
  if (options.allow_watch_bookmarks) add("allowWatchBookmarks", "true");
  if (options.timeout_seconds) add("timeoutSeconds", std::to_string(*options.timeout_seconds));
  return query;
}

}  // namespace tessera::kube
