// tessera-bench: the benchmark suite's single program. This file only parses flags and picks
// the subcommand; each benchmark lives in its own file (see benchmarks.h).
//
//   tessera-bench decide --nodes 5000 --jobs 50000 --queues 100
//   tessera-bench submit --jobs 100000 --clients 8 --window 64
//   tessera-bench recover --live 100000 --finished 1000000
//
// Results: one JSON object per line on stdout; a short table and progress on stderr.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "benchmarks.h"

namespace tessera::bench {
namespace {

void AddCommonFlags(CLI::App* sub, CommonFlags* common) {
  sub->add_option("--repeat", common->repeat, "runs; numeric fields report their median")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--seed", common->seed, "seed of the workload generator")->capture_default_str();
}

int Main(int argc, char** argv) {
  CLI::App app{"Tessera benchmarks: one JSON result line per benchmark on stdout"};
  app.require_subcommand(1);

  DecideFlags decide;
  CLI::App* decide_cmd = app.add_subcommand(
      "decide", "placement throughput: J pending jobs onto N mixed-GPU nodes, Q queues");
  AddCommonFlags(decide_cmd, &decide.common);
  decide_cmd->add_option("--nodes", decide.nodes, "simulated nodes, 8 GPUs each")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  decide_cmd->add_option("--jobs", decide.jobs, "pending jobs to decide")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  decide_cmd->add_option("--queues", decide.queues, "leaf queues (3-level hierarchy)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  decide_cmd->add_option("--submit-window", decide.submit_window, "submits in flight while loading")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  SubmitFlags submit;
  CLI::App* submit_cmd =
      app.add_subcommand("submit", "acknowledged submits per second through the public API");
  AddCommonFlags(submit_cmd, &submit.common);
  submit_cmd->add_option("--jobs", submit.jobs, "jobs in total, split over the clients")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  submit_cmd->add_option("--clients", submit.clients, "client threads")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  submit_cmd
      ->add_option("--window", submit.window,
                   "submits each client keeps in flight (1: synchronous Submit)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  submit_cmd->add_option("--http", submit.http, "daemon URL (the HTTP API does not exist yet)");
  submit_cmd->add_option("--durable", submit.durable, "fsync each commit (true|false)")
      ->capture_default_str();
  submit_cmd->add_option("--decisions", submit.decisions, "let the engine place jobs meanwhile")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));

  RecoverFlags recover;
  CLI::App* recover_cmd =
      app.add_subcommand("recover", "reopen a store of F finished and L live jobs");
  AddCommonFlags(recover_cmd, &recover.common);
  recover_cmd->add_option("--live", recover.live, "pending jobs in the store")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  recover_cmd->add_option("--finished", recover.finished, "succeeded jobs in the store")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  recover_cmd->add_option("--nodes", recover.nodes, "simulated nodes (8 GPUs each) to place on")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  // The child half of `recover`; an empty group hides it from --help.
  RecoverMeasureFlags measure;
  CLI::App* measure_cmd =
      app.add_subcommand("recover-measure", "internal: open a store and time it")->group("");
  measure_cmd->add_option("--store", measure.store, "store file to open")->required();
  measure_cmd->add_option("--nodes", measure.nodes, "simulated nodes")->check(CLI::PositiveNumber);
  measure_cmd->add_option("--after-seq", measure.after_seq, "watch events after this seq");

  CLI11_PARSE(app, argc, argv);

  // The library logs at info by default; a benchmark's stderr is for its own table and progress.
  spdlog::set_level(spdlog::level::warn);

  if (decide_cmd->parsed()) return RunDecide(decide);
  if (submit_cmd->parsed()) return RunSubmit(submit);
  if (recover_cmd->parsed()) return RunRecover(recover);
  if (measure_cmd->parsed()) return RunRecoverMeasure(measure);
  return 1;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) {
  try {
    return tessera::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "tessera-bench: " << e.what() << '\n';
    return 1;
  }
}
