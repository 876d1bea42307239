// YAML onto protobuf: configuration files are YAML documents mapped field by field onto
// protobuf messages, so every option is validated and documented once, in its .proto file.
//
// Keys are the proto field names (or their lowerCamelCase JSON names). Unknown keys, wrong types,
// out-of-range numbers and unknown enum names are refused with "<source>:<line>:<column>: <field
// path>: <problem>".
#pragma once

#include <string>

#include <google/protobuf/message.h>

#include "tessera/status.h"

namespace tessera {

// Errors: INVALID_ARGUMENT for unparsable YAML or a mismatch with the message.
Status YamlStringToMessage(const std::string& yaml, const std::string& source,
                           google::protobuf::Message* message);
// Errors: NOT_FOUND when the file cannot be read; otherwise as above.
Status YamlFileToMessage(const std::string& path, google::protobuf::Message* message);

}  // namespace tessera
