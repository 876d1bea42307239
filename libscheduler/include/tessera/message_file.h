// Message files: the tessera.v1 messages people write by hand (a JobSpec to submit, a QueueSpec
// to create) read from YAML or JSON, with errors that point at the line and name the field.
//
//   # train.yaml                         // train.json
//   queue: research/vision               {"queue": "research/vision",
//   name: resnet                          "name": "resnet",
//   tasks: 4                              "tasks": 4,
//   resources: {gpu_count: 1}             "resources": {"gpuCount": 1}}
//
// YAML keys are the .proto field names (snake_case) or their JSON names (lowerCamelCase); enums
// by name; 64-bit integers plain. JSON is read with the proto3 JSON mapping, exactly as the HTTP
// API reads request bodies, so `tessctl get -o json` output (a Job) is not a JobSpec file but
// its "spec" member is.
//
// Thread safety: free functions on values.
#pragma once

#include <functional>
#include <string>

#include <google/protobuf/message.h>

#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

// Reads `path` into `message` (cleared first): JSON when the name ends in ".json", YAML
// otherwise. Errors: NOT_FOUND when the file cannot be read; INVALID_ARGUMENT naming the file and
// the problem: "job.yaml:3:8: tasks: expected an integer, got 'four'",
// "job.yaml:2:1: gpus: unknown field (known fields: ...)", "job.json: invalid JSON ...".
TESSERA_EXPORT Status ReadMessageFile(const std::string& path, google::protobuf::Message* message);

// Reads every message of `path`: the YAML documents separated by "---" (empty ones skipped), or
// the one message of a ".json" file, each into the message `next` returns for it (cleared first).
// Errors as ReadMessageFile; for a YAML document that does not match, prefixed with its number
// from 1: "document 2: jobs.yaml:7:3: task.gpus: unknown field (...)". On an error the messages
// already filled are left as they are; callers that need all-or-nothing read first, then act.
TESSERA_EXPORT Status ReadMessageFiles(const std::string& path,
                                       const std::function<google::protobuf::Message*()>& next);

// The YAML half of ReadMessageFile on text in memory; `source` names it in errors.
TESSERA_EXPORT Status ParseYamlMessage(const std::string& yaml, const std::string& source,
                                       google::protobuf::Message* message);

}  // namespace tessera
