// FeasibilityChecker: jobs no node could ever run are recognised, with a reason.
#include <doctest/doctest.h>

#include "placement/feasibility.h"
#include "tessera/job.h"
#include "unit/placement/placement_fixture.h"

namespace tessera {
namespace {

using testing::GpuNode;

Cluster TwoModels() {
  Cluster c;
  REQUIRE(c.AddNode(GpuNode("a", 8, "A100-80GB", 4)).ok());
  REQUIRE(c.AddNode(GpuNode("h", 4, "H100-80GB")).ok());
  return c;
}

FeasibilityQuery Query(int gpus, int tasks = 1) {
  FeasibilityQuery q;
  q.cpu_milli = 1000;
  q.memory_mib = 1024;
  q.gpu_count = gpus;
  q.gpu_milli = gpus > 0 ? 1000 : 0;
  q.min_tasks = tasks;
  return q;
}

TEST_CASE("feasibility: what fits somewhere is feasible") {
  const Cluster c = TwoModels();
  const FeasibilityChecker check(c);
  CHECK_FALSE(check.Check(Query(8)).has_value());
  CHECK_FALSE(check.Check(Query(4, 3)).has_value());  // two on "a", one on "h".
}

TEST_CASE("feasibility: too many GPUs for any node names the field and the largest node") {
  const FeasibilityChecker check(TwoModels());
  auto why = check.Check(Query(16));
  REQUIRE(why.has_value());
  CHECK(why->find("gpu_count 16 > largest node's 8") != std::string::npos);
}

TEST_CASE("feasibility: an unknown model, an NVLink domain too small, a gang too big") {
  const FeasibilityChecker check(TwoModels());
  FeasibilityQuery model = Query(1);
  model.models = {"B200"};
  auto why = check.Check(model);
  REQUIRE(why.has_value());
  CHECK(why->find("no node has GPUs of model B200") != std::string::npos);

  FeasibilityQuery nvlink = Query(8);
  nvlink.same_nvlink = true;
  nvlink.models = {"A100-80GB"};  // domains of 4.
  why = check.Check(nvlink);
  REQUIRE(why.has_value());
  CHECK(why->find("NVLink") != std::string::npos);

  why = check.Check(Query(4, 4));  // 3 such tasks fit in the whole cluster.
  REQUIRE(why.has_value());
  CHECK(why->find("at most 3") != std::string::npos);

  FeasibilityQuery same_node = Query(2, 5);
  same_node.same_node = true;
  why = check.Check(same_node);
  REQUIRE(why.has_value());
  CHECK(why->find("share one node") != std::string::npos);
}

TEST_CASE("feasibility: fractional shares count how many fit on each GPU") {
  Cluster c;
  REQUIRE(c.AddNode(GpuNode("t4", 1, "T4", 0, 16000)).ok());
  const FeasibilityChecker check(c);
  FeasibilityQuery q = Query(1, 4);
  q.gpu_milli = 250;
  CHECK_FALSE(check.Check(q).has_value());
  q.min_tasks = 5;
  CHECK(check.Check(q).has_value());
  q.min_tasks = 1;
  q.gpu_memory_mib = 20000;
  CHECK(check.Check(q).has_value());
}

TEST_CASE("feasibility: an empty cluster says so") {
  const FeasibilityChecker check{Cluster()};
  auto why = check.Check(Query(0));
  REQUIRE(why.has_value());
  CHECK(why->find("no nodes") != std::string::npos);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

TEST_CASE("feasibility: a node whose GPUs are shared in different forms offers each form") {
  // As a Kubernetes node with the device plugin's mixed strategy reports one: two whole GPUs and
  // one in two 3g.40gb MIG instances.
  v1::NodeSpec node = testing::GpuNode("mixed", 3, "H100-80GB");
  node.mutable_gpus(0)->set_sharing(v1::GPU_SHARING_EXCLUSIVE);
  node.mutable_gpus(1)->set_sharing(v1::GPU_SHARING_EXCLUSIVE);
  v1::GpuDevice* mig = node.mutable_gpus(2);
  mig->set_sharing(v1::GPU_SHARING_MIG);
  for (int start : {0, 4}) {
    v1::MigInstance* instance = mig->add_mig_instances();
    instance->set_profile("3g.40gb");
    instance->set_start(start);
  }
  Cluster c;
  REQUIRE(c.AddNode(node).ok());
  const FeasibilityChecker check(c);

  v1::JobSpec spec = JobSpecBuilder("q").Gpus(1).Build();
  spec.mutable_task()->set_mig_profile("3g.40gb");
  CHECK_FALSE(check.Check(FeasibilityQuery::FromSpec(spec, check.label_dictionary())));
  spec.set_tasks(2);  // both instances.
  CHECK_FALSE(check.Check(FeasibilityQuery::FromSpec(spec, check.label_dictionary())));
  spec.set_tasks(3);
  CHECK(check.Check(FeasibilityQuery::FromSpec(spec, check.label_dictionary())));

  CHECK_FALSE(check.Check(Query(2)).has_value());  // the two whole GPUs.
  const auto why = check.Check(Query(3));          // the MIG GPU is not a whole one.
  REQUIRE(why.has_value());
}

}  // namespace
}  // namespace tessera
