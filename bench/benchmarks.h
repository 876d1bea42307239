// The benchmarks tessera-bench runs: their parameters (filled from flags by main.cc) and entry
// points. Each entry point prints its result lines itself and returns the process exit code.
#pragma once

#include <cstdint>
#include <string>

#include "bench_util.h"

namespace tessera::bench {

// decide: placement throughput on a synthetic mixed-GPU cluster (decide_bench.cc).
struct DecideFlags {
  CommonFlags common;
  int nodes = 1000;
  int jobs = 10000;
  int queues = 100;
  int submit_window = 512;  // SubmitAsync calls kept in flight while loading the jobs.
};
int RunDecide(const DecideFlags& flags);

// submit: acknowledged submissions per second through the public API (submit_bench.cc).
struct SubmitFlags {
  CommonFlags common;
  int jobs = 100000;
  int clients = 8;
  int window = 1;
  std::string http;  // daemon URL; the daemon does not exist yet.
  bool durable = true;
  std::string decisions = "off";
};
int RunSubmit(const SubmitFlags& flags);

// recover: cost of reopening a big store (recover_bench.cc). The measurement runs in a child
// process (RunRecoverMeasure) so the generator's memory does not count.
struct RecoverFlags {
  CommonFlags common;
  int64_t live = 100000;
  int64_t finished = 1000000;
  int nodes = 100;  // simulated nodes (8 GPUs each) the reopened scheduler places onto.
};
int RunRecover(const RecoverFlags& flags);

struct RecoverMeasureFlags {
  std::string store;
  int nodes = 100;
  uint64_t after_seq = 0;  // last event seq of the generated store; later events are new.
};
int RunRecoverMeasure(const RecoverMeasureFlags& flags);

}  // namespace tessera::bench
