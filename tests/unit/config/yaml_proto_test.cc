// YAML onto protobuf: every kind of field, and every refusal naming file, line and field.
#include <doctest/doctest.h>

#include "config/yaml_proto.h"
#include "tessera/v1/event.pb.h"
#include "tessera/v1/job.pb.h"
#include "tessera/v1/node.pb.h"
#include "tessera/v1/queue.pb.h"

namespace tessera {
namespace {

template <typename M>
Status Parse(const std::string& yaml, M* message) {
  return YamlStringToMessage(yaml, "test.yaml", message);
}

TEST_CASE("yaml: scalars, nested messages, repeated fields, maps and optional fields") {
  v1::JobSpec spec;
  REQUIRE(Parse(R"(
name: train
queue: research/vision
tasks: 4
task:
  cpu_milli: 16000
  memory_mib: 65536
  gpu_count: 2
  gpu_models: [A100-80GB, H100-80GB]
labels: {team: vision, tier: "1"}
topology:
  task_gpus_same_nvlink: true
command: [python, train.py]
)",
                &spec)
              .ok());
  CHECK(spec.name() == "train");
  CHECK(spec.tasks() == 4);
  CHECK(spec.task().gpu_models_size() == 2);
  CHECK(spec.task().gpu_models(1) == "H100-80GB");
  CHECK(spec.labels().at("tier") == "1");
  CHECK(spec.topology().task_gpus_same_nvlink());
  CHECK(spec.command(1) == "train.py");

  v1::QueueSpec queue;
  REQUIRE(Parse("name: q\nweight: 2.5\ncap: {gpu_milli: 0}\n", &queue).ok());
  CHECK(queue.weight() == 2.5);
  CHECK(queue.cap().has_gpu_milli());  // set to 0: "none of it", not "no limit".
  CHECK_FALSE(queue.cap().has_cpu_milli());
}

TEST_CASE("yaml: enums by name") {
  v1::Event event;
  REQUIRE(Parse("kind: QUEUE_CREATED\nto_state: RUNNING\n", &event).ok());
  CHECK(event.kind() == v1::QUEUE_CREATED);
  Status bad = Parse("to_state: RUNNIN\n", &event);
  CHECK(bad.code() == StatusCode::kInvalidArgument);
  CHECK(bad.message().rfind("test.yaml:1:11: to_state: unknown value 'RUNNIN' (one of:", 0) == 0);
}

TEST_CASE("yaml: unknown keys name the file, line, column, field and the known fields") {
  v1::SimulatedCluster cluster;
  Status s = Parse("groups:\n  - name_prefix: a\n    cuont: 2\n", &cluster);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().rfind("test.yaml:3:5: groups[0].cuont: unknown field (known fields: "
                          "name_prefix, count,",
                          0) == 0);
}

TEST_CASE("yaml: wrong types and out-of-range numbers are refused") {
  v1::SimulatedNodeGroup group;
  CHECK(Parse("count: many\n", &group).message() ==
        "test.yaml:1:8: count: expected an integer, got 'many'");
  CHECK(Parse("count: 99999999999\n", &group).message() ==
        "test.yaml:1:8: count: '99999999999' is out of range");
  CHECK(Parse("count: 2.5\n", &group).message() ==
        "test.yaml:1:8: count: expected an integer, got '2.5'");
  CHECK(Parse("labels: [a, b]\n", &group).message() ==
        "test.yaml:1:9: labels: expected a mapping of keys to values");
  CHECK(Parse("count: [1]\n", &group).message() == "test.yaml:1:8: count: expected a single value");
  v1::TopologyWish wish;
  CHECK(Parse("tasks_same_node: yes\n", &wish).message() ==
        "test.yaml:1:18: tasks_same_node: expected true or false, got 'yes'");
  v1::QueueSpec queue;
  CHECK(Parse("weight: heavy\n", &queue).message() ==
        "test.yaml:1:9: weight: expected a number, got 'heavy'");
  v1::TaskResources task;
  CHECK(Parse("gpu_models: A100\n", &task).message() ==
        "test.yaml:1:13: gpu_models: expected a list");
  CHECK(Parse("cpu_milli:\n", &task).message() == "test.yaml:1:1: cpu_milli: has no value");
}

TEST_CASE("yaml: text that is not UTF-8 is refused naming the field") {
  // Found by the jobspec_yaml fuzz target (tests/fuzz/corpus/jobspec_yaml/invalid-utf8-*): such
  // a string was accepted, but its binary encoding does not parse back.
  v1::JobSpec job;
  CHECK(Parse("queue: default\nname: a\xff\n", &job).message() ==
        "test.yaml:2:7: name: is not valid UTF-8 text");
  CHECK(Parse("labels: {\"\xed\xa0\x80\": x}\n", &job).message() ==
        "test.yaml:1:10: labels: is not valid UTF-8 text");
  CHECK(Parse("command: [ok, \"\xc0\xaf\"]\n", &job).message() ==
        "test.yaml:1:15: command[1]: is not valid UTF-8 text");
  CHECK(Parse("name: caf\xc3\xa9 \xf0\x9f\x9a\x80\n", &job).ok());
  CHECK(job.name() == "caf\xc3\xa9 \xf0\x9f\x9a\x80");
}

TEST_CASE("yaml: malformed documents and files") {
  v1::SimulatedCluster cluster;
  Status s = Parse("groups: [\n", &cluster);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().rfind("test.yaml:", 0) == 0);
  CHECK(s.message().find("not valid YAML") != std::string::npos);
  CHECK(Parse("- a\n- b\n", &cluster).message() ==
        "test.yaml:1:1: (top level): expected a mapping of field names to values");
  CHECK(YamlFileToMessage("/nonexistent/cluster.yaml", &cluster).code() == StatusCode::kNotFound);
  // An empty document leaves every default.
  CHECK(Parse("", &cluster).ok());
  CHECK(cluster.groups_size() == 0);
}

}  // namespace
}  // namespace tessera
