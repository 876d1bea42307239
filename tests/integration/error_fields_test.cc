// Status::field(): validation names the field at fault as data beside the message, for JobSpec,
// QueueSpec, Options, SubmitOptions, ListJobs and a declared queue tree; the message starts with
// the same path; errors about no one field have none.
#include <string>

#include "integration/fixture.h"
#include "tessera/queue_tree.h"

namespace tessera {
namespace {

using namespace testing;

// The field of an INVALID_ARGUMENT, checked against the start of its message.
std::string FieldOf(const Status& status) {
  CHECK_MESSAGE(status.code() == StatusCode::kInvalidArgument, status.ToString());
  if (!status.field().empty()) {
    CHECK_MESSAGE(status.message().rfind(status.field() + ": ", 0) == 0, status.ToString());
  }
  return status.field();
}

TEST_CASE("error fields: a bad JobSpec names its field") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  v1::JobSpec too_many = JobSpecBuilder("default").Build();
  too_many.set_tasks(100001);
  CHECK(FieldOf(s->Submit(too_many).status()) == "tasks");
  CHECK(FieldOf(s->Submit(JobSpecBuilder("default").Gpus(33).Build()).status()) ==
        "task.gpu_count");
  CHECK(FieldOf(s->Submit(JobSpecBuilder("default").CpuMilli(0).Build()).status()) ==
        "task.cpu_milli");
  CHECK(FieldOf(s->Submit(JobSpecBuilder("Bad Queue").Build()).status()) == "queue");
  v1::JobSpec no_task = JobSpecBuilder("default").Build();
  no_task.clear_task();
  CHECK(FieldOf(s->Submit(no_task).status()) == "task");

  SubmitOptions keys;
  keys.idempotency_key =
      "a\x1f"
      "b";
  CHECK(FieldOf(s->Submit(JobSpecBuilder("default").Build(), keys).status()) == "idempotency_key");

  // Not about a field of the input: none named.
  Status missing_queue = s->Submit(JobSpecBuilder("nope").Build()).status();
  CHECK(missing_queue.code() == StatusCode::kNotFound);
  CHECK(missing_queue.field().empty());
  CHECK(s->GetJob(987654).status().field().empty());
}

TEST_CASE("error fields: a bad QueueSpec and a bad declared tree name theirs") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  CHECK(FieldOf(s->CreateQueue(QueueSpec("team", -1))) == "weight");
  v1::QueueSpec capped = QueueSpec("capped");
  capped.mutable_guarantee()->set_gpu_milli(4000);
  capped.mutable_cap()->set_gpu_milli(2000);
  CHECK(FieldOf(s->CreateQueue(capped)) == "cap.gpu_milli");
  CHECK(FieldOf(s->CreateQueue(QueueSpec("Bad Name"))) == "name");

  google::protobuf::RepeatedPtrField<v1::QueueSpec> declared;
  *declared.Add() = QueueSpec("a");
  *declared.Add() = QueueSpec("a");
  CHECK(FieldOf(ApplyQueueTree(*s, declared).status()) == "queues[1].name");
  declared.Clear();
  *declared.Add() = QueueSpec("b", -2);
  CHECK(FieldOf(ApplyQueueTree(*s, declared).status()) == "queues[0].weight");
}

TEST_CASE("error fields: ListJobs and WatchEvents name the bad argument") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  v1::ListJobsRequest request;
  request.set_page_size(5000);
  CHECK(FieldOf(s->ListJobs(request).status()) == "page_size");
  request.set_page_size(10);
  request.set_page_token("xyz");
  CHECK(FieldOf(s->ListJobs(request).status()) == "page_token");
  CHECK(FieldOf(s->WatchEvents(0, 0, std::chrono::milliseconds(0)).status()) == "max_events");
}

TEST_CASE("error fields: bad Options name the option's path") {
  Options busy;
  busy.store.busy_timeout = std::chrono::milliseconds(-1);
  CHECK(FieldOf(Scheduler::Open(busy).status()) == "store.busy_timeout");
  Options coverage;
  coverage.placement.expected_coverage = 2;
  CHECK(FieldOf(Scheduler::Open(coverage).status()) == "placement.expected_coverage");
  Options batch;
  batch.store.max_batch = 0;
  CHECK(FieldOf(Scheduler::Open(batch).status()) == "store.max_batch");
  Options retention;
  retention.retention.sweep_batch = 0;
  CHECK(FieldOf(Scheduler::Open(retention).status()) == "retention.sweep_batch");
}

TEST_CASE("error fields: a Status keeps its field through WithContext and compares it") {
  const Status bad = InvalidFieldError("tasks", "must be >= 0");
  CHECK(bad.message() == "tasks: must be >= 0");
  CHECK(bad.field() == "tasks");
  CHECK(bad.WithContext("job 3").field() == "tasks");
  CHECK(bad.WithContext("job 3").message() == "job 3: tasks: must be >= 0");
  CHECK(bad != InvalidArgumentError("tasks: must be >= 0"));  // same text, no field.
  CHECK(Status::Ok().WithField("tasks").field().empty());
}

}  // namespace
}  // namespace tessera
