// Daemon configuration: embedded defaults, the example file, and every refusal naming the file,
// line and field or the field of a bad value.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "config/daemon_config.h"
#include "config/yaml_proto.h"
#include "tessera/daemon_config.h"

namespace tessera {
namespace {

// The example is found from this file's own path: the unit tests know no source directory.
std::string ExamplePath() { return std::string(TESSERA_EXAMPLES_DIR) + "/tesserad.yaml"; }

// Writes `yaml` to a temporary file and loads it.
StatusOr<v1::DaemonConfig> LoadYaml(const std::string& yaml) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "tessera-daemon-config-test.yaml";
  std::ofstream(path) << yaml;
  StatusOr<v1::DaemonConfig> config = LoadDaemonConfig(path.string());
  std::filesystem::remove(path);
  return config;
}

// The message of validating the config described by `yaml` (parsed from a string).
std::string Refusal(const std::string& yaml) {
  v1::DaemonConfig config;
  Status parsed = YamlStringToMessage(yaml, "test.yaml", &config);
  if (!parsed.ok()) return "parse: " + parsed.message();
  Status s = ValidateDaemonConfig(config);
  if (s.ok()) return "ok";
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(ToOptions(config).status().message() == s.message());
  return s.message();
}

TEST_CASE("daemon config: no file means the embedded defaults") {
  StatusOr<v1::DaemonConfig> config = LoadDaemonConfig("");
  REQUIRE(config.ok());
  CHECK(config->store().path() == "./var/tessera.db");
  CHECK(config->store().max_batch() == 4096);
  CHECK(config->server().listen() == "127.0.0.1:8080");
  CHECK(config->server().max_request_bytes() == 1048576);
  CHECK(config->server().max_connections() == 1000);
  CHECK(config->server().max_long_polls_per_token() == 16);
  CHECK(config->server().max_header_bytes() == 16384);
  CHECK(config->server().answer_timeout_ms() == 30000);
  CHECK(config->auth().tokens_size() == 0);
  CHECK(config->placement().strategy() == v1::FRAGMENTATION_AWARE);
  CHECK(config->placement().learn_workload());
  CHECK(config->placement().max_candidates() == 4);
  CHECK(config->simulated_cluster().SerializeAsString() ==
        DefaultSimulatedCluster().SerializeAsString());
  CHECK_FALSE(config->has_executor_plugin());

  StatusOr<Options> options = ToOptions(*config);
  REQUIRE(options.ok());
  const Options library;  // the library's defaults, except where the daemon differs.
  CHECK(options->store.path == "./var/tessera.db");
  CHECK(options->store.durable == library.store.durable);
  CHECK(options->store.max_batch == library.store.max_batch);
  CHECK(options->store.busy_timeout == library.store.busy_timeout);
  CHECK(config->store().check_at_open() == v1::STORE_CHECK_QUICK);
  CHECK(options->store.check_at_open == library.store.check_at_open);
  CHECK(options->engine.decision_slice == library.engine.decision_slice);
  CHECK(options->engine.max_attempts == library.engine.max_attempts);
  CHECK(options->engine.store_retry == library.engine.store_retry);
  CHECK(options->engine.max_reservations == library.engine.max_reservations);
  CHECK(options->engine.default_runtime_estimate == library.engine.default_runtime_estimate);
  CHECK(options->fair_share.usage_half_life == library.fair_share.usage_half_life);
  CHECK(options->fair_share.usage_refresh == library.fair_share.usage_refresh);
  CHECK(options->placement.strategy == library.placement.strategy);
  CHECK(options->placement.strategy == PlacementOptions::Strategy::kFragmentationAware);
  CHECK(options->placement.expected_coverage == library.placement.expected_coverage);
  CHECK(options->placement.learn_workload == library.placement.learn_workload);
  CHECK(options->placement.max_candidates == library.placement.max_candidates);
  CHECK(options->preemption.enabled == library.preemption.enabled);
  CHECK(options->preemption.reclaim == library.preemption.reclaim);
  CHECK(options->preemption.min_runtime == library.preemption.min_runtime);
  CHECK(options->preemption.cooldown == library.preemption.cooldown);
  CHECK(options->preemption.max_per_minute == library.preemption.max_per_minute);
  CHECK(options->gpu_health.max_temperature_c == library.gpu_health.max_temperature_c);
  CHECK(options->gpu_health.resume_temperature_c == library.gpu_health.resume_temperature_c);
  CHECK(options->gpu_health.fatal_xids == library.gpu_health.fatal_xids);
  CHECK(options->gpu_health.requeue_on_failure == library.gpu_health.requeue_on_failure);
  CHECK(options->elastic.enabled == library.elastic.enabled);
  CHECK(options->elastic.scale_out_after == library.elastic.scale_out_after);
  CHECK(options->elastic.scale_in_after == library.elastic.scale_in_after);
  CHECK(options->elastic.max_nodes == library.elastic.max_nodes);
  CHECK(options->elastic.max_requests_per_minute == library.elastic.max_requests_per_minute);
  CHECK(options->elastic.max_spot_price_per_hour == library.elastic.max_spot_price_per_hour);
  CHECK(options->elastic.group_backoff == library.elastic.group_backoff);
  CHECK(options->elastic.metering_interval == library.elastic.metering_interval);
  CHECK(options->elastic.budget_per_hour == library.elastic.budget_per_hour);
  CHECK(options->elastic.budget_per_day == library.elastic.budget_per_day);
  CHECK(options->elastic.budget_per_month == library.elastic.budget_per_month);
  REQUIRE(options->priority_classes.size() == library.priority_classes.size());
  for (size_t i = 0; i < library.priority_classes.size(); ++i) {
    CHECK(options->priority_classes[i].name == library.priority_classes[i].name);
    CHECK(options->priority_classes[i].value == library.priority_classes[i].value);
    CHECK(options->priority_classes[i].preemptible == library.priority_classes[i].preemptible);
  }
  CHECK(options->default_priority_class == "normal");
  CHECK(options->default_queue == "default");
  REQUIRE(options->simulated_cluster.has_value());
  CHECK(options->simulated_cluster->groups_size() == 2);
  CHECK_FALSE(options->executor_plugin.has_value());
}

// The default is where an install puts plugins: <libdir>/tessera/plugins beside libtessera. Here
// the library is linked into this test binary, so it is beside the binary;
// tests/consumer/check.sh shows an installed tesserad finding an installed plugin by name.
TEST_CASE("daemon config: plugin_dirs defaults to the plugins directory beside the library") {
  StatusOr<v1::DaemonConfig> config = LoadDaemonConfig("");
  REQUIRE(config.ok());
  const std::filesystem::path binary = std::filesystem::canonical("/proc/self/exe");
  REQUIRE(config->plugin_dirs_size() == 1);
  CHECK(config->plugin_dirs(0) == (binary.parent_path() / "tessera" / "plugins").string());
  StatusOr<Options> options = ToOptions(*config);
  REQUIRE(options.ok());
  CHECK(options->plugin_dirs == std::vector<std::string>{config->plugin_dirs(0)});

  StatusOr<v1::DaemonConfig> listed = LoadYaml("plugin_dirs: [/opt/plugins]\n");
  REQUIRE(listed.ok());
  CHECK(std::vector<std::string>(listed->plugin_dirs().begin(), listed->plugin_dirs().end()) ==
        std::vector<std::string>{"/opt/plugins"});  // a list replaces the default.
}

TEST_CASE("daemon config: an explicit zero is kept, not replaced by the default") {
  StatusOr<v1::DaemonConfig> config =
      LoadYaml("engine: {max_reservations: 0}\npreemption: {enabled: false, min_runtime_s: 0}\n");
  REQUIRE(config.ok());
  StatusOr<Options> options = ToOptions(*config);
  REQUIRE(options.ok());
  CHECK(options->engine.max_reservations == 0);
  CHECK_FALSE(options->preemption.enabled);
  CHECK(options->preemption.min_runtime.count() == 0);
  CHECK(options->preemption.cooldown.count() == 300);  // untouched fields keep theirs.

  // A class from the file is preemptible unless it says otherwise, whatever its name.
  StatusOr<v1::DaemonConfig> classes = LoadYaml(
      "priority_classes: [{name: high, value: 1000}]\n"
      "default_priority_class: high\n");
  REQUIRE(classes.ok());
  CHECK(classes->priority_classes(0).preemptible());
}

TEST_CASE("daemon config: GPU model prices replace the built-in ones, or stand alone") {
  StatusOr<v1::DaemonConfig> defaults = LoadYaml("");
  REQUIRE(defaults.ok());
  StatusOr<Options> builtin = ToOptions(*defaults);
  REQUIRE(builtin.ok());
  CHECK(builtin->fair_share.gpu_model_weights == DefaultGpuModelWeights());
  CHECK(builtin->fair_share.gpu_model_weights.at("H100-80GB") == 2.1);

  StatusOr<v1::DaemonConfig> merged =
      LoadYaml("fair_share: {gpu_model_weights: {H100-80GB: 3, MI300X: 2.5}}\n");
  REQUIRE(merged.ok());
  StatusOr<Options> options = ToOptions(*merged);
  REQUIRE(options.ok());
  CHECK(options->fair_share.gpu_model_weights.at("H100-80GB") == 3);
  CHECK(options->fair_share.gpu_model_weights.at("MI300X") == 2.5);
  CHECK(options->fair_share.gpu_model_weights.at("T4") == 0.2);  // built in, kept.

  StatusOr<v1::DaemonConfig> alone = LoadYaml(
      "fair_share: {builtin_gpu_model_weights: false, gpu_model_weights: {H100-80GB: 3}}\n");
  REQUIRE(alone.ok());
  options = ToOptions(*alone);
  REQUIRE(options.ok());
  CHECK(options->fair_share.gpu_model_weights == std::map<std::string, double>{{"H100-80GB", 3}});
}

TEST_CASE("daemon config: store.retention maps onto Options::retention") {
  StatusOr<v1::DaemonConfig> config =
      LoadYaml("store: {retention: {finished_job_ttl_s: 86400, max_finished_jobs: 100000}}\n");
  REQUIRE(config.ok());
  StatusOr<Options> options = ToOptions(*config);
  REQUIRE(options.ok());
  CHECK(options->retention.finished_job_ttl.count() == 86400);
  CHECK(options->retention.max_finished_jobs == 100000);
  CHECK(options->retention.sweep_interval.count() == 60000);  // the defaults.
  CHECK(options->retention.sweep_batch == 500);
}

TEST_CASE("daemon config: the example file loads and maps onto every Options field") {
  StatusOr<v1::DaemonConfig> config = LoadDaemonConfig(ExamplePath());
  REQUIRE_MESSAGE(config.ok(), config.status().message());
  CHECK(config->auth().tokens_size() == 2);
  CHECK(config->auth().tokens(1).queue_prefix() == "research/vision");
  CHECK(config->auth().tokens(1).priority_classes_size() == 2);
  CHECK(config->limits().submits_per_second() == 50);
  CHECK(config->limits().submit_burst() == 100);
  StatusOr<Options> options = ToOptions(*config);
  REQUIRE(options.ok());
  CHECK(options->job_size_limits.max_spec_bytes == 262144);
  CHECK(options->store.path == "./var/tessera.db");
  CHECK(options->fair_share.usage_half_life == std::chrono::hours(1));
  CHECK(options->placement.strategy == PlacementOptions::Strategy::kFragmentationAware);
  REQUIRE(options->placement.expected_tasks.size() == 3);
  CHECK(options->placement.expected_tasks[0].gpu_milli == 1000);  // the default.
  CHECK(options->placement.expected_tasks[1].gpu_milli == 500);
  CHECK(options->placement.expected_tasks[1].count == 30);
  CHECK(options->placement.expected_tasks[2].gpu_models == std::vector<std::string>{"A100-80GB"});
  CHECK(options->placement.max_candidates == 8);
  CHECK_FALSE(options->placement.learn_workload);
  CHECK(options->priority_classes.size() == 3);
  CHECK_FALSE(options->priority_classes[2].preemptible);
  CHECK(options->plugin_dirs == std::vector<std::string>{"/usr/local/lib/tessera/plugins"});
  CHECK(options->elastic.scale_out_after == std::chrono::seconds(120));
  CHECK(options->elastic.budget_per_day == std::optional<double>(500));
  CHECK_FALSE(options->elastic.budget_per_hour.has_value());
  CHECK_FALSE(options->elastic.max_spot_price_per_hour.has_value());
  // The example spells out the default cluster.
  REQUIRE(options->simulated_cluster.has_value());
  CHECK(options->simulated_cluster->SerializeAsString() ==
        DefaultSimulatedCluster().SerializeAsString());
}

TEST_CASE("daemon config: store.check_at_open maps onto StoreOptions::check_at_open") {
  const std::pair<const char*, StoreCheck> cases[] = {{"STORE_CHECK_NONE", StoreCheck::kNone},
                                                      {"STORE_CHECK_QUICK", StoreCheck::kQuick},
                                                      {"STORE_CHECK_FULL", StoreCheck::kFull}};
  for (const auto& c : cases) {
    // Not a structured binding: clang (the sanitizer builds) cannot capture one in CAPTURE.
    const char* name = c.first;
    const StoreCheck level = c.second;
    CAPTURE(name);
    StatusOr<v1::DaemonConfig> config =
        LoadYaml(std::string("store: {check_at_open: ") + name + "}\n");
    REQUIRE_MESSAGE(config.ok(), config.status().ToString());
    StatusOr<Options> options = ToOptions(*config);
    REQUIRE(options.ok());
    CHECK(options->store.check_at_open == level);
  }
}

TEST_CASE("daemon config: an executor plugin maps onto PluginOptions") {
  StatusOr<v1::DaemonConfig> config = LoadYaml(R"(
executor_plugin:
  plugin: local
  config: "devices: all"
  call_deadline_ms: 250
  isolate: true
plugin_dirs: [/opt/plugins]
)");
  REQUIRE_MESSAGE(config.ok(), config.status().message());
  CHECK_FALSE(config->has_simulated_cluster());  // the plugin reports the nodes.
  StatusOr<Options> options = ToOptions(*config);
  REQUIRE(options.ok());
  REQUIRE(options->executor_plugin.has_value());
  CHECK(options->executor_plugin->plugin == "local");
  CHECK(options->executor_plugin->config == "devices: all");
  CHECK(options->executor_plugin->call_deadline == std::chrono::milliseconds(250));
  CHECK(options->executor_plugin->poll_interval == std::chrono::milliseconds(100));
  CHECK(options->executor_plugin->isolate);
  CHECK(options->executor_plugin->max_restarts_per_minute == 3);
  CHECK_FALSE(options->simulated_cluster.has_value());
}

TEST_CASE("daemon config: backends map onto BackendOptions, in order, with plugin defaults") {
  StatusOr<v1::DaemonConfig> config = LoadYaml(R"(
backends:
  - name: cluster
    plugin: sim
    config: "{}"
  - name: here
    plugin: local
    isolate: true
    partitions: [cluster]
    launch_deadline_ms: 30000
    stop_deadline_ms: 15000
    resize_deadline_ms: 1000
    partition_deadline_ms: 60000
    read_deadline_ms: 2000
    provision_deadline_ms: 900000
)");
  REQUIRE_MESSAGE(config.ok(), config.status().message());
  CHECK_FALSE(config->has_simulated_cluster());  // the backends report the nodes.
  StatusOr<Options> options = ToOptions(*config);
  REQUIRE(options.ok());
  CHECK_FALSE(options->executor_plugin.has_value());
  REQUIRE(options->backends.size() == 2);
  CHECK(options->backends[0].name == "cluster");
  CHECK(options->backends[0].plugin.plugin == "sim");
  CHECK(options->backends[0].plugin.config == "{}");
  CHECK(options->backends[0].plugin.call_deadline == std::chrono::milliseconds(5000));
  // Each kind of call has a deadline of its own; zero (unset) is call_deadline's.
  CHECK(options->backends[0].plugin.launch_deadline == std::chrono::milliseconds(0));
  CHECK(options->backends[0].plugin.provision_deadline == std::chrono::minutes(10));
  CHECK(options->backends[1].plugin.launch_deadline == std::chrono::milliseconds(30000));
  CHECK(options->backends[1].plugin.stop_deadline == std::chrono::milliseconds(15000));
  CHECK(options->backends[1].plugin.resize_deadline == std::chrono::milliseconds(1000));
  CHECK(options->backends[1].plugin.partition_deadline == std::chrono::milliseconds(60000));
  CHECK(options->backends[1].plugin.read_deadline == std::chrono::milliseconds(2000));
  CHECK(options->backends[1].plugin.provision_deadline == std::chrono::milliseconds(900000));
  CHECK(options->backends[1].name == "here");
  CHECK(options->backends[1].plugin.isolate);
  CHECK(options->backends[1].plugin.max_restarts_per_minute == 3);
  CHECK(options->backends[1].partitions == std::vector<std::string>{"cluster"});
  // A named executor_plugin is a set of one with that name.
  StatusOr<v1::DaemonConfig> named = LoadYaml("executor_plugin: {plugin: sim, name: gpus}\n");
  REQUIRE(named.ok());
  StatusOr<Options> one = ToOptions(*named);
  REQUIRE(one.ok());
  CHECK_FALSE(one->executor_plugin.has_value());
  REQUIRE(one->backends.size() == 1);
  CHECK(one->backends[0].name == "gpus");
}

TEST_CASE("daemon config: elastic maps onto ElasticOptions; unset limits stay unset") {
  StatusOr<v1::DaemonConfig> config = LoadYaml(R"(
elastic:
  enabled: false
  scale_out_after_s: 1
  scale_in_after_s: 5
  max_nodes: 3
  max_requests_per_minute: 20
  max_spot_price_per_hour: 2.5
  group_backoff_s: 0
  metering_interval_s: 1
  budget_per_hour: 10
  budget_per_day: 0
  budget_per_month: 1000.5
)");
  REQUIRE_MESSAGE(config.ok(), config.status().message());
  StatusOr<Options> options = ToOptions(*config);
  REQUIRE(options.ok());
  const ElasticOptions& e = options->elastic;
  CHECK_FALSE(e.enabled);
  CHECK(e.scale_out_after == std::chrono::seconds(1));
  CHECK(e.scale_in_after == std::chrono::seconds(5));
  CHECK(e.max_nodes == 3);
  CHECK(e.max_requests_per_minute == 20);
  CHECK(e.max_spot_price_per_hour == std::optional<double>(2.5));
  CHECK(e.group_backoff == std::chrono::seconds(0));  // an explicit zero is kept.
  CHECK(e.metering_interval == std::chrono::seconds(1));
  CHECK(e.budget_per_hour == std::optional<double>(10));
  CHECK(e.budget_per_day == std::optional<double>(0));  // 0 is no burst at all, not "unset".
  CHECK(e.budget_per_month == std::optional<double>(1000.5));

  // A section naming one key keeps the library's value for every other one.
  StatusOr<v1::DaemonConfig> partial = LoadYaml("elastic: {budget_per_day: 50}\n");
  REQUIRE(partial.ok());
  StatusOr<Options> mapped = ToOptions(*partial);
  REQUIRE(mapped.ok());
  const ElasticOptions library;
  CHECK(mapped->elastic.budget_per_day == std::optional<double>(50));
  CHECK_FALSE(mapped->elastic.budget_per_hour.has_value());
  CHECK_FALSE(mapped->elastic.budget_per_month.has_value());
  CHECK_FALSE(mapped->elastic.max_spot_price_per_hour.has_value());
  CHECK(mapped->elastic.enabled);
  CHECK(mapped->elastic.scale_out_after == library.scale_out_after);
  CHECK(mapped->elastic.max_nodes == library.max_nodes);
  CHECK(mapped->elastic.metering_interval == library.metering_interval);
}

// docs/cloud-burst.md walks through this file with the real binaries; it must stay loadable.
TEST_CASE("daemon config: docs/examples/cloud-burst-sim.yaml loads with its elastic times") {
  StatusOr<v1::DaemonConfig> config = LoadDaemonConfig(std::string(TESSERA_EXAMPLES_DIR) +
                                                       "/../docs/examples/cloud-burst-sim.yaml");
  REQUIRE_MESSAGE(config.ok(), config.status().message());
  StatusOr<Options> options = ToOptions(*config);
  REQUIRE(options.ok());
  CHECK(options->elastic.scale_out_after == std::chrono::seconds(1));
  CHECK(options->elastic.scale_in_after == std::chrono::seconds(5));
  CHECK(options->elastic.metering_interval == std::chrono::seconds(1));
  REQUIRE(options->backends.size() == 1);
  CHECK(options->backends[0].plugin.plugin == "sim");
  REQUIRE(config->queues_size() == 1);
  CHECK(config->queues(0).burst_budget().per_hour() == 0.25);
}

TEST_CASE("daemon config: a declared queue's burst_budget is read, and a bad one named") {
  StatusOr<v1::DaemonConfig> config = LoadYaml(
      "queues:\n"
      "  - {name: team, burst_budget: {per_hour: 2.5, per_month: 0}}\n");
  REQUIRE_MESSAGE(config.ok(), config.status().message());
  REQUIRE(config->queues_size() == 1);
  const v1::BurstBudget& budget = config->queues(0).burst_budget();
  CHECK(budget.per_hour() == 2.5);
  CHECK_FALSE(budget.has_per_day());
  CHECK(budget.has_per_month());
  CHECK(budget.per_month() == 0);
  CHECK(Refusal("queues: [{name: a, burst_budget: {per_hour: -1}}]") ==
        "queues[0].burst_budget.per_hour: must be a finite number >= 0, got -1.000000");
  CHECK(Refusal("queues: [{name: a}, {name: b, burst_budget: {per_day: -0.5}}]") ==
        "queues[1].burst_budget.per_day: must be a finite number >= 0, got -0.500000");
  // YAML refuses a number that is not finite; a config built in code is checked too.
  v1::DaemonConfig built;
  built.add_queues()->set_name("a");
  built.mutable_queues(0)->mutable_burst_budget()->set_per_month(INFINITY);
  CHECK(ValidateDaemonConfig(built).message() ==
        "queues[0].burst_budget.per_month: must be a finite number >= 0, got inf");
  CHECK(Refusal("queues: [{name: a, burst_budget: {per_hour: 1, per_daily: 2}}]")
            .find("burst_budget.per_daily: unknown field") != std::string::npos);
}

TEST_CASE("daemon config: unknown keys and wrong types name the file, line and field") {
  StatusOr<v1::DaemonConfig> unknown = LoadYaml("store:\n  path: a.db\n  max_bacth: 10\n");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().code() == StatusCode::kInvalidArgument);
  const std::string& m = unknown.status().message();
  CHECK(m.find("tessera-daemon-config-test.yaml:3:3: store.max_bacth: unknown field (known "
               "fields: path, durable, max_batch,") != std::string::npos);

  StatusOr<v1::DaemonConfig> wrong = LoadYaml("server:\n  max_request_bytes: lots\n");
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message().find(
            ":2:22: server.max_request_bytes: expected an integer, got 'lots'") !=
        std::string::npos);

  CHECK(Refusal("placement: {strategy: FASTEST}\n")
            .rfind("parse: test.yaml:1:23: placement.strategy: unknown value 'FASTEST'", 0) == 0);
  CHECK(Refusal("auth: {tokens: {admin: true}}\n") ==
        "parse: test.yaml:1:16: auth.tokens: expected a list");
  CHECK(LoadDaemonConfig("/nonexistent/tesserad.yaml").status().code() == StatusCode::kNotFound);
}

TEST_CASE("daemon config: bad values are refused naming the field") {
  CHECK(Refusal("") == "ok");
  CHECK(Refusal("store: {path: ''}") == "store.path: must not be empty");
  CHECK(Refusal("store: {max_batch: 0}") == "store.max_batch: must be > 0, got 0");
  CHECK(Refusal("store: {max_size_mib: -1}") == "store.max_size_mib: must be >= 0, got -1");
  CHECK(Refusal("store: {busy_timeout_ms: -5}") == "store.busy_timeout_ms: must be >= 0, got -5");
  CHECK(Refusal("store: {retention: {finished_job_ttl_s: -1}}") ==
        "store.retention.finished_job_ttl_s: must be >= 0, got -1");
  CHECK(Refusal("store: {retention: {max_finished_jobs: -1}}") ==
        "store.retention.max_finished_jobs: must be >= 0, got -1");
  CHECK(Refusal("store: {retention: {sweep_interval_ms: 0}}") ==
        "store.retention.sweep_interval_ms: must be > 0, got 0");
  CHECK(Refusal("store: {retention: {sweep_batch: 0}}") ==
        "store.retention.sweep_batch: must be in 1..100000, got 0");
  CHECK(Refusal("engine: {decision_slice_us: 0}") ==
        "engine.decision_slice_us: must be > 0, got 0");
  CHECK(Refusal("engine: {max_attempts: 0}") == "engine.max_attempts: must be > 0, got 0");
  CHECK(Refusal("engine: {store_retry_ms: 0}") == "engine.store_retry_ms: must be > 0, got 0");
  CHECK(Refusal("engine: {max_reservations: -1}") ==
        "engine.max_reservations: must be >= 0, got -1");
  CHECK(Refusal("engine: {default_runtime_estimate_s: 0}") ==
        "engine.default_runtime_estimate_s: must be > 0, got 0");
  CHECK(Refusal("fair_share: {usage_half_life_s: -1}") ==
        "fair_share.usage_half_life_s: must be >= 0, got -1");
  CHECK(Refusal("fair_share: {usage_refresh_ms: 0}") ==
        "fair_share.usage_refresh_ms: must be > 0, got 0");
  CHECK(Refusal("fair_share: {gpu_model_weights: {T4: 0}}") ==
        "fair_share.gpu_model_weights[T4]: must be a number in [0.001, 1000], got 0.000000");
  CHECK(Refusal("fair_share: {gpu_model_weights: {H100-80GB: 5000}}") ==
        "fair_share.gpu_model_weights[H100-80GB]: must be a number in [0.001, 1000], got "
        "5000.000000");
  CHECK(Refusal("placement: {expected_tasks: [{gpu_count: 1, gpu_milli: 1500}]}") ==
        "placement.expected_tasks[0].gpu_milli: must be in 1..1000, got 1500");
  CHECK(Refusal("placement: {expected_tasks: [{gpu_count: -1}]}") ==
        "placement.expected_tasks[0].gpu_count: must be >= 0, got -1");
  CHECK(Refusal("placement: {expected_tasks: [{gpu_count: 1, count: 0}]}") ==
        "placement.expected_tasks[0].count: must be > 0");
  CHECK(Refusal("placement: {expected_coverage: 1.5}") ==
        "placement.expected_coverage: must be in (0, 1]");
  CHECK(Refusal("placement: {max_candidates: -1}") ==
        "placement.max_candidates: must be >= 0, got -1");
  CHECK(Refusal("preemption: {min_runtime_s: -1}") ==
        "preemption.min_runtime_s: must be >= 0, got -1");
  CHECK(Refusal("preemption: {cooldown_s: -1}") == "preemption.cooldown_s: must be >= 0, got -1");
  CHECK(Refusal("preemption: {max_per_minute: -1}") ==
        "preemption.max_per_minute: must be >= 0, got -1");
  CHECK(Refusal("gpu_health: {max_temperature_c: 70}")
            .rfind("gpu_health.resume_temperature_c: must be <= gpu_health.max_temperature_c", 0) ==
        0);
  CHECK(Refusal("elastic: {scale_out_after_s: -1}") ==
        "elastic.scale_out_after_s: must be >= 0, got -1");
  CHECK(Refusal("elastic: {scale_in_after_s: -1}") ==
        "elastic.scale_in_after_s: must be >= 0, got -1");
  CHECK(Refusal("elastic: {max_nodes: 0}") == "elastic.max_nodes: must be > 0, got 0");
  CHECK(Refusal("elastic: {max_requests_per_minute: 0}") ==
        "elastic.max_requests_per_minute: must be > 0, got 0");
  CHECK(Refusal("elastic: {max_spot_price_per_hour: -0.1}") ==
        "elastic.max_spot_price_per_hour: must be a finite number >= 0, got -0.1");
  CHECK(Refusal("elastic: {group_backoff_s: -1}") ==
        "elastic.group_backoff_s: must be >= 0, got -1");
  CHECK(Refusal("elastic: {metering_interval_s: 0}") ==
        "elastic.metering_interval_s: must be > 0, got 0");
  CHECK(Refusal("elastic: {budget_per_hour: -1}") ==
        "elastic.budget_per_hour: must be a finite number >= 0, got -1");
  CHECK(Refusal("elastic: {budget_per_day: -2}") ==
        "elastic.budget_per_day: must be a finite number >= 0, got -2");
  CHECK(Refusal("elastic: {budget_per_month: -3}") ==
        "elastic.budget_per_month: must be a finite number >= 0, got -3");
  CHECK(Refusal("elastic: {max_nodes: 1, enabled: true, metering_interval_s: 1}") == "ok");
  v1::DaemonConfig not_finite;  // YAML has no way to write one; code has.
  not_finite.mutable_elastic()->set_budget_per_month(NAN);
  CHECK(ValidateDaemonConfig(not_finite).message() ==
        "elastic.budget_per_month: must be a finite number >= 0, got nan");
  not_finite.mutable_elastic()->clear_budget_per_month();
  not_finite.mutable_elastic()->set_max_spot_price_per_hour(INFINITY);
  CHECK(ValidateDaemonConfig(not_finite).message() ==
        "elastic.max_spot_price_per_hour: must be a finite number >= 0, got inf");
  CHECK(Refusal("priority_classes: [{name: a}, {name: a}]\ndefault_priority_class: a") ==
        "priority_classes[1].name: duplicate class 'a'");
  CHECK(Refusal("priority_classes: [{name: batch}]") ==
        "default_priority_class: 'normal' is not among priority_classes");
  CHECK(Refusal("default_queue: '/bad//queue'").rfind("default_queue: ", 0) == 0);
  CHECK(Refusal("simulated_cluster: {groups: [{name_prefix: a, count: 1}]}\n"
                "simulated_cluster_file: c.yaml") ==
        "simulated_cluster_file: set together with simulated_cluster; keep one");
  CHECK(Refusal("simulated_cluster: {groups: [{name_prefix: a, count: -1}]}")
            .rfind("simulated_cluster: ", 0) == 0);
  CHECK(Refusal("executor_plugin: {config: x}") == "executor_plugin.plugin: must not be empty");
  CHECK(Refusal("executor_plugin: {plugin: sim, call_deadline_ms: 0}") ==
        "executor_plugin.call_deadline_ms: must be > 0, got 0");
  CHECK(Refusal("executor_plugin: {plugin: sim, poll_interval_ms: 0}") ==
        "executor_plugin.poll_interval_ms: must be > 0, got 0");
  CHECK(Refusal("executor_plugin: {plugin: sim, max_restarts_per_minute: -1}") ==
        "executor_plugin.max_restarts_per_minute: must be >= 0, got -1");
  CHECK(Refusal("executor_plugin: {plugin: sim}\nsimulated_cluster: {groups: []}") ==
        "simulated_cluster: not used when executor_plugin is set; remove one");
  CHECK(Refusal("plugin_dirs: ['']") == "plugin_dirs[0]: must not be empty");
  CHECK(Refusal("backends: [{plugin: sim, name: a}, {plugin: local, name: a}]") ==
        "backends[1].name: 'a' names another backend too");
  CHECK(Refusal("backends: [{plugin: sim}, {config: x}]") ==
        "backends[1].plugin: must not be empty");
  CHECK(Refusal("backends: [{plugin: sim, partitions: ['']}]") ==
        "backends[0].partitions[0]: must not be empty");
  CHECK(Refusal("backends: [{plugin: sim, call_deadline_ms: 0}]") ==
        "backends[0].call_deadline_ms: must be > 0, got 0");
  for (const char* kind : {"launch", "stop", "resize", "partition", "read"}) {
    CHECK(Refusal(std::string("backends: [{plugin: sim, ") + kind + "_deadline_ms: -1}]") ==
          std::string("backends[0].") + kind + "_deadline_ms: must be >= 0, got -1");
  }
  CHECK(Refusal("backends: [{plugin: sim, provision_deadline_ms: 0}]") ==
        "backends[0].provision_deadline_ms: must be > 0, got 0");
  CHECK(Refusal("backends: [{plugin: sim}]\nexecutor_plugin: {plugin: local}") ==
        "executor_plugin: set together with backends; list it there instead");
  CHECK(Refusal("executor_plugin: {plugin: sim, partitions: [x]}") ==
        "executor_plugin.partitions: needs other backends: list them in backends");
  CHECK(Refusal("backends: [{plugin: sim}]\nsimulated_cluster: {groups: []}") ==
        "simulated_cluster: not used when backends is set; remove one");
}

TEST_CASE("daemon config: server and auth values") {
  CHECK(Refusal("server: {listen: x}") == "server.listen: 'x' is not host:port");
  CHECK(Refusal("server: {listen: ':80'}") == "server.listen: ':80' is not host:port");
  CHECK(Refusal("server: {listen: '::1:80'}") == "server.listen: '::1:80' is not host:port");
  CHECK(Refusal("server: {listen: 'localhost:http'}") ==
        "server.listen: 'localhost:http': port must be 0..65535");
  CHECK(Refusal("server: {listen: 'localhost:70000'}") ==
        "server.listen: 'localhost:70000': port must be 0..65535");
  CHECK(Refusal("server: {listen: '[::1]:8080'}") == "ok");
  CHECK(Refusal("server: {listen: 'localhost:0'}") == "ok");
  CHECK(Refusal("server: {tls_cert_file: c.pem}") ==
        "server.tls_key_file: must be set together with server.tls_cert_file");
  CHECK(Refusal("server: {tls_key_file: k.pem}") ==
        "server.tls_cert_file: must be set together with server.tls_key_file");
  CHECK(Refusal("server: {max_request_bytes: 0}") ==
        "server.max_request_bytes: must be > 0, got 0");
  CHECK(Refusal("server: {request_timeout_ms: 0}") ==
        "server.request_timeout_ms: must be > 0, got 0");
  CHECK(Refusal("server: {max_connections: 0}") == "server.max_connections: must be > 0, got 0");
  CHECK(Refusal("server: {max_long_polls_per_token: 0}") ==
        "server.max_long_polls_per_token: must be > 0, got 0");
  CHECK(Refusal("server: {max_header_bytes: 0}") == "server.max_header_bytes: must be > 0, got 0");
  CHECK(Refusal("server: {answer_timeout_ms: 0}") ==
        "server.answer_timeout_ms: must be > 0, got 0");
  CHECK(Refusal("server: {listen: '0.0.0.0:8080'}") ==
        "auth.tokens: required when server.listen (0.0.0.0:8080) is not loopback");

  const std::string hash(64, 'a');
  CHECK(Refusal("auth: {tokens: [{sha256: abc, admin: true}]}") ==
        "auth.tokens[0].sha256: must be 64 hex digits");
  CHECK(Refusal("auth: {tokens: [{sha256: " + std::string(64, 'g') + ", admin: true}]}") ==
        "auth.tokens[0].sha256: must be 64 hex digits");
  CHECK(Refusal("auth: {tokens: [{sha256: " + hash +
                ", admin: true}, {sha256: " + std::string(64, 'A') + ", admin: true}]}") ==
        "auth.tokens[1].sha256: duplicate token hash");
  CHECK(Refusal("auth: {tokens: [{sha256: " + hash + "}]}") ==
        "auth.tokens[0].queue_prefix: set exactly one of queue_prefix and admin");
  CHECK(Refusal("auth: {tokens: [{sha256: " + hash + ", admin: true, queue_prefix: a}]}") ==
        "auth.tokens[0].queue_prefix: set exactly one of queue_prefix and admin");
  CHECK(Refusal("auth: {tokens: [{sha256: " + hash + ", queue_prefix: 'a//b'}]}")
            .rfind("auth.tokens[0].queue_prefix: ", 0) == 0);
  CHECK(Refusal("server: {listen: '0.0.0.0:8080'}\nauth: {tokens: [{sha256: " + hash +
                ", queue_prefix: team}]}") == "ok");
  CHECK(Refusal("auth: {tokens: [{sha256: " + hash +
                ", queue_prefix: team, priority_classes: [low, vip]}]}") ==
        "auth.tokens[0].priority_classes[1]: 'vip' is not among priority_classes");
  CHECK(Refusal("auth: {tokens: [{sha256: " + hash + ", admin: true, priority_classes: [low]}]}") ==
        "auth.tokens[0].priority_classes: not allowed with admin (it may use every class)");
  CHECK(Refusal("auth: {tokens: [{sha256: " + hash +
                ", queue_prefix: team, priority_classes: [high]}]}") == "ok");
}

TEST_CASE("daemon config: tenant limits") {
  auto defaults = LoadDaemonConfig("");
  REQUIRE(defaults.ok());
  CHECK(defaults->limits().max_command_bytes() == 65536);
  CHECK(defaults->limits().max_env_bytes() == 65536);
  CHECK(defaults->limits().max_spec_bytes() == 262144);
  CHECK(defaults->limits().submits_per_second() == 0);
  CHECK(defaults->limits().submit_burst() == 1);
  auto set = LoadYaml("limits: {max_command_bytes: 100, submits_per_second: 2.5}\n");
  REQUIRE(set.ok());
  CHECK(set->limits().submit_burst() == 3);
  auto options = ToOptions(*set);
  REQUIRE(options.ok());
  CHECK(options->job_size_limits.max_command_bytes == 100);
  CHECK(options->job_size_limits.max_env_bytes == 65536);
  CHECK(Refusal("limits: {max_command_bytes: 0}") ==
        "limits.max_command_bytes: must be > 0, got 0");
  CHECK(Refusal("limits: {max_spec_bytes: -1}") == "limits.max_spec_bytes: must be > 0, got -1");
  CHECK(Refusal("limits: {submits_per_second: -1}") ==
        "limits.submits_per_second: must be a finite number >= 0");
  CHECK(Refusal("limits: {submit_burst: 0}") == "limits.submit_burst: must be > 0, got 0");
  CHECK(Refusal("limits: {max_pending_jobs_per_queue: -1}") ==
        "limits.max_pending_jobs_per_queue: must be >= 0, got -1");
  CHECK(defaults->limits().max_pending_jobs_per_queue() == 0);
  auto pending = LoadYaml("limits: {max_pending_jobs_per_queue: 500}\n");
  REQUIRE(pending.ok());
  CHECK(ToOptions(*pending)->max_pending_jobs_per_queue == 500);
}

TEST_CASE("daemon config: alert thresholds") {
  CHECK(Refusal("alerts: {check_interval_ms: 0}") ==
        "alerts.check_interval_ms: must be > 0, got 0");
  CHECK(Refusal("alerts: {gpu_temperature_c: 0}") == "alerts.gpu_temperature_c: must be > 0");
  CHECK(Refusal("alerts: {gpu_memory_used_pct: 101}") ==
        "alerts.gpu_memory_used_pct: must be in (0, 100]");
  CHECK(Refusal("alerts: {queue_pending_jobs: -1}") ==
        "alerts.queue_pending_jobs: must be >= 0, got -1");
  CHECK(Refusal("alerts: {commit_latency_p99_us: -5}") ==
        "alerts.commit_latency_p99_us: must be >= 0, got -5");
  CHECK(Refusal("alerts: {queue_pending_jobs: 10, decision_latency_p99_us: 500}") == "ok");

  // The hot-GPU alert follows gpu_health unless set.
  StatusOr<v1::DaemonConfig> config = LoadDaemonConfig("");
  REQUIRE(config.ok());
  CHECK(config->alerts().gpu_temperature_c() == config->gpu_health().max_temperature_c());
  CHECK(config->alerts().check_interval_ms() == 10000);
  StatusOr<v1::DaemonConfig> example = LoadDaemonConfig(ExamplePath());
  REQUIRE(example.ok());
  CHECK(example->alerts().queue_pending_jobs() == 500);
}

TEST_CASE("daemon config: listen addresses") {
  StatusOr<ListenAddress> v6 = ParseListenAddress("[::1]:9000");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->port == 9000);
  CHECK(IsLoopbackHost("127.0.0.2"));
  CHECK(IsLoopbackHost("localhost"));
  CHECK_FALSE(IsLoopbackHost("10.0.0.1"));
  CHECK_FALSE(IsLoopbackHost("127.evil.example.com"));
}

}  // namespace
}  // namespace tessera
