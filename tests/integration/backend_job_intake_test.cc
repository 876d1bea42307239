// Job sources (BackendEvent SUBMIT_JOB / WITHDRAW_JOB): a backend that takes in work made
// elsewhere, as the Kubernetes backend takes in pods that name Tessera as their scheduler, hands
// it to the scheduler as jobs keyed by an external id. What a user of such a backend relies on:
// the job is scheduled like any other (queue, fair share), its launches (and only its) carry the
// id, the same id submitted again is the same job (after a restart too), a withdrawn id cancels
// its job, and a refused submit (no such queue) leaves the scheduler as it was.
#include <mutex>
#include <vector>

#include "integration/fixture.h"
#include "plugins/test_backend.h"
#include "tessera/plugin/linked.h"

namespace tessera {
namespace {

using namespace testing;

// What the test sees of the linked backend: its host (to emit events as the backend's watcher
// thread would) and the launches it got.
struct IntakeProbe {
  std::mutex mu;
  plugin::Host host;
  bool started = false;
  std::vector<v1::LaunchTask> launches;

  void Emit(const v1::BackendEvent& event) {
    std::lock_guard<std::mutex> lock(mu);
    REQUIRE(started);
    host.Emit(event);
  }
  std::vector<v1::LaunchTask> Launches() {
    std::lock_guard<std::mutex> lock(mu);
    return launches;
  }
};

class IntakeBackend : public TestBackend {
 public:
  IntakeBackend(plugin::Host host, std::shared_ptr<IntakeProbe> probe)
      : TestBackend(host), probe_(std::move(probe)) {}
  plugin::PluginStatus Start(const v1::StartRequest&) override {
    std::lock_guard<std::mutex> lock(probe_->mu);
    probe_->host = host();
    probe_->started = true;
    return plugin::PluginStatus::Ok();
  }
  plugin::PluginStatus Launch(const v1::LaunchTask& request) override {
    {
      std::lock_guard<std::mutex> lock(probe_->mu);
      probe_->launches.push_back(request);
    }
    return TestBackend::Launch(request);
  }

 private:
  std::shared_ptr<IntakeProbe> probe_;
};

Options WithIntakeBackend(std::shared_ptr<IntakeProbe> probe, const std::string& name = "k8s") {
  Options options;
  BackendOptions backend;
  backend.name = name;
  backend.plugin.linked =
      plugin::MakeLinkedPlugin("intake-backend", "0.1.0", TESSERA_PLUGIN_KIND_EXECUTOR,
                               [probe](plugin::Host host) -> std::unique_ptr<plugin::Plugin> {
                                 return std::make_unique<IntakeBackend>(host, probe);
                               });
  backend.plugin.config = "nodes=1\n";  // one node of 8 GPUs.
  options.backends.push_back(backend);
  return options;
}

v1::BackendEvent SubmitEvent(const std::string& external_id, const v1::JobSpec& spec) {
  v1::BackendEvent event;
  event.set_kind(v1::BackendEvent::SUBMIT_JOB);
  event.set_external_id(external_id);
  *event.mutable_job() = spec;
  return event;
}

v1::BackendEvent WithdrawEvent(const std::string& external_id) {
  v1::BackendEvent event;
  event.set_kind(v1::BackendEvent::WITHDRAW_JOB);
  event.set_external_id(external_id);
  return event;
}

// The jobs of the store, by id order.
std::vector<v1::Job> AllJobs(Scheduler* s) {
  v1::ListJobsRequest request;
  auto listed = s->ListJobs(request);
  REQUIRE_MESSAGE(listed.ok(), listed.status().ToString());
  return {listed->jobs().begin(), listed->jobs().end()};
}

TEST_CASE("job source: a submitted job runs, and only its launches carry the external id") {
  auto probe = std::make_shared<IntakeProbe>();
  auto t = Open(WithIntakeBackend(probe));
  Scheduler* s = t.scheduler.get();
  probe->Emit(SubmitEvent("ns/pod-a/uid-1",
                          JobSpecBuilder("default").Gpus(2).SimulatedDurationMs(5'000).Build()));
  s->WaitIdle();
  std::vector<v1::Job> jobs = AllJobs(s);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].status().state() == v1::RUNNING);
  CHECK(jobs[0].idempotency_key() == "ns/pod-a/uid-1");  // reported without its scope.
  // A tenant's job beside it, with a backend spec of its own: no external id.
  const uint64_t tenant = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  s->WaitIdle();
  std::vector<v1::LaunchTask> launches = probe->Launches();
  REQUIRE(launches.size() == 2);
  CHECK(launches[0].ref().job() == jobs[0].id());
  CHECK(launches[0].external_id() == "ns/pod-a/uid-1");
  CHECK(launches[1].ref().job() == tenant);
  CHECK(launches[1].external_id().empty());

  // Submitted again (a watcher that relisted): the same job, nothing new launched.
  probe->Emit(SubmitEvent("ns/pod-a/uid-1",
                          JobSpecBuilder("default").Gpus(2).SimulatedDurationMs(5'000).Build()));
  s->WaitIdle();
  CHECK(AllJobs(s).size() == 2);
  CHECK(probe->Launches().size() == 2);

  t.clock->AdvanceUs(5'000'000);
  s->WaitIdle();
  CHECK(MustGet(s, jobs[0].id()).status().state() == v1::SUCCEEDED);
}

TEST_CASE("job source: a tenant's idempotency key that spells an external id is another job") {
  auto probe = std::make_shared<IntakeProbe>();
  auto t = Open(WithIntakeBackend(probe));
  Scheduler* s = t.scheduler.get();
  probe->Emit(SubmitEvent("uid-7", JobSpecBuilder("default").Gpus(1).Build()));
  s->WaitIdle();
  // A tenant (the daemon scopes its keys by its queue prefix) and an embedder without a scope:
  // neither reaches the backend's job, and neither's launch gets the external id.
  SubmitOptions scoped;
  scoped.idempotency_key = "uid-7";
  scoped.idempotency_scope = "team-a/";
  auto a = s->Submit(JobSpecBuilder("default").Gpus(1).Build(), scoped);
  REQUIRE(a.ok());
  SubmitOptions bare;
  bare.idempotency_key = "uid-7";
  auto b = s->Submit(JobSpecBuilder("default").Gpus(1).Build(), bare);
  REQUIRE(b.ok());
  s->WaitIdle();
  CHECK(AllJobs(s).size() == 3);
  int with_id = 0;
  for (const v1::LaunchTask& launch : probe->Launches()) with_id += !launch.external_id().empty();
  CHECK(probe->Launches().size() == 3);
  CHECK(with_id == 1);
}

TEST_CASE("job source: a withdrawn id cancels its job, pending or running") {
  auto probe = std::make_shared<IntakeProbe>();
  auto t = Open(WithIntakeBackend(probe));
  Scheduler* s = t.scheduler.get();
  probe->Emit(SubmitEvent("running", JobSpecBuilder("default").Gpus(8).Build()));
  probe->Emit(SubmitEvent("waiting", JobSpecBuilder("default").Gpus(8).Build()));
  s->WaitIdle();
  std::vector<v1::Job> jobs = AllJobs(s);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].status().state() == v1::RUNNING);
  CHECK(jobs[1].status().state() == v1::PENDING);
  probe->Emit(WithdrawEvent("waiting"));
  probe->Emit(WithdrawEvent("running"));
  probe->Emit(WithdrawEvent("never-submitted"));  // nothing to cancel; nothing happens.
  s->WaitIdle();
  CHECK(MustGet(s, jobs[1].id()).status().state() == v1::CANCELLED);
  CHECK(MustGet(s, jobs[0].id()).status().state() == v1::CANCELLED);

  // Made and deleted at once: the withdrawal, behind the submit, still finds the job.
  probe->Emit(SubmitEvent("brief", JobSpecBuilder("default").Gpus(8).Build()));
  probe->Emit(WithdrawEvent("brief"));
  s->WaitIdle();
  jobs = AllJobs(s);
  REQUIRE(jobs.size() == 3);
  CHECK(jobs[2].status().state() == v1::CANCELLED);
}

TEST_CASE("job source: a submit the scheduler refuses leaves it as it was") {
  auto probe = std::make_shared<IntakeProbe>();
  auto t = Open(WithIntakeBackend(probe));
  Scheduler* s = t.scheduler.get();
  probe->Emit(SubmitEvent("x", JobSpecBuilder("no-such-queue").Gpus(1).Build()));
  probe->Emit(SubmitEvent("", JobSpecBuilder("default").Gpus(1).Build()));
  probe->Emit(SubmitEvent(std::string(600, 'u'), JobSpecBuilder("default").Gpus(1).Build()));
  s->WaitIdle();
  CHECK(AllJobs(s).empty());
  // And the backend is still healthy and takes the next one.
  probe->Emit(SubmitEvent("y", JobSpecBuilder("default").Gpus(1).Build()));
  s->WaitIdle();
  REQUIRE(AllJobs(s).size() == 1);
  CHECK(AllJobs(s)[0].status().state() == v1::RUNNING);
}

TEST_CASE("job source: after a restart the same external id is the same job") {
  ScratchDir dir;
  uint64_t id = 0;
  {
    auto probe = std::make_shared<IntakeProbe>();
    Options options = WithIntakeBackend(probe);
    options.store.path = dir.File("store.db");
    auto t = Open(options);
    probe->Emit(SubmitEvent("uid-9", JobSpecBuilder("default").Gpus(8).Build()));
    probe->Emit(SubmitEvent("uid-10", JobSpecBuilder("default").Gpus(8).Build()));
    t->WaitIdle();
    std::vector<v1::Job> jobs = AllJobs(t.scheduler.get());
    REQUIRE(jobs.size() == 2);
    id = jobs[1].id();  // pending behind the first.
    t->Close();
  }
  auto probe = std::make_shared<IntakeProbe>();
  Options options = WithIntakeBackend(probe);
  options.store.path = dir.File("store.db");
  auto t = Open(options);
  probe->Emit(SubmitEvent("uid-10", JobSpecBuilder("default").Gpus(8).Build()));
  t->WaitIdle();
  CHECK(AllJobs(t.scheduler.get()).size() == 2);
  // Its launch, when it comes, still carries the id: the scope was stored with the key.
  probe->Emit(WithdrawEvent("uid-9"));
  t->WaitIdle();
  bool launched_with_id = false;
  for (const v1::LaunchTask& launch : probe->Launches()) {
    if (launch.ref().job() == id) launched_with_id = launch.external_id() == "uid-10";
  }
  CHECK(launched_with_id);
}

}  // namespace
}  // namespace tessera
