// A small executor plugin for the plugin host's tests, built with the SDK like any plugin: as a
// shared object (test_backend.cc) and, included by a test, in process (linked.h).
// Its config ("key=value" lines) makes it misbehave on purpose:
//   nodes=N              nodes to offer (default 1), each 8 GPUs "A100-80GB"
//   prefix=NAME          the nodes are named NAME-0, NAME-1, ... (default "test")
//   launch_delay_ms=MS   on_launch sleeps this long (a slow or hung plugin)
//   launch_error=1       on_launch fails with UNAVAILABLE
//   launch_error_job=J   on_launch of job J's first attempt fails with UNAVAILABLE (later
//                        attempts, and other jobs, run normally)
//   reject=1             on_init refuses the config
//   xid_gpu=G            the first on_telemetry reports XID 79 (fallen off the bus) on GPU G of
//                        node <prefix>-0
//   telemetry=1          every on_telemetry reports one reading (GPU 0 of <prefix>-0, 40 C)
//   crash_on_job=J       on_launch of job J's first attempt calls abort() (a crashing plugin;
//                        run it isolated). Later attempts, and other jobs, run normally.
//   leftover_job=J       task 0 of job J's attempt leftover_attempt (default 1) is running on
//                        <prefix>-0 at start, as tasks that outlived a host restart are, and
//                        on_reconcile lists it until it is stopped
//   stop_delay_ms=MS     a stopped task exits MS later on the host's clock, not at once
//   stop_errors=N        the first N on_stop calls fail with UNAVAILABLE (a backend API that is
//                        down for a while)
//   process_launch_errors=N  the first N on_launch calls in this process fail with UNAVAILABLE,
//                        whichever instance gets them (a new instance in process does not reset
//                        the count; a new process does)
//   mig=1                the GPUs are H100-80GB, MIG-managed, each one 7g.80gb instance
//   reject_with_devices=1  every launch is refused (LAUNCH_REJECTED, not retryable) with the
//                        devices it named in its message: "devices: <device_uuids>; mig: <uuid>
//                        gi <gpu instance> ci <compute instance>", so a test can read them in
//                        the job's reason
//   single_instance=NAME on_init fails while another instance configured with this NAME has not
//                        been shut down in this process, as a backend holding a device or reaping
//                        its children would
// Tasks start at once; a task with simulation.duration_ms ends that long later on the host's
// clock, reported by on_poll_events (like the sim backend).
#pragma once

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>

#include "tessera/plugin/plugin.h"

namespace tessera::testing {
namespace test_backend {

using tessera::plugin::PluginStatus;
namespace v1 = tessera::v1;

// State of the process, not of one instance: one copy in the test_backend plugin, and another in
// a test binary that includes this header to run TestBackend in process.
inline std::mutex process_mu;
// By single_instance NAME; guarded by process_mu.
inline std::map<std::string, int> instances_alive;
inline int process_launch_errors = -1;  // -1: not configured yet; guarded by process_mu.

class TestBackend : public tessera::plugin::Plugin {
 public:
  explicit TestBackend(tessera::plugin::Host host) : Plugin(host) {}
  ~TestBackend() override {
    std::lock_guard<std::mutex> lock(process_mu);
    if (!single_instance_.empty()) --instances_alive[single_instance_];
  }

  PluginStatus Init(const std::string& config) override {
    std::istringstream lines(config);
    std::string line;
    while (std::getline(lines, line)) {
      const size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = line.substr(0, eq);
      if (key == "prefix") {
        prefix_ = line.substr(eq + 1);
        continue;
      }
      if (key == "single_instance") {
        const std::string name = line.substr(eq + 1);
        std::lock_guard<std::mutex> lock(process_mu);
        if (instances_alive[name] > 0) {
          return PluginStatus::Error(
              TESSERA_FAILED_PRECONDITION,
              "single_instance: another instance named '" + name + "' is alive in this process");
        }
        ++instances_alive[name];
        single_instance_ = name;
        continue;
      }
      const long value = std::stol(line.substr(eq + 1));
      if (key == "nodes")
        nodes_ = static_cast<int>(value);
      else if (key == "launch_delay_ms")
        launch_delay_ms_ = value;
      else if (key == "launch_error")
        launch_error_ = value != 0;
      else if (key == "launch_error_job")
        launch_error_job_ = static_cast<uint64_t>(value);
      else if (key == "crash_on_job")
        crash_on_job_ = static_cast<uint64_t>(value);
      else if (key == "leftover_job")
        leftover_job_ = static_cast<uint64_t>(value);
      else if (key == "leftover_attempt")
        leftover_attempt_ = static_cast<int32_t>(value);
      else if (key == "stop_delay_ms")
        stop_delay_ms_ = value;
      else if (key == "mig")
        mig_ = value != 0;
      else if (key == "reject_with_devices")
        reject_with_devices_ = value != 0;
      else if (key == "stop_errors")
        stop_errors_ = static_cast<int>(value);
      else if (key == "process_launch_errors") {
        std::lock_guard<std::mutex> lock(process_mu);
        if (process_launch_errors < 0) process_launch_errors = static_cast<int>(value);
      } else if (key == "xid_gpu")
        xid_gpu_ = static_cast<int>(value);
      else if (key == "telemetry")
        telemetry_ = value != 0;
      else if (key == "reject")
        return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "reject: set");
      else
        return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, key + ": unknown key");
    }
    if (leftover_job_ != 0) {
      v1::TaskRef ref;
      ref.set_job(leftover_job_);
      ref.set_attempt(leftover_attempt_);
      tasks_[KeyOf(ref)] = Task{ref, 0, 0};
    }
    return PluginStatus::Ok();
  }

  PluginStatus Inventory(v1::Inventory* out) override {
    for (int n = 0; n < nodes_; ++n) {
      v1::NodeSpec* node = out->add_nodes();
      node->set_name(prefix_ + "-" + std::to_string(n));
      node->set_cpu_milli(64000);
      node->set_memory_mib(512 * 1024);
      for (int g = 0; g < 8; ++g) {
        v1::GpuDevice* gpu = node->add_gpus();
        gpu->set_index(g);
        gpu->set_model(mig_ ? "H100-80GB" : "A100-80GB");
        gpu->set_memory_mib(81920);
        gpu->set_healthy(true);
        if (mig_) {
          gpu->set_sharing(v1::GPU_SHARING_MIG);
          gpu->set_mig_managed(true);
          v1::MigInstance* whole = gpu->add_mig_instances();
          whole->set_profile("7g.80gb");
          whole->set_start(0);
        }
      }
    }
    return PluginStatus::Ok();
  }

  PluginStatus Launch(const v1::LaunchTask& request) override {
    if (reject_with_devices_) {
      std::string devices;
      for (const std::string& uuid : request.device_uuids()) {
        devices += (devices.empty() ? "" : ",") + uuid;
      }
      v1::BackendEvent rejected;
      rejected.set_kind(v1::BackendEvent::LAUNCH_REJECTED);
      *rejected.mutable_ref() = request.ref();
      rejected.set_retryable(false);
      rejected.set_message("devices: " + devices + "; mig: " + request.mig().uuid() + " gi " +
                           std::to_string(request.mig().gpu_instance_id()) + " ci " +
                           std::to_string(request.mig().compute_instance_id()));
      host().Emit(rejected);
      return PluginStatus::Ok();
    }
    if (launch_delay_ms_ > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(launch_delay_ms_));
    if (launch_error_) return PluginStatus::Error(TESSERA_UNAVAILABLE, "launch_error: set");
    {
      std::lock_guard<std::mutex> lock(process_mu);
      if (process_launch_errors > 0) {
        --process_launch_errors;
        return PluginStatus::Error(TESSERA_UNAVAILABLE, "process_launch_errors: not yet");
      }
    }
    if (launch_error_job_ != 0 && request.ref().job() == launch_error_job_ &&
        request.ref().attempt() == 1) {
      return PluginStatus::Error(TESSERA_UNAVAILABLE, "launch_error_job: this job's first attempt");
    }
    if (crash_on_job_ != 0 && request.ref().job() == crash_on_job_ &&
        request.ref().attempt() == 1) {
      std::abort();
    }
    std::lock_guard<std::mutex> lock(mu_);
    const Key key = KeyOf(request.ref());
    if (tasks_.count(key)) return PluginStatus::Ok();
    const int64_t now = host().NowUs();
    const int64_t duration = request.simulation().duration_ms();
    tasks_[key] = Task{request.ref(), duration > 0 ? now + duration * 1000 : 0,
                       request.simulation().exit_code()};
    v1::BackendEvent started;
    started.set_kind(v1::BackendEvent::TASK_STARTED);
    *started.mutable_ref() = request.ref();
    host().Emit(started);
    return PluginStatus::Ok();
  }

  PluginStatus Stop(const v1::StopTask& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_errors_ > 0) {
      --stop_errors_;
      return PluginStatus::Error(TESSERA_UNAVAILABLE, "stop_errors: the backend is down");
    }
    auto it = tasks_.find(KeyOf(request.ref()));
    if (it == tasks_.end()) return PluginStatus::Ok();
    if (stop_delay_ms_ > 0) {
      it->second.ends_us = host().NowUs() + stop_delay_ms_ * 1000;
      it->second.exit_code = 137;
      return PluginStatus::Ok();
    }
    Exit(it->second.ref, 143);
    tasks_.erase(it);
    return PluginStatus::Ok();
  }

  PluginStatus PollEvents(v1::BackendEvents* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = host().NowUs();
    int64_t next = 0;
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      if (it->second.ends_us > 0 && it->second.ends_us <= now) {
        Exit(it->second.ref, it->second.exit_code);
        it = tasks_.erase(it);
        continue;
      }
      if (it->second.ends_us > 0 && (next == 0 || it->second.ends_us < next)) {
        next = it->second.ends_us;
      }
      ++it;
    }
    out->set_next_event_us(next);
    return PluginStatus::Ok();
  }

  PluginStatus Telemetry(v1::TelemetryBatch* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (telemetry_) {
      v1::GpuTelemetry* reading = out->add_readings();
      reading->set_node(prefix_ + "-0");
      reading->set_gpu(0);
      reading->set_temperature_c(40);
    }
    if (xid_gpu_ < 0 || xid_reported_) return PluginStatus::Ok();
    xid_reported_ = true;
    v1::GpuTelemetry* reading = out->add_readings();
    reading->set_node(prefix_ + "-0");
    reading->set_gpu(xid_gpu_);
    reading->set_temperature_c(70);
    reading->add_xid_errors(79);
    return PluginStatus::Ok();
  }

  PluginStatus Reconcile(v1::LiveTasks* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, task] : tasks_) *out->add_tasks() = task.ref;
    return PluginStatus::Ok();
  }

 private:
  using Key = std::tuple<uint64_t, int32_t, int32_t>;
  struct Task {
    v1::TaskRef ref;
    int64_t ends_us = 0;
    int32_t exit_code = 0;
  };
  static Key KeyOf(const v1::TaskRef& r) { return {r.job(), r.attempt(), r.task()}; }
  void Exit(const v1::TaskRef& ref, int code) {
    v1::BackendEvent exited;
    exited.set_kind(v1::BackendEvent::TASK_EXITED);
    *exited.mutable_ref() = ref;
    exited.set_exit_code(code);
    host().Emit(exited);
  }

  int nodes_ = 1;
  std::string prefix_ = "test";
  long launch_delay_ms_ = 0;
  bool launch_error_ = false;
  int xid_gpu_ = -1;
  bool xid_reported_ = false;
  bool telemetry_ = false;
  uint64_t crash_on_job_ = 0;
  uint64_t launch_error_job_ = 0;
  uint64_t leftover_job_ = 0;
  int32_t leftover_attempt_ = 1;
  long stop_delay_ms_ = 0;
  int stop_errors_ = 0;
  bool mig_ = false;
  bool reject_with_devices_ = false;
  std::string single_instance_;  // counted in instances_alive under this name.
  std::mutex mu_;
  std::map<Key, Task> tasks_;
};

}  // namespace test_backend

using test_backend::TestBackend;

}  // namespace tessera::testing
