#include "tessera/message_file.h"

#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <sstream>

#include "config/yaml_proto.h"

namespace tessera {

Status ParseYamlMessage(const std::string& yaml, const std::string& source,
                        google::protobuf::Message* message) {
  message->Clear();
  return YamlStringToMessage(yaml, source, message);
}

namespace {

bool IsJsonFile(const std::string& path) {
  constexpr std::string_view kJson = ".json";
  return path.size() >= kJson.size() &&
         path.compare(path.size() - kJson.size(), kJson.size(), kJson) == 0;
}

}  // namespace

Status ReadMessageFiles(const std::string& path,
                        const std::function<google::protobuf::Message*()>& next) {
  if (IsJsonFile(path)) return ReadMessageFile(path, next());
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return YamlStringToMessages(buffer.str(), path, next);
}

Status ReadMessageFile(const std::string& path, google::protobuf::Message* message) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (!IsJsonFile(path)) return ParseYamlMessage(text, path, message);
  message->Clear();
  const auto parsed = google::protobuf::util::JsonStringToMessage(text, message);
  if (!parsed.ok()) {
    return InvalidArgumentError(path + ": not a JSON " + message->GetTypeName() + ": " +
                                std::string(parsed.message()));
  }
  return Status::Ok();
}

}  // namespace tessera
