#include "aws/ec2_xml.h"

#include <pugixml.hpp>

#include <cctype>
#include <cstdlib>
#include <ctime>
#include <string>

namespace tessera::aws {
namespace {

std::string Text(const pugi::xml_node& node, const char* child) {
  return node.child(child).text().as_string();
}

Ec2Error Malformed(int http_status, std::string_view body, std::string_view why) {
  Ec2Error error;
  error.code = "MalformedReply";
  error.http_status = http_status;
  error.message = std::string(why) + "; reply starts: " + std::string(body.substr(0, 200));
  return error;
}

// Loads `body`; on success `root` is the document element.
bool Load(pugi::xml_document& document, std::string_view body, pugi::xml_node* root) {
  const pugi::xml_parse_result result = document.load_buffer(body.data(), body.size());
  if (!result) return false;
  *root = document.document_element();
  return !root->empty();
}

// The shared front of every Parse*: an error document becomes its error, a document whose root
// is not `expected_root` (or a non-2xx status without an error document) is malformed.
std::optional<Ec2Error> CheckReply(bool loaded, const pugi::xml_node& root, int http_status,
                                   std::string_view body, const char* expected_root) {
  if (auto error = ParseErrorReply(http_status, body)) return error;
  if (!loaded) return Malformed(http_status, body, "not XML");
  if (http_status < 200 || http_status > 299) {
    return Malformed(http_status, body, "HTTP error status without an AWS error document");
  }
  if (std::string_view(root.name()) != expected_root) {
    return Malformed(http_status, body, std::string("expected <") + expected_root + ">");
  }
  return std::nullopt;
}

InstanceState ParseState(const pugi::xml_node& node) {
  InstanceState state;
  // EC2: "the high byte is used for internal purposes and should be ignored".
  state.code = node.child("code").text().as_int(-1);
  if (state.code >= 0) state.code &= 0xff;
  state.name = Text(node, "name");
  return state;
}

std::vector<Tag> ParseTags(const pugi::xml_node& tag_set) {
  std::vector<Tag> tags;
  for (const pugi::xml_node& item : tag_set.children("item")) {
    tags.push_back({Text(item, "key"), Text(item, "value")});
  }
  return tags;
}

Ec2Instance ParseInstance(const pugi::xml_node& item) {
  Ec2Instance instance;
  instance.instance_id = Text(item, "instanceId");
  instance.image_id = Text(item, "imageId");
  instance.instance_type = Text(item, "instanceType");
  instance.availability_zone = Text(item.child("placement"), "availabilityZone");
  instance.state = ParseState(item.child("instanceState"));
  instance.lifecycle = Text(item, "instanceLifecycle");
  instance.private_ip_address = Text(item, "privateIpAddress");
  instance.launch_time = Text(item, "launchTime");
  instance.client_token = Text(item, "clientToken");
  instance.tags = ParseTags(item.child("tagSet"));
  return instance;
}

}  // namespace

long long ParseEc2TimestampUs(const std::string& text) {
  std::tm tm{};
  const char* rest = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return 0;
  long long fraction_us = 0;
  if (*rest == '.') {
    long long scale = 100'000;
    for (++rest; std::isdigit(static_cast<unsigned char>(*rest)); ++rest) {
      fraction_us += (*rest - '0') * scale;
      scale /= 10;
    }
  }
  if (std::string_view(rest) != "Z") return 0;
  const std::time_t seconds = ::timegm(&tm);
  if (seconds <= 0) return 0;
  return static_cast<long long>(seconds) * 1'000'000 + fraction_us;
}

std::optional<Ec2Error> ParseErrorReply(int http_status, std::string_view body) {
  pugi::xml_document document;
  pugi::xml_node root;
  if (!Load(document, body, &root)) return std::nullopt;
  pugi::xml_node error_node;
  std::string request_id;
  const std::string_view root_name = root.name();
  if (root_name == "Response") {
    error_node = root.child("Errors").child("Error");
    request_id = Text(root, "RequestID");
  } else if (root_name == "ErrorResponse") {
    error_node = root.child("Error");
    request_id = Text(root, "RequestId");
  }
  if (error_node.empty()) return std::nullopt;
  Ec2Error error;
  error.code = Text(error_node, "Code");
  error.message = Text(error_node, "Message");
  error.http_status = http_status;
  error.request_id = request_id;
  if (error.code.empty()) error.code = "MalformedReply";
  return error;
}

Ec2Outcome<RunInstancesResult> ParseRunInstancesReply(int http_status, std::string_view body) {
  pugi::xml_document document;
  pugi::xml_node root;
  const bool loaded = Load(document, body, &root);
  if (auto error = CheckReply(loaded, root, http_status, body, "RunInstancesResponse")) {
    return *error;
  }
  RunInstancesResult result;
  result.reservation_id = Text(root, "reservationId");
  for (const pugi::xml_node& item : root.child("instancesSet").children("item")) {
    result.instances.push_back(ParseInstance(item));
  }
  return result;
}

Ec2Outcome<DescribeInstancesPage> ParseDescribeInstancesReply(int http_status,
                                                              std::string_view body) {
  pugi::xml_document document;
  pugi::xml_node root;
  const bool loaded = Load(document, body, &root);
  if (auto error = CheckReply(loaded, root, http_status, body, "DescribeInstancesResponse")) {
    return *error;
  }
  DescribeInstancesPage page;
  for (const pugi::xml_node& reservation : root.child("reservationSet").children("item")) {
    for (const pugi::xml_node& item : reservation.child("instancesSet").children("item")) {
      page.instances.push_back(ParseInstance(item));
    }
  }
  page.next_token = Text(root, "nextToken");
  return page;
}

Ec2Outcome<std::vector<InstanceStateChange>> ParseTerminateInstancesReply(int http_status,
                                                                          std::string_view body) {
  pugi::xml_document document;
  pugi::xml_node root;
  const bool loaded = Load(document, body, &root);
  if (auto error = CheckReply(loaded, root, http_status, body, "TerminateInstancesResponse")) {
    return *error;
  }
  std::vector<InstanceStateChange> changes;
  for (const pugi::xml_node& item : root.child("instancesSet").children("item")) {
    changes.push_back({Text(item, "instanceId"), ParseState(item.child("previousState")),
                       ParseState(item.child("currentState"))});
  }
  return changes;
}

Ec2Outcome<SpotPriceHistoryPage> ParseSpotPriceHistoryReply(int http_status,
                                                            std::string_view body) {
  pugi::xml_document document;
  pugi::xml_node root;
  const bool loaded = Load(document, body, &root);
  if (auto error =
          CheckReply(loaded, root, http_status, body, "DescribeSpotPriceHistoryResponse")) {
    return *error;
  }
  SpotPriceHistoryPage page;
  for (const pugi::xml_node& item : root.child("spotPriceHistorySet").children("item")) {
    SpotPrice price;
    price.availability_zone = Text(item, "availabilityZone");
    price.instance_type = Text(item, "instanceType");
    price.product_description = Text(item, "productDescription");
    price.spot_price = Text(item, "spotPrice");
    char* end = nullptr;
    price.spot_price_usd = std::strtod(price.spot_price.c_str(), &end);
    if (price.spot_price.empty() || end == price.spot_price.c_str() || *end != '\0') {
      return Malformed(http_status, body, "spotPrice is not a number: '" + price.spot_price + "'");
    }
    price.timestamp = Text(item, "timestamp");
    page.prices.push_back(std::move(price));
  }
  page.next_token = Text(root, "nextToken");
  return page;
}

Ec2Outcome<SpotInstanceRequestsPage> ParseSpotInstanceRequestsReply(int http_status,
                                                                    std::string_view body) {
  pugi::xml_document document;
  pugi::xml_node root;
  const bool loaded = Load(document, body, &root);
  if (auto error =
          CheckReply(loaded, root, http_status, body, "DescribeSpotInstanceRequestsResponse")) {
    return *error;
  }
  SpotInstanceRequestsPage page;
  for (const pugi::xml_node& item : root.child("spotInstanceRequestSet").children("item")) {
    SpotInstanceRequest request;
    request.spot_instance_request_id = Text(item, "spotInstanceRequestId");
    if (request.spot_instance_request_id.empty()) {
      return Malformed(http_status, body, "an item without spotInstanceRequestId");
    }
    request.instance_id = Text(item, "instanceId");
    request.state = Text(item, "state");
    const pugi::xml_node status = item.child("status");
    request.status_code = Text(status, "code");
    request.status_message = Text(status, "message");
    request.status_update_time = Text(status, "updateTime");
    request.status_update_unix_us = ParseEc2TimestampUs(request.status_update_time);
    request.instance_interruption_behavior = Text(item, "instanceInterruptionBehavior");
    page.requests.push_back(std::move(request));
  }
  page.next_token = Text(root, "nextToken");
  return page;
}

Ec2Outcome<InstanceTypesPage> ParseInstanceTypesReply(int http_status, std::string_view body) {
  pugi::xml_document document;
  pugi::xml_node root;
  const bool loaded = Load(document, body, &root);
  if (auto error = CheckReply(loaded, root, http_status, body, "DescribeInstanceTypesResponse")) {
    return *error;
  }
  InstanceTypesPage page;
  for (const pugi::xml_node& item : root.child("instanceTypeSet").children("item")) {
    InstanceTypeInfo info;
    info.instance_type = Text(item, "instanceType");
    info.default_vcpus = item.child("vCpuInfo").child("defaultVCpus").text().as_int(0);
    info.memory_mib = item.child("memoryInfo").child("sizeInMiB").text().as_llong(0);
    for (const pugi::xml_node& gpu : item.child("gpuInfo").child("gpus").children("item")) {
      InstanceGpu g;
      g.name = Text(gpu, "name");
      g.manufacturer = Text(gpu, "manufacturer");
      g.count = gpu.child("count").text().as_int(0);
      g.memory_mib = gpu.child("memoryInfo").child("sizeInMiB").text().as_llong(0);
      info.gpus.push_back(std::move(g));
    }
    for (const pugi::xml_node& usage : item.child("supportedUsageClasses").children("item")) {
      info.supported_usage_classes.push_back(usage.text().as_string());
    }
    if (info.instance_type.empty())
      return Malformed(http_status, body, "an item without instanceType");
    page.instance_types.push_back(std::move(info));
  }
  page.next_token = Text(root, "nextToken");
  return page;
}

}  // namespace tessera::aws
