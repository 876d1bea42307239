// YAML onto protobuf: configuration files are YAML documents mapped field by field onto
// protobuf messages, so every option is validated and documented once, in its .proto file.
//
// Keys are the proto field names (or their lowerCamelCase JSON names). Unknown keys, wrong types,
// out-of-range numbers and unknown enum names are refused with "<source>:<line>:<column>: <field
// path>: <problem>".
#pragma once

#include <functional>
#include <string>

#include <google/protobuf/message.h>

#include "tessera/status.h"

namespace tessera {

// Errors: INVALID_ARGUMENT for unparsable YAML or a mismatch with the message.
Status YamlStringToMessage(const std::string& yaml, const std::string& source,
                           google::protobuf::Message* message);
// Every document of a multi-document stream ("---" between them), each into the message `next`
// returns for it; empty documents are skipped. Errors as above, prefixed "document N: " (N from
// 1) for a document that does not match; line numbers count from the start of `yaml`.
Status YamlStringToMessages(const std::string& yaml, const std::string& source,
                            const std::function<google::protobuf::Message*()>& next);
// Errors: NOT_FOUND when the file cannot be read; otherwise as above.
Status YamlFileToMessage(const std::string& path, google::protobuf::Message* message);

}  // namespace tessera
