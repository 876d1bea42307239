// ApplyQueueTree (tessera/queue_tree.h): a declared queue tree applied to a real scheduler,
// idempotently, refusing a declaration that conflicts with what exists without changing anything.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "integration/fixture.h"
#include "tessera/daemon_config.h"
#include "tessera/job.h"
#include "tessera/queue_tree.h"

namespace tessera {
namespace {

using namespace testing;

using Declared = google::protobuf::RepeatedPtrField<v1::QueueSpec>;

Declared Declare(const std::vector<v1::QueueSpec>& specs) {
  Declared declared;
  for (const v1::QueueSpec& spec : specs) *declared.Add() = spec;
  return declared;
}

std::vector<std::string> Names(Scheduler& scheduler) {
  std::vector<std::string> names;
  const auto queues = scheduler.ListQueues();
  REQUIRE(queues.ok());
  for (const v1::Queue& queue : *queues) names.push_back(queue.spec().name());
  return names;
}

// The daemon's `queues:` section, loaded as tesserad loads its file.
StatusOr<v1::DaemonConfig> LoadQueues(const std::string& yaml) {
  ScratchDir dir;
  const std::string path = dir.File("tesserad.yaml");
  std::ofstream(path) << yaml;
  return LoadDaemonConfig(path);
}

}  // namespace

TEST_CASE("daemon config: queues are QueueSpecs, read with their limits and queueing") {
  auto config = LoadQueues(R"(
queues:
  - {name: research, weight: 3, guarantee: {gpu_milli: 8000}}
  - name: research/vision
    cap: {gpu_milli: 16000}
    queueing: STRICT_FIFO
)");
  REQUIRE_MESSAGE(config.ok(), config.status().ToString());
  REQUIRE(config->queues_size() == 2);
  CHECK(config->queues(0).weight() == 3);
  CHECK(config->queues(0).guarantee().gpu_milli() == 8000);
  CHECK(config->queues(1).cap().gpu_milli() == 16000);
  CHECK(config->queues(1).queueing() == v1::STRICT_FIFO);
}

TEST_CASE("daemon config: a bad queue declaration is refused naming the entry and field") {
  auto message = [](const std::string& yaml) { return LoadQueues(yaml).status().message(); };
  CHECK(message("queues: [{name: a}, {name: a}]") ==
        "queues[1].name: 'a' is declared twice (also queues[0])");
  CHECK(message("queues: [{name: 'Bad Name'}]").rfind("queues[0].name: ", 0) == 0);
  CHECK(message("queues: [{name: a, weight: -1}]").rfind("queues[0].weight: ", 0) == 0);
  CHECK(message("queues: [{name: a, cap: {gpu_milli: 1}, guarantee: {gpu_milli: 2}}]") ==
        "queues[0].cap.gpu_milli: 1 is below guarantee.gpu_milli (2)");
  CHECK(message("queues: [{name: a, wieght: 2}]").find("queues[0].wieght: unknown field") !=
        std::string::npos);
}

TEST_CASE("ApplyQueueTree creates children after parents, then reports everything unchanged") {
  auto t = OpenCluster(OneNode(8));
  // Child first in the declaration: created after its parent all the same.
  const Declared declared =
      Declare({QueueSpec("research/vision", 2), QueueSpec("research", 3), QueueSpec("ops", 1)});
  auto first = ApplyQueueTree(*t.scheduler, declared);
  REQUIRE_MESSAGE(first.ok(), first.status().ToString());
  CHECK(first->created == std::vector<std::string>{"research", "ops", "research/vision"});
  CHECK(first->updated.empty());
  CHECK(first->undeclared == std::vector<std::string>{"default"});
  CHECK(t->GetQueue("research/vision")->spec().weight() == 2);

  auto again = ApplyQueueTree(*t.scheduler, declared);
  REQUIRE(again.ok());
  CHECK(again->created.empty());
  CHECK(again->updated.empty());
  CHECK(again->unchanged.size() == 3);
}

TEST_CASE("ApplyQueueTree updates a changed spec and never deletes an undeclared queue") {
  auto t = OpenCluster(OneNode(8));
  REQUIRE(t->CreateQueue(QueueSpec("old")).ok());
  REQUIRE(t->Submit(JobSpecBuilder("old").Build()).ok());
  REQUIRE(ApplyQueueTree(*t.scheduler, Declare({QueueSpec("team", 1)})).ok());
  auto changed = ApplyQueueTree(*t.scheduler, Declare({QueueSpec("team", 4)}));
  REQUIRE(changed.ok());
  CHECK(changed->updated == std::vector<std::string>{"team"});
  CHECK(changed->undeclared == std::vector<std::string>{"default", "old"});
  CHECK(t->GetQueue("team")->spec().weight() == 4);
  CHECK(t->GetQueue("old").ok());
}

TEST_CASE("ApplyQueueTree refuses a conflicting declaration and changes nothing") {
  auto t = OpenCluster(OneNode(8));
  REQUIRE(t->Submit(JobSpecBuilder("default").Build()).ok());
  const std::vector<std::string> before = Names(*t.scheduler);

  SUBCASE("a child under a leaf that holds jobs") {
    auto refused =
        ApplyQueueTree(*t.scheduler, Declare({QueueSpec("fresh"), QueueSpec("default/child")}));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
    CHECK(refused.status().message() ==
          "queues[1].name: cannot create 'default/child': 'default' holds unfinished jobs, so "
          "it must stay a leaf");
  }
  SUBCASE("a parent neither declared nor existing") {
    auto refused = ApplyQueueTree(*t.scheduler, Declare({QueueSpec("fresh"), QueueSpec("a/b")}));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kInvalidArgument);
    CHECK(refused.status().message() ==
          "queues[1].name: parent queue 'a' is neither declared nor existing");
  }
  SUBCASE("a name declared twice") {
    auto refused = ApplyQueueTree(*t.scheduler, Declare({QueueSpec("fresh"), QueueSpec("fresh")}));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message() ==
          "queues[1].name: 'fresh' is declared twice (also queues[0])");
  }
  SUBCASE("a bad spec") {
    auto refused = ApplyQueueTree(*t.scheduler, Declare({QueueSpec("fresh", -1)}));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().rfind("queues[0].weight: must be a finite number >= 0", 0) ==
          0);
  }
  CHECK(Names(*t.scheduler) == before);
}

}  // namespace tessera
