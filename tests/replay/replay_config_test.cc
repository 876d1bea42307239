// tessera-replay's configuration (replay/replay_config.h): the tesserad YAML, --cluster, and
// every documented --set error.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "replay_config.h"
#include "support/temp_dir.h"

namespace tessera::replay {
namespace {

std::string Write(const testing::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.File(name);
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("--set: numbers, booleans, enums and strings by their YAML path") {
  v1::DaemonConfig config;
  REQUIRE(ApplySetting("fair_share.usage_half_life_s=3600", &config).ok());
  CHECK(config.fair_share().usage_half_life_s() == 3600);
  REQUIRE(ApplySetting("preemption.enabled=false", &config).ok());
  CHECK(config.preemption().has_enabled());
  CHECK_FALSE(config.preemption().enabled());
  REQUIRE(ApplySetting("placement.strategy=best-fit", &config).ok());
  CHECK(config.placement().strategy() == v1::BEST_FIT);
  REQUIRE(ApplySetting("placement.strategy=BINPACK", &config).ok());
  CHECK(config.placement().strategy() == v1::BINPACK);
  REQUIRE(ApplySetting("placement.expected_coverage=0.9", &config).ok());
  CHECK(config.placement().expected_coverage() == doctest::Approx(0.9));
  REQUIRE(ApplySetting("default_priority_class=low", &config).ok());
  CHECK(config.default_priority_class() == "low");

  v1::QueueSpec* queue = config.add_queues();
  queue->set_name("research/vision");
  queue->set_weight(1);
  REQUIRE(ApplySetting("queues[research/vision].weight=2.5", &config).ok());
  CHECK(config.queues(0).weight() == doctest::Approx(2.5));
}

TEST_CASE("--set errors name the key and say what is wrong") {
  v1::DaemonConfig config;
  auto error = [&](const std::string& kv) {
    Status s = ApplySetting(kv, &config);
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == StatusCode::kInvalidArgument);
    return s.message();
  };
  std::string m = error("fair_share.half_life=10");
  CHECK(m.find("--set fair_share.half_life") != std::string::npos);
  CHECK(m.find("unknown field 'half_life'") != std::string::npos);
  CHECK(m.find("usage_half_life_s") != std::string::npos);  // lists what exists
  CHECK(error("fairshare.usage_half_life_s=1").find("unknown field 'fairshare'") !=
        std::string::npos);
  CHECK(error("preemption.enabled=maybe").find("not a boolean") != std::string::npos);
  CHECK(error("engine.max_attempts=lots").find("not a number") != std::string::npos);
  CHECK(error("engine.max_attempts=1.5").find("not a whole number") != std::string::npos);
  CHECK(error("engine.max_attempts=99999999999").find("32-bit") != std::string::npos);
  CHECK(error("placement.strategy=magic").find("BEST_FIT") != std::string::npos);
  CHECK(error("preemption=1").find("is a section") != std::string::npos);
  CHECK(error("gpu_health.fatal_xids=1").find("is a list") != std::string::npos);
  CHECK(error("queues[nope].weight=2").find("no entry named 'nope'") != std::string::npos);
  CHECK(error("store.path.x=1").find("is a value") != std::string::npos);
  CHECK(error("no_equals_sign").find("expected key=value") != std::string::npos);
}

TEST_CASE("a config that runs plugin backends is refused unless --cluster replaces them") {
  testing::TempDir dir;
  for (const char* backends :
       {"executor_plugin: {plugin: local}\n", "backends:\n  - {plugin: local, name: here}\n"}) {
    INFO(backends);
    ReplayConfigRequest request;
    request.config_path = Write(dir, "tesserad.yaml", backends);
    StatusOr<ReplayConfig> refused = LoadReplayConfig(request);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("'local'") != std::string::npos);
    CHECK(refused.status().message().find("give its cluster with --cluster") != std::string::npos);
    request.cluster_path =
        Write(dir, "cluster.yaml", "groups:\n  - {name_prefix: n, count: 1, cpu_milli: 8000}\n");
    StatusOr<ReplayConfig> replaced = LoadReplayConfig(request);
    REQUIRE_MESSAGE(replaced.ok(), replaced.status().ToString());
    CHECK(replaced->options.backends.empty());
    CHECK_FALSE(replaced->options.executor_plugin.has_value());
  }
}

TEST_CASE("the config file means what it means to tesserad; the store is in memory") {
  testing::TempDir dir;
  const std::string path =
      Write(dir, "tesserad.yaml",
            "store:\n  path: /nonexistent/dir/tessera.db\n"
            "fair_share:\n  usage_half_life_s: 600\n"
            "preemption:\n  enabled: false\n"
            "simulated_cluster:\n  groups:\n"
            "    - {name_prefix: n, count: 3, cpu_milli: 8000, memory_mib: 16384, gpus: 2,"
            " gpu_model: T4, gpu_memory_mib: 16384}\n"
            "queues:\n  - {name: a, weight: 2}\n");
  ReplayConfigRequest request;
  request.config_path = path;
  request.sets = {"fair_share.usage_half_life_s=1200"};
  StatusOr<ReplayConfig> config = LoadReplayConfig(request);
  REQUIRE(config.ok());
  CHECK(config->options.store.path.empty());
  CHECK(config->options.fair_share.usage_half_life.count() == 1200);
  CHECK_FALSE(config->options.preemption.enabled);
  REQUIRE(config->options.simulated_cluster.has_value());
  CHECK(config->options.simulated_cluster->groups(0).count() == 3);
  CHECK(config->daemon.queues_size() == 1);

  // A --set whose value the config validation refuses names the field.
  request.sets = {"store.max_batch=0"};
  StatusOr<ReplayConfig> refused = LoadReplayConfig(request);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("store.max_batch") != std::string::npos);

  // --cluster replaces the config's cluster: an openb node list here.
  const std::string nodes = Write(
      dir, "nodes.csv",
      "sn,cpu_milli,memory_mib,gpu,model\nh1,96000,786432,8,V100M32\nh2,96000,786432,8,V100M32\n");
  request.sets.clear();
  request.cluster_path = nodes;
  StatusOr<ReplayConfig> replaced = LoadReplayConfig(request);
  REQUIRE(replaced.ok());
  REQUIRE(replaced->options.simulated_cluster.has_value());
  REQUIRE(replaced->options.simulated_cluster->groups_size() == 1);
  CHECK(replaced->options.simulated_cluster->groups(0).count() == 2);
  CHECK(replaced->options.simulated_cluster->groups(0).gpus() == 8);

  request.config_path = dir.File("missing.yaml");
  CHECK_FALSE(LoadReplayConfig(request).ok());
}

TEST_CASE("a replay: section routes every job to one queue; tesserad's part parses as before") {
  testing::TempDir dir;
  ReplayConfigRequest request;
  request.config_path = Write(dir, "fifo.yaml",
                              "# a baseline\n"
                              "replay:\n"
                              "  # every job in one queue\n"
                              "  one_queue: \"fifo\"  # quoted, with a comment\n"
                              "queues:\n"
                              "  - {name: fifo, queueing: STRICT_FIFO}\n"
                              "preemption:\n"
                              "  enabled: false\n");
  StatusOr<ReplayConfig> config = LoadReplayConfig(request);
  REQUIRE(config.ok());
  CHECK(config->one_queue == "fifo");
  CHECK_FALSE(config->options.preemption.enabled);
  REQUIRE(config->daemon.queues_size() == 1);
  CHECK(config->daemon.queues(0).queueing() == v1::STRICT_FIFO);

  // Without the section nothing is routed.
  request.config_path = Write(dir, "plain.yaml", "preemption:\n  enabled: false\n");
  config = LoadReplayConfig(request);
  REQUIRE(config.ok());
  CHECK(config->one_queue.empty());

  // The section's lines are blanked, so tesserad's errors keep their line numbers.
  StatusOr<ReplaySection> split =
      SplitReplaySection("replay:\n  one_queue: q\nstore:\n  max_bacth: 1\n", "c.yaml");
  REQUIRE(split.ok());
  CHECK(split->daemon_yaml == "\n\nstore:\n  max_bacth: 1\n");
  request.config_path =
      Write(dir, "typo.yaml", "replay:\n  one_queue: q\nstore:\n  max_bacth: 1\n");
  config = LoadReplayConfig(request);
  REQUIRE_FALSE(config.ok());
  CHECK(config.status().message().find("typo.yaml:4") != std::string::npos);
}

TEST_CASE("replay: section errors name the file, the line and the key") {
  auto error = [](const std::string& yaml) {
    StatusOr<ReplaySection> s = SplitReplaySection(yaml, "b.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == StatusCode::kInvalidArgument);
    return s.status().message();
  };
  CHECK(error("replay:\n  one_qeue: q\n") ==
        "b.yaml:2: replay.one_qeue: unknown field (known fields: one_queue)");
  CHECK(error("replay:\n  one_queue:\n") == "b.yaml:2: replay.one_queue: must name a queue");
  CHECK(error("engine: {}\nreplay: {one_queue: q}\n")
            .find("b.yaml:2: replay: write the section as a block") == 0);
}

}  // namespace
}  // namespace tessera::replay
