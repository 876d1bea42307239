// Every documented error of the public API, provoked: the code is right and the message names
// the field or the object at fault.
#include <sqlite3.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

struct BadSpec {
  const char* what;
  std::function<void(v1::JobSpec&)> mutate;
  const char* field;  // the message must start with it.
};

TEST_CASE("errors: invalid job specs are refused, naming the field") {
  auto t = OpenCluster(OneNode(8));
  const std::vector<BadSpec> cases = {
      {"bad queue path", [](v1::JobSpec& s) { s.set_queue("a//b"); }, "queue: 'a//b'"},
      {"no task", [](v1::JobSpec& s) { s.clear_task(); }, "task: required"},
      {"zero cpu", [](v1::JobSpec& s) { s.mutable_task()->set_cpu_milli(0); }, "task.cpu_milli"},
      {"negative memory", [](v1::JobSpec& s) { s.mutable_task()->set_memory_mib(-5); },
       "task.memory_mib"},
      {"too many gpus", [](v1::JobSpec& s) { s.mutable_task()->set_gpu_count(33); },
       "task.gpu_count"},
      {"gpu_milli over 1000",
       [](v1::JobSpec& s) {
         s.mutable_task()->set_gpu_count(1);
         s.mutable_task()->set_gpu_milli(1500);
       },
       "task.gpu_milli"},
      {"fraction of two GPUs",
       [](v1::JobSpec& s) {
         s.mutable_task()->set_gpu_count(2);
         s.mutable_task()->set_gpu_milli(500);
       },
       "task.gpu_milli: a fraction"},
      {"share without GPUs", [](v1::JobSpec& s) { s.mutable_task()->set_gpu_milli(500); },
       "task.gpu_milli: set, but task.gpu_count is 0"},
      {"GPU memory without GPUs", [](v1::JobSpec& s) { s.mutable_task()->set_gpu_memory_mib(10); },
       "task.gpu_memory_mib"},
      {"models without GPUs", [](v1::JobSpec& s) { s.mutable_task()->add_gpu_models("A100"); },
       "task.gpu_models"},
      {"empty model name",
       [](v1::JobSpec& s) {
         s.mutable_task()->set_gpu_count(1);
         s.mutable_task()->add_gpu_models("");
       },
       "task.gpu_models[0]"},
      {"NVLink wish without GPUs",
       [](v1::JobSpec& s) { s.mutable_topology()->set_task_gpus_same_nvlink(true); },
       "topology.task_gpus_same_nvlink"},
      {"negative tasks", [](v1::JobSpec& s) { s.set_tasks(-1); }, "tasks: must be between"},
      {"gang larger than tasks",
       [](v1::JobSpec& s) {
         s.set_tasks(2);
         s.set_gang_min(3);
       },
       "gang_min"},
      {"elastic min 0", [](v1::JobSpec& s) { s.mutable_elastic()->set_max_tasks(2); },
       "elastic.min_tasks"},
      {"elastic max < min",
       [](v1::JobSpec& s) {
         s.mutable_elastic()->set_min_tasks(3);
         s.mutable_elastic()->set_max_tasks(2);
       },
       "elastic.max_tasks"},
      {"elastic with tasks",
       [](v1::JobSpec& s) {
         s.set_tasks(2);
         s.mutable_elastic()->set_min_tasks(1);
         s.mutable_elastic()->set_max_tasks(2);
       },
       "tasks: leave unset"},
      {"negative time limit", [](v1::JobSpec& s) { s.set_time_limit_s(-1); }, "time_limit_s"},
      {"grace too long", [](v1::JobSpec& s) { s.set_checkpoint_grace_s(999999999); },
       "checkpoint_grace_s"},
      {"long name", [](v1::JobSpec& s) { s.set_name(std::string(300, 'x')); }, "name: at most"},
      {"empty label key", [](v1::JobSpec& s) { (*s.mutable_labels())[""] = "v"; }, "labels"},
      {"env key with =", [](v1::JobSpec& s) { (*s.mutable_env())["A=B"] = "v"; }, "env"},
      {"negative simulated duration",
       [](v1::JobSpec& s) { s.mutable_simulation()->set_duration_ms(-1); },
       "simulation.duration_ms"},
      {"unknown priority class", [](v1::JobSpec& s) { s.set_priority_class("urgent"); },
       "priority_class: unknown class 'urgent' (known: low, normal, high)"},
      // Integer bounds: each message names the bound.
      {"time limit past a year", [](v1::JobSpec& s) { s.set_time_limit_s(9223372036854); },
       "time_limit_s: must be between 0 and 31622400, got 9223372036854"},
      {"simulated duration INT64_MAX",
       [](v1::JobSpec& s) {
         s.mutable_simulation()->set_duration_ms(std::numeric_limits<int64_t>::max());
       },
       "simulation.duration_ms: must be between 0 and 31622400000"},
      {"negative checkpoint interval",
       [](v1::JobSpec& s) { s.mutable_simulation()->set_checkpoint_every_ms(-1); },
       "simulation.checkpoint_every_ms: must be between 0 and 31622400000, got -1"},
      {"simulated utilisation over 100",
       [](v1::JobSpec& s) { s.mutable_simulation()->set_gpu_utilization_pct(101); },
       "simulation.gpu_utilization_pct: must be a number in [0, 100], got 101"},
      {"elastic sizes: two rules",
       [](v1::JobSpec& s) {
         s.mutable_elastic()->set_min_tasks(1);
         s.mutable_elastic()->set_max_tasks(8);
         s.mutable_elastic()->mutable_sizes()->set_powers_of_two(true);
         s.mutable_elastic()->mutable_sizes()->set_multiple_of(2);
       },
       "elastic.sizes: set at most one of powers_of_two, multiple_of and counts"},
      {"elastic sizes: multiple beyond the maximum",
       [](v1::JobSpec& s) {
         s.mutable_elastic()->set_min_tasks(1);
         s.mutable_elastic()->set_max_tasks(7);
         s.mutable_elastic()->mutable_sizes()->set_multiple_of(8);
       },
       "elastic.sizes.multiple_of: multiples of 8 allow no task count between"},
      {"simulated exit code over 255",
       [](v1::JobSpec& s) { s.mutable_simulation()->set_exit_code(256); },
       "simulation.exit_code: must be between 0 and 255, got 256"},
      {"cpu past a million cores",
       [](v1::JobSpec& s) { s.mutable_task()->set_cpu_milli(int64_t{1} << 40); },
       "task.cpu_milli: must be between 1 and 1000000000"},
      {"memory past 1 PiB",
       [](v1::JobSpec& s) { s.mutable_task()->set_memory_mib(int64_t{1} << 40); },
       "task.memory_mib: must be between 1 and 1073741824"},
      {"GPU memory past 1 PiB",
       [](v1::JobSpec& s) {
         s.mutable_task()->set_gpu_count(1);
         s.mutable_task()->set_gpu_memory_mib(int64_t{1} << 40);
       },
       "task.gpu_memory_mib: must be between 0 and 1073741824"},
      // Sizes (JobSizeLimits defaults).
      {"command over 64 KiB", [](v1::JobSpec& s) { s.add_command(std::string(64 * 1024, 'x')); },
       "command: at most 65536 bytes, got 65537 (limits.max_command_bytes)"},
      {"env over 64 KiB",
       [](v1::JobSpec& s) { (*s.mutable_env())["A"] = std::string(64 * 1024, 'x'); },
       "env: at most 65536 bytes, got 65539 (limits.max_env_bytes)"},
      {"spec over 256 KiB",
       [](v1::JobSpec& s) {
         for (int i = 0; i < 300; ++i)
           (*s.mutable_labels())["k" + std::to_string(i)] = std::string(1000, 'x');
       },
       "spec: at most 262144 bytes"},
  };
  for (const BadSpec& c : cases) {
    CAPTURE(c.what);
    v1::JobSpec spec = JobSpecBuilder("default").Build();
    c.mutate(spec);
    auto job = t->Submit(spec);
    CHECK(job.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(job.status().message().rfind(c.field, 0) == 0, job.status().message());
  }
  CHECK(CountStates(t.scheduler.get()).empty());  // nothing was stored.
}

TEST_CASE("errors: a job naming no queue goes to the default queue, or is refused without one") {
  auto t = OpenCluster(OneNode(8));
  v1::JobSpec spec = JobSpecBuilder("default").Build();
  spec.clear_queue();
  const v1::Job placed = MustSubmit(t.scheduler.get(), spec);
  CHECK(placed.spec().queue() == "default");

  Options options;
  options.default_queue = "";
  auto none = OpenCluster(OneNode(8), options);
  auto refused = none->Submit(spec);
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK(refused.status().message().rfind("queue: required", 0) == 0);
}

TEST_CASE("errors: submitting to a missing queue or to a parent queue") {
  auto t = OpenCluster(OneNode(8));
  auto missing = t->Submit(JobSpecBuilder("nope").Build());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "queue: 'nope' does not exist");
  CreateQueue(t.scheduler.get(), QueueSpec("org"));
  CreateQueue(t.scheduler.get(), QueueSpec("org/team"));
  auto parent = t->Submit(JobSpecBuilder("org").Build());
  CHECK(parent.status().code() == StatusCode::kFailedPrecondition);
  CHECK(parent.status().message().find("leaf") != std::string::npos);
}

TEST_CASE("errors: queue administration") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, QueueSpec("org"));
  CHECK(s->CreateQueue(QueueSpec("org")).code() == StatusCode::kAlreadyExists);
  Status orphan = s->CreateQueue(QueueSpec("ghost/team"));
  CHECK(orphan.code() == StatusCode::kNotFound);
  CHECK(orphan.message().find("parent queue 'ghost'") != std::string::npos);
  CHECK(s->CreateQueue(QueueSpec("Bad Name")).code() == StatusCode::kInvalidArgument);
  v1::QueueSpec negative = QueueSpec("neg", -1);
  CHECK(s->CreateQueue(negative).message().rfind("weight:", 0) == 0);
  v1::QueueSpec capped = QueueSpec("capped");
  capped.mutable_guarantee()->set_gpu_milli(4000);
  capped.mutable_cap()->set_gpu_milli(2000);
  Status below = s->CreateQueue(capped);
  CHECK(below.code() == StatusCode::kInvalidArgument);
  CHECK(below.message().rfind("cap.gpu_milli: 2000 is below guarantee.gpu_milli", 0) == 0);
  v1::QueueSpec models = QueueSpec("models");
  v1::GpuModelQuota* h100 = models.add_gpu_models();
  h100->set_model("H100-80GB");
  h100->set_guarantee_gpu_milli(2000);
  h100->set_cap_gpu_milli(1000);
  CHECK(s->CreateQueue(models).message() ==
        "gpu_models[0].cap_gpu_milli: 1000 is below gpu_models[0].guarantee_gpu_milli (2000)");
  h100->set_cap_gpu_milli(4000);
  models.mutable_cap()->set_gpu_milli(1000);
  CHECK(s->CreateQueue(models).message() ==
        "gpu_models[0].guarantee_gpu_milli: 2000 is above cap.gpu_milli (1000)");
  models.clear_cap();
  *models.add_gpu_models() = *h100;
  CHECK(s->CreateQueue(models).message() == "gpu_models[1].model: 'H100-80GB' is listed twice");
  models.mutable_gpu_models(1)->set_model("");
  CHECK(s->CreateQueue(models).message() == "gpu_models[1].model: must not be empty");
  models.mutable_gpu_models(1)->set_model("T4");
  models.mutable_gpu_models(1)->set_guarantee_gpu_milli(-1);
  CHECK(s->CreateQueue(models).message() ==
        "gpu_models[1].guarantee_gpu_milli: must be >= 0, got -1");
  models.mutable_gpu_models(1)->set_guarantee_gpu_milli(0);
  models.mutable_gpu_models(1)->set_borrowing_limit_gpu_milli(-2);
  CHECK(s->CreateQueue(models).message() ==
        "gpu_models[1].borrowing_limit_gpu_milli: must be >= 0, got -2");
  v1::QueueSpec limit = QueueSpec("limit");
  limit.mutable_borrowing_limit()->set_cpu_milli(-1);
  CHECK(s->CreateQueue(limit).message().rfind("borrowing_limit.cpu_milli", 0) == 0);
  v1::QueueSpec idle = QueueSpec("idle");
  idle.mutable_idle_gpus()->set_below_pct(150);
  CHECK(s->CreateQueue(idle).message().rfind("idle_gpus.below_pct: must be a number in [0, 100]",
                                             0) == 0);
  idle.mutable_idle_gpus()->set_below_pct(5);
  CHECK(s->CreateQueue(idle).message() ==
        "idle_gpus.idle_for_s: must be between 1 and 2592000, got 0");
  idle.mutable_idle_gpus()->set_idle_for_s(60);
  idle.mutable_idle_gpus()->set_warning_s(-1);
  CHECK(s->CreateQueue(idle).message() ==
        "idle_gpus.warning_s: must be between 0 and 2592000, got -1");
  v1::QueueSpec budget = QueueSpec("budget");
  budget.mutable_burst_budget()->set_per_hour(-1);
  CHECK(s->CreateQueue(budget).message() ==
        "burst_budget.per_hour: must be a finite number >= 0, got -1.000000");
  budget.mutable_burst_budget()->set_per_hour(0);  // 0 is no burst at all, and allowed.
  budget.mutable_burst_budget()->set_per_day(-0.5);
  CHECK(s->CreateQueue(budget).message() ==
        "burst_budget.per_day: must be a finite number >= 0, got -0.500000");
  budget.mutable_burst_budget()->clear_per_day();
  budget.mutable_burst_budget()->set_per_month(std::nan(""));
  CHECK(s->CreateQueue(budget).message() ==
        "burst_budget.per_month: must be a finite number >= 0, got nan");
  CHECK(s->UpdateQueue(budget).message() ==
        "burst_budget.per_month: must be a finite number >= 0, got nan");
  CHECK(s->UpdateQueue(QueueSpec("nope")).code() == StatusCode::kNotFound);
  CHECK(s->DeleteQueue("nope").code() == StatusCode::kNotFound);
  CHECK(s->GetQueue("nope").status().code() == StatusCode::kNotFound);

  // A leaf with jobs can neither get children nor be deleted; an emptied one can.
  MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build());
  CHECK(s->CreateQueue(QueueSpec("default/sub")).code() == StatusCode::kFailedPrecondition);
  CHECK(s->DeleteQueue("default").code() == StatusCode::kFailedPrecondition);
  CreateQueue(s, QueueSpec("org/team"));
  CHECK(s->DeleteQueue("org").code() == StatusCode::kFailedPrecondition);
  CHECK(s->DeleteQueue("org/team").ok());
  CHECK(s->DeleteQueue("org").ok());
  auto names = s->ListQueues();
  REQUIRE(names.ok());
  CHECK(names->size() == 1);  // only "default".
}

TEST_CASE("errors: nodes, lists and watches") {
  auto t = OpenCluster(OneNode(8));
  CHECK(t->CordonNode("nope", true).code() == StatusCode::kNotFound);
  CHECK(t->DrainNode("nope").code() == StatusCode::kNotFound);
  v1::ListJobsRequest big;
  big.set_page_size(5000);
  CHECK(t->ListJobs(big).status().message().rfind("page_size", 0) == 0);
  v1::ListJobsRequest token;
  token.set_page_token("xyz");
  CHECK(t->ListJobs(token).status().message().rfind("page_token", 0) == 0);
  v1::ListJobsRequest queue;
  queue.set_queue("bad queue");
  CHECK(t->ListJobs(queue).status().code() == StatusCode::kInvalidArgument);
  CHECK(t->WatchEvents(0, 0, std::chrono::milliseconds(0))
            .status()
            .message()
            .rfind("max_events", 0) == 0);
  CHECK(t->GetJob(12345).status().code() == StatusCode::kNotFound);
  CHECK(t->Backup("").code() == StatusCode::kInvalidArgument);
}

TEST_CASE("errors: bad options are refused at Open, naming the field") {
  struct BadOptions {
    std::function<void(Options&)> mutate;
    const char* field;
  };
  const std::vector<BadOptions> cases = {
      {[](Options& o) { o.store.max_batch = 0; }, "store.max_batch"},
      {[](Options& o) { o.store.max_size_mib = -1; }, "store.max_size_mib"},
      {[](Options& o) { o.engine.max_attempts = 0; }, "engine.max_attempts"},
      {[](Options& o) { o.engine.decision_slice = std::chrono::microseconds(0); },
       "engine.decision_slice"},
      {[](Options& o) { o.default_priority_class = "vip"; }, "default_priority_class"},
      {[](Options& o) {
         o.priority_classes.push_back({"low", 1, true});
       },
       "priority_classes[3].name: duplicate"},
      {[](Options& o) { o.default_queue = "a b"; }, "default_queue"},
      {[](Options& o) { o.job_size_limits.max_command_bytes = 0; },
       "limits.max_command_bytes: must be > 0, got 0"},
      {[](Options& o) { o.job_size_limits.max_env_bytes = -1; }, "limits.max_env_bytes"},
      {[](Options& o) { o.job_size_limits.max_spec_bytes = 0; }, "limits.max_spec_bytes"},
      {[](Options& o) { o.max_pending_jobs_per_queue = -1; },
       "max_pending_jobs_per_queue: must be >= 0, got -1"},
      {[](Options& o) {
         v1::SimulatedCluster c;
         AddGroup(c, "", 1, 0);
         o.simulated_cluster = c;
       },
       "simulated_cluster: groups[0].name_prefix"},
      {[](Options& o) {
         v1::SimulatedCluster c;
         AddGroup(c, "n", 1, 40);
         o.simulated_cluster = c;
       },
       "simulated_cluster: groups[0]: node 'n-0': gpus: at most 32"},
      {[](Options& o) { o.store.busy_timeout = std::chrono::milliseconds(-1); },
       "store.busy_timeout: must be >= 0 ms, got -1"},
      {[](Options& o) { o.gpu_health.resume_temperature_c = 90; },
       "gpu_health.resume_temperature_c: must be <= gpu_health.max_temperature_c (87), got 90"},
      {[](Options& o) { o.placement.expected_coverage = 2; },
       "placement.expected_coverage: must be in (0, 1], got 2"},
      {[](Options& o) { o.placement.expected_coverage = 0; },
       "placement.expected_coverage: must be in (0, 1], got 0"},
      {[](Options& o) { o.placement.learn_half_life_tasks = -1; },
       "placement.learn_half_life_tasks: must be a finite number >= 0, got -1"},
      {[](Options& o) { o.placement.max_candidates = -1; },
       "placement.max_candidates: must be >= 0, got -1"},
      {[](Options& o) { o.placement.expected_tasks = {ExpectedTask{.gpu_milli = 0}}; },
       "placement.expected_tasks[0].gpu_milli: must be in 1..1000, got 0"},
      {[](Options& o) { o.placement.expected_tasks = {ExpectedTask{.count = 0}}; },
       "placement.expected_tasks[0].count: must be a finite number > 0, got 0"},
      {[](Options& o) { o.engine.max_reservations = -1; },
       "engine.max_reservations: must be >= 0, got -1"},
      {[](Options& o) { o.engine.default_runtime_estimate = std::chrono::seconds(0); },
       "engine.default_runtime_estimate: must be > 0 s, got 0"},
      {[](Options& o) { o.preemption.min_runtime = std::chrono::seconds(-1); },
       "preemption.min_runtime: must be >= 0 s, got -1"},
      {[](Options& o) { o.preemption.cooldown = std::chrono::seconds(-1); },
       "preemption.cooldown: must be >= 0 s, got -1"},
      {[](Options& o) { o.preemption.max_per_minute = -1; },
       "preemption.max_per_minute: must be >= 0, got -1"},
      {[](Options& o) {
         o.simulated_cluster = OneNode(1);
         o.simulated_cluster_file = "cluster.yaml";
       },
       "simulated_cluster_file: set together with simulated_cluster; keep one"},
      {[](Options& o) { o.executor_plugin = PluginOptions{}; },
       "executor_plugin.plugin: must not be empty"},
      {[](Options& o) {
         PluginOptions p;
         p.plugin = "sim";
         p.call_deadline = std::chrono::milliseconds(0);
         o.executor_plugin = p;
       },
       "executor_plugin.call_deadline: must be > 0 ms, got 0"},
      {[](Options& o) {
         PluginOptions p;
         p.plugin = "sim";
         p.launch_deadline = std::chrono::milliseconds(-1);
         o.executor_plugin = p;
       },
       "executor_plugin.launch_deadline: must be >= 0 ms, got -1"},
      {[](Options& o) {
         PluginOptions p;
         p.plugin = "sim";
         p.provision_deadline = std::chrono::milliseconds(0);
         o.executor_plugin = p;
       },
       "executor_plugin.provision_deadline: must be > 0 ms, got 0"},
      {[](Options& o) {
         PluginOptions p;
         p.plugin = "sim";
         p.poll_interval = std::chrono::milliseconds(0);
         o.executor_plugin = p;
       },
       "executor_plugin.poll_interval: must be > 0 ms, got 0"},
      {[](Options& o) {
         PluginOptions p;
         p.plugin = "sim";
         p.max_restarts_per_minute = -1;
         o.executor_plugin = p;
       },
       "executor_plugin.max_restarts_per_minute: must be >= 0, got -1"},
      {[](Options& o) { o.plugin_dirs = {""}; }, "plugin_dirs[0]: must not be empty"},
      {[](Options& o) { o.elastic.scale_out_after = std::chrono::seconds(-1); },
       "elastic.scale_out_after: must be >= 0 s, got -1"},
      {[](Options& o) { o.elastic.scale_in_after = std::chrono::seconds(-1); },
       "elastic.scale_in_after: must be >= 0 s, got -1"},
      {[](Options& o) { o.elastic.max_nodes = 0; }, "elastic.max_nodes: must be > 0, got 0"},
      {[](Options& o) { o.elastic.max_requests_per_minute = 0; },
       "elastic.max_requests_per_minute: must be > 0, got 0"},
      {[](Options& o) { o.elastic.max_spot_price_per_hour = -1; },
       "elastic.max_spot_price_per_hour: must be a finite number >= 0, got -1"},
      {[](Options& o) { o.elastic.group_backoff = std::chrono::seconds(-1); },
       "elastic.group_backoff: must be >= 0 s, got -1"},
      {[](Options& o) { o.elastic.metering_interval = std::chrono::seconds(0); },
       "elastic.metering_interval: must be > 0 s, got 0"},
      {[](Options& o) { o.elastic.budget_per_hour = -1; },
       "elastic.budget_per_hour: must be a finite number >= 0, got -1"},
      {[](Options& o) { o.elastic.budget_per_day = std::nan(""); },
       "elastic.budget_per_day: must be a finite number >= 0, got nan"},
      {[](Options& o) { o.elastic.budget_per_month = -2.5; },
       "elastic.budget_per_month: must be a finite number >= 0, got -2.5"},
  };
  for (const BadOptions& c : cases) {
    Options options;
    c.mutate(options);
    auto opened = Scheduler::Open(options);
    CHECK(opened.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(opened.status().message().rfind(c.field, 0) == 0, opened.status().message());
  }
}

TEST_CASE("errors: a simulated cluster file with a typo names the file, line and field") {
  ScratchDir dir;
  const std::string path = dir.File("cluster.yaml");
  std::ofstream(path) << "groups:\n  - name_prefix: gpu\n    count: 2\n    gpus: 8\n"
                         "    gpu_modle: A100\n";
  Options options;
  options.simulated_cluster_file = path;
  auto opened = Scheduler::Open(options);
  CHECK(opened.status().code() == StatusCode::kInvalidArgument);
  CHECK(opened.status().message().rfind(path + ":5:5: groups[0].gpu_modle: unknown field", 0) == 0);
  options.simulated_cluster_file = dir.File("missing.yaml");
  CHECK(Scheduler::Open(options).status().code() == StatusCode::kNotFound);
}

TEST_CASE("errors: the store is locked, corrupt, or from a newer version") {
  ScratchDir dir;
  Options options;
  options.store.path = dir.File("state.db");
  {
    auto first = Open(options);
    auto second = Scheduler::Open(options);
    CHECK(second.status().code() == StatusCode::kUnavailable);
    CHECK(second.status().message().find("in use by another scheduler") != std::string::npos);
  }
  // The lock is released with the first scheduler.
  CHECK(Scheduler::Open(options).ok());

  const std::string garbage = dir.File("garbage.db");
  std::ofstream(garbage) << std::string(8192, 'x');
  options.store.path = garbage;
  auto corrupt = Scheduler::Open(options);
  CHECK(corrupt.status().code() == StatusCode::kFailedPrecondition);
  CHECK(corrupt.status().message().find("corrupt") != std::string::npos);

  options.store.path = dir.File("no-such-dir/state.db");
  CHECK(Scheduler::Open(options).status().code() == StatusCode::kUnavailable);
}

TEST_CASE("errors: the messages docs/errors.md quotes, exactly") {
  auto t = OpenCluster(OneNode(8));
  v1::JobSpec nvlink = JobSpecBuilder("default").Build();
  nvlink.mutable_topology()->set_task_gpus_same_nvlink(true);
  CHECK(t->Submit(nvlink).status().message() ==
        "topology.task_gpus_same_nvlink: needs task.gpu_count >= 1");

  SubmitOptions keyed;
  keyed.idempotency_key = "req-42";
  const v1::Job first = *t->Submit(JobSpecBuilder("default").Build(), keyed);
  auto reused = t->Submit(JobSpecBuilder("default").Name("other").Build(), keyed);
  CHECK(reused.status().code() == StatusCode::kAlreadyExists);
  CHECK(reused.status().message() == "idempotency_key: 'req-42' was used by job " +
                                         std::to_string(first.id()) + " with a different spec");

  ScratchDir dir;
  Options options;
  options.store.path = dir.File("state.db");
  { auto created = Open(options); }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(options.store.path.c_str(), &db) == SQLITE_OK);
  CHECK(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  auto newer = Scheduler::Open(options);
  CHECK(newer.status().code() == StatusCode::kFailedPrecondition);
  CHECK(newer.status().message() == "store '" + options.store.path +
                                        "' has schema version 99, newer than this build's 5; use "
                                        "a newer Tessera or restore a backup");
}

}  // namespace
}  // namespace tessera
