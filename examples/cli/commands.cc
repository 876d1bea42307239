#include "commands.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "burst_table.h"
#include "table.h"
#include "tessera/message_file.h"

namespace tessera::cli {
namespace {

namespace pb = google::protobuf;

ExitCode Fail(const CallResult& result) {
  std::cerr << "tessctl: " << result.error << '\n';
  return result.code;
}

ExitCode UsageError(const std::string& message) {
  std::cerr << "tessctl: " << message << '\n';
  return ExitCode::kUsage;
}

std::string ToJson(const pb::Message& message, bool pretty) {
  pb::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  std::string json;
  (void)pb::util::MessageToJsonString(message, &json, options);
  if (!json.empty() && json.back() == '\n') json.pop_back();
  return json;
}

// {"<field>": [...]} from messages, in the shape the server sends.
template <typename T>
std::string ListToJson(const std::string& field, const std::vector<T>& items) {
  std::string json = "{\"" + field + "\": [";
  for (size_t i = 0; i < items.size(); ++i) {
    json += (i == 0 ? "\n" : ",\n") + ToJson(items[i], false);
  }
  return json + (items.empty() ? "]}" : "\n]}");
}

std::string Cores(int64_t milli) {
  std::ostringstream out;
  out << milli / 1000.0;
  return out.str();
}

std::string Gpus(int64_t gpu_milli) { return Cores(gpu_milli); }

std::string GpuAsk(const v1::TaskResources& task) {
  if (!task.mig_profile().empty()) return "mig:" + task.mig_profile();
  if (!task.vgpu_type().empty()) return "vgpu:" + task.vgpu_type();
  if (task.gpu_count() == 0) return "0";
  if (task.gpu_milli() > 0 && task.gpu_milli() < 1000) return Gpus(task.gpu_milli());
  return std::to_string(task.gpu_count());
}

std::string Truncate(const std::string& text, size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

std::string Timestamp(int64_t time_us) {
  if (time_us == 0) return "-";
  const std::time_t seconds = static_cast<std::time_t>(time_us / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

void PrintJobs(const std::vector<const v1::Job*>& jobs) {
  Table table({"ID", "NAME", "QUEUE", "STATE", "TASKS", "GPU/TASK", "REASON"});
  for (const v1::Job* job : jobs) {
    table.AddRow({std::to_string(job->id()), job->spec().name(), job->spec().queue(),
                  v1::JobState_Name(job->status().state()),
                  std::to_string(job->spec().tasks() == 0 ? 1 : job->spec().tasks()),
                  GpuAsk(job->spec().task()), Truncate(job->status().reason(), 60)});
  }
  table.Print(std::cout);
}

void PrintJobDetail(const v1::Job& job) {
  const v1::JobSpec& spec = job.spec();
  const v1::JobStatus& status = job.status();
  Table table({"FIELD", "VALUE"});
  table.AddRow({"id", std::to_string(job.id())});
  table.AddRow({"name", spec.name()});
  table.AddRow({"queue", spec.queue()});
  table.AddRow(
      {"priority class", spec.priority_class().empty() ? "(default)" : spec.priority_class()});
  table.AddRow({"state", v1::JobState_Name(status.state())});
  table.AddRow({"reason", status.reason()});
  table.AddRow({"tasks", std::to_string(spec.tasks() == 0 ? 1 : spec.tasks())});
  table.AddRow({"per task", "cpu " + Cores(spec.task().cpu_milli()) + ", memory " +
                                std::to_string(spec.task().memory_mib()) + " MiB, gpu " +
                                GpuAsk(spec.task())});
  table.AddRow({"attempt", std::to_string(status.attempt())});
  table.AddRow({"submitted", Timestamp(status.submit_time_us())});
  table.AddRow({"started", Timestamp(status.start_time_us())});
  table.AddRow({"ended", Timestamp(status.end_time_us())});
  for (const v1::TaskPlacement& placement : status.placements()) {
    std::string gpus;
    for (const int gpu : placement.gpus()) gpus += (gpus.empty() ? "" : ",") + std::to_string(gpu);
    table.AddRow({"task " + std::to_string(placement.index()),
                  placement.node() + (gpus.empty() ? "" : " gpus " + gpus)});
  }
  table.Print(std::cout);
}

void PrintQueues(const std::vector<v1::Queue>& queues) {
  Table table({"QUEUE", "WEIGHT", "PENDING", "RUNNING", "CPU", "MEMORY(MiB)", "GPU", "SHARE"});
  for (const v1::Queue& queue : queues) {
    const v1::Resources& allocated = queue.status().allocated();
    std::ostringstream weight, share;
    // The server stores what was given; 0 (unset) means 1 (queue.proto).
    weight << (queue.spec().weight() == 0 ? 1.0 : queue.spec().weight());
    share.precision(3);
    share << queue.status().dominant_share();
    table.AddRow({queue.spec().name(), weight.str(), std::to_string(queue.status().pending_jobs()),
                  std::to_string(queue.status().running_jobs()), Cores(allocated.cpu_milli()),
                  std::to_string(allocated.memory_mib()), Gpus(allocated.gpu_milli()),
                  share.str()});
  }
  table.Print(std::cout);
  // GPUs by model, for the queues that hold some or have a quota per model.
  Table models({"QUEUE", "GPU MODEL", "GPU", "OF", "MODEL SHARE", "PRICE"});
  bool any = false;
  for (const v1::Queue& queue : queues) {
    for (const v1::GpuModelUsage& m : queue.status().gpu_models()) {
      std::ostringstream model_share, price;
      model_share.precision(3);
      model_share << m.share();
      price << m.weight();
      models.AddRow({queue.spec().name(), m.model(), Gpus(m.allocated_gpu_milli()),
                     Gpus(m.capacity_gpu_milli()), model_share.str(), price.str()});
      any = true;
    }
  }
  if (any) {
    std::cout << '\n';
    models.Print(std::cout);
  }
  PrintBurstSpend(queues, std::cout);
}

void PrintNodes(const std::vector<v1::Node>& nodes) {
  Table table({"NODE", "STATUS", "GPUS", "CPU", "MEMORY(MiB)", "GPU USED", "TASKS", "BACKEND"});
  for (const v1::Node& node : nodes) {
    const v1::NodeStatus& status = node.status();
    std::string state = !status.unavailable().empty() ? "Unavailable"
                        : status.draining()           ? "Draining"
                        : status.cordoned()           ? "Cordoned"
                                                      : "Ready";
    int failed = 0;
    for (const v1::GpuState& gpu : status.gpus()) failed += gpu.failed() ? 1 : 0;
    if (failed > 0) state += "," + std::to_string(failed) + "-gpu-failed";
    if (status.reshape_pending()) state += ",Reshaping";
    std::string gpus = std::to_string(node.spec().gpus_size());
    if (node.spec().gpus_size() > 0) gpus += "x" + node.spec().gpus(0).model();
    table.AddRow({node.spec().name(), state, gpus,
                  Cores(status.allocated().cpu_milli()) + "/" + Cores(node.spec().cpu_milli()),
                  std::to_string(status.allocated().memory_mib()) + "/" +
                      std::to_string(node.spec().memory_mib()),
                  Gpus(status.allocated().gpu_milli()), std::to_string(status.running_tasks()),
                  status.backend()});
  }
  table.Print(std::cout);
  // Why a node takes no work, where the state alone does not say it.
  for (const v1::Node& node : nodes) {
    if (!node.status().unavailable().empty()) {
      std::cout << node.spec().name() << ": " << node.status().unavailable() << '\n';
    }
  }
}

// One row per GPU, and for a MIG GPU one per instance: the devices tasks are given, by UUID.
void PrintGpus(const std::vector<v1::Node>& nodes) {
  Table table({"NODE", "GPU", "MODEL", "SHARING", "DEVICE", "UUID", "HEALTH"});
  for (const v1::Node& node : nodes) {
    for (const v1::GpuDevice& gpu : node.spec().gpus()) {
      std::string health = "ok";
      for (const v1::GpuState& state : node.status().gpus()) {
        if (state.index() != gpu.index()) continue;
        if (state.failed())
          health = "failed: " + state.reason();
        else if (state.too_hot())
          health = "too hot: " + state.reason();
      }
      std::string sharing = v1::GpuSharing_Name(gpu.sharing()).substr(strlen("GPU_SHARING_"));
      for (char& c : sharing) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (gpu.sharing() == v1::GPU_SHARING_TIME_SLICE) {
        sharing += " x" + std::to_string(gpu.replicas());
      }
      if (gpu.sharing() == v1::GPU_SHARING_MIG) sharing += gpu.mig_managed() ? " (managed)" : "";
      const std::string index = std::to_string(gpu.index());
      table.AddRow({node.spec().name(), index, gpu.model(), sharing, "whole",
                    gpu.uuid().empty() ? "-" : gpu.uuid(), health});
      for (const v1::MigInstance& m : gpu.mig_instances()) {
        std::string uuid = "-";
        for (const v1::PartitionInstance& device : gpu.instances()) {
          if (device.mig().profile() == m.profile() && device.mig().start() == m.start() &&
              !device.uuid().empty()) {
            uuid = device.uuid();
          }
        }
        table.AddRow({"", "", "", "", m.profile() + "@" + std::to_string(m.start()), uuid, ""});
      }
    }
  }
  table.Print(std::cout);
}

void PrintBackends(const std::vector<v1::Backend>& backends) {
  Table table({"BACKEND", "STATUS", "NODES", "ROLES", "RESTARTS", "PLUGIN"});
  for (const v1::Backend& b : backends) {
    std::string roles;
    for (const std::string& role : b.roles()) roles += (roles.empty() ? "" : ",") + role;
    for (const std::string& other : b.partitions()) roles += ",partitions:" + other;
    table.AddRow({b.name(), b.healthy() ? "Healthy" : "Unhealthy", std::to_string(b.nodes()), roles,
                  std::to_string(b.restarts()),
                  b.plugin() + " " + b.version() + " (ABI " + b.abi() + ")" +
                      (b.isolated() ? ", isolated" : "")});
  }
  table.Print(std::cout);
  for (const v1::Backend& b : backends) {
    if (!b.healthy()) std::cout << b.name() << ": " << b.unhealthy_reason() << '\n';
  }
  // What has been asked of each backend, and the latest thing that failed.
  bool any_operations = false;
  for (const v1::Backend& b : backends) any_operations |= b.operations_size() > 0;
  if (any_operations) {
    std::cout << '\n';
    Table operations({"BACKEND", "OPERATION", "IN FLIGHT", "SUCCEEDED", "FAILED"});
    for (const v1::Backend& b : backends) {
      for (const v1::BackendOperations& op : b.operations()) {
        operations.AddRow({b.name(), op.kind(), std::to_string(op.in_flight()),
                           std::to_string(op.succeeded()), std::to_string(op.failed())});
      }
    }
    operations.Print(std::cout);
    for (const v1::Backend& b : backends) {
      if (!b.last_operation_failure().empty()) {
        std::cout << b.name() << ": last failed operation: " << b.last_operation_failure() << '\n';
      }
    }
  }
  // What each capacity provider can add.
  bool any_groups = false;
  for (const v1::Backend& b : backends) any_groups |= b.node_groups_size() > 0;
  if (!any_groups) return;
  std::cout << '\n';
  Table groups({"BACKEND", "NODE GROUP", "MARKET", "NODES", "PRICE/H", "SHAPE"});
  for (const v1::Backend& b : backends) {
    for (const v1::NodeGroup& g : b.node_groups()) {
      const v1::NodeSpec& shape = g.shape();
      std::string gpus = std::to_string(shape.gpus_size()) + " GPU";
      if (shape.gpus_size() > 0) gpus += " " + shape.gpus(0).model();
      char price[32];
      std::snprintf(price, sizeof(price), "%.2f", g.price_per_hour());
      groups.AddRow({b.name(), g.name(), g.market() == v1::SPOT ? "spot" : "on-demand",
                     std::to_string(g.min_nodes()) + ".." + std::to_string(g.max_nodes()), price,
                     std::to_string(shape.cpu_milli() / 1000) + " CPU, " +
                         std::to_string(shape.memory_mib() / 1024) + " GiB, " + gpus});
    }
  }
  groups.Print(std::cout);
}

std::string EventLine(const v1::Event& event) {
  std::string line = std::to_string(event.seq()) + "  " + Timestamp(event.time_us()) + "  " +
                     v1::EventKind_Name(event.kind());
  if (event.job_id() != 0) line += "  job=" + std::to_string(event.job_id());
  if (event.kind() == v1::JOB_STATE_CHANGED) {
    // A submitted job has no state before PENDING: "PENDING", not "JOB_STATE_UNSPECIFIED->".
    line += "  ";
    if (event.from_state() != v1::JOB_STATE_UNSPECIFIED) {
      line += v1::JobState_Name(event.from_state()) + "->";
    }
    line += v1::JobState_Name(event.to_state());
  }
  if (!event.queue().empty()) line += "  queue=" + event.queue();
  if (!event.node().empty()) line += "  node=" + event.node();
  if (!event.reason().empty()) line += "  " + event.reason();
  return line;
}

}  // namespace

namespace {

// "key[=value][:Effect]" as a toleration: EQUAL with a value, EXISTS without; any effect
// unless named (NoSchedule, PreferNoSchedule, NoExecute, or the enum names).
bool ParseToleration(const std::string& text, v1::Toleration* out, std::string* error) {
  std::string rest = text;
  const size_t colon = rest.rfind(':');
  if (colon != std::string::npos) {
    const std::string effect = rest.substr(colon + 1);
    rest.resize(colon);
    v1::TaintEffect parsed;
    if (effect == "NoSchedule") {
      out->set_effect(v1::NO_SCHEDULE);
    } else if (effect == "PreferNoSchedule") {
      out->set_effect(v1::PREFER_NO_SCHEDULE);
    } else if (effect == "NoExecute") {
      out->set_effect(v1::NO_EXECUTE);
    } else if (v1::TaintEffect_Parse(effect, &parsed) && parsed != v1::TAINT_EFFECT_UNSPECIFIED) {
      out->set_effect(parsed);
    } else {
      *error =
          "--toleration " + text + ": the effect must be NoSchedule, PreferNoSchedule or NoExecute";
      return false;
    }
  }
  const size_t equals = rest.find('=');
  if (equals == std::string::npos) {
    out->set_key(rest);
    out->set_operator_(v1::Toleration::EXISTS);
  } else {
    out->set_key(rest.substr(0, equals));
    out->set_value(rest.substr(equals + 1));
    out->set_operator_(v1::Toleration::EQUAL);
  }
  return true;
}

// The placement flags: --selector key=value and --toleration key[=value][:Effect].
bool ApplyPlacementFlags(const SubmitFlags& flags, v1::JobSpec* spec, std::string* error) {
  for (const std::string& selector : flags.selectors) {
    const size_t equals = selector.find('=');
    if (equals == std::string::npos || equals == 0) {
      *error = "--selector " + selector + ": expected key=value";
      return false;
    }
    (*spec->mutable_node_selector())[selector.substr(0, equals)] = selector.substr(equals + 1);
  }
  for (const std::string& toleration : flags.tolerations) {
    if (!ParseToleration(toleration, spec->add_tolerations(), error)) return false;
  }
  return true;
}

// A positive count of `text` (all digits), or -1.
int ParseCount(const std::string& text) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::stoi(text);
}

// --elastic MIN:MAX and --elastic-sizes (powers-of-two, multiple-of:N, N,M,...), and
// --idle-gpu-exempt. The server checks the values against each other.
bool ApplyElasticFlags(const SubmitFlags& flags, v1::JobSpec* spec, std::string* error) {
  if (flags.idle_gpu_exempt) spec->set_idle_gpu_exempt(true);
  if (!flags.elastic.empty()) {
    const size_t colon = flags.elastic.find(':');
    const int min = colon == std::string::npos ? -1 : ParseCount(flags.elastic.substr(0, colon));
    const int max = colon == std::string::npos ? -1 : ParseCount(flags.elastic.substr(colon + 1));
    if (min < 0 || max < 0) {
      *error = "--elastic " + flags.elastic + ": expected MIN:MAX, e.g. 2:8";
      return false;
    }
    spec->clear_tasks();
    spec->clear_gang_min();
    spec->mutable_elastic()->set_min_tasks(min);
    spec->mutable_elastic()->set_max_tasks(max);
  }
  if (flags.elastic_sizes.empty()) return true;
  if (!spec->has_elastic()) {
    *error = "--elastic-sizes: needs an elastic job (--elastic MIN:MAX, or elastic in the file)";
    return false;
  }
  v1::ElasticSizes& sizes = *spec->mutable_elastic()->mutable_sizes();
  sizes.Clear();
  const std::string& rule = flags.elastic_sizes;
  const std::string multiple = "multiple-of:";
  if (rule == "powers-of-two") {
    sizes.set_powers_of_two(true);
    return true;
  }
  if (rule.rfind(multiple, 0) == 0) {
    const int n = ParseCount(rule.substr(multiple.size()));
    if (n > 0) {
      sizes.set_multiple_of(n);
      return true;
    }
  } else {
    bool ok = true;
    for (size_t start = 0; ok && start <= rule.size();) {
      const size_t comma = std::min(rule.find(',', start), rule.size());
      const int count = ParseCount(rule.substr(start, comma - start));
      if (count <= 0) ok = false;
      sizes.add_counts(count);
      start = comma + 1;
    }
    if (ok) return true;
  }
  *error = "--elastic-sizes " + rule +
           ": expected powers-of-two, multiple-of:N or a list of counts N,M,... (e.g. 2,4,8)";
  return false;
}

void ApplySubmitFlags(const SubmitFlags& flags, v1::JobSpec* spec) {
  v1::TaskResources& task = *spec->mutable_task();
  if (!flags.queue.empty()) spec->set_queue(flags.queue);
  if (!flags.name.empty()) spec->set_name(flags.name);
  if (!flags.priority_class.empty()) spec->set_priority_class(flags.priority_class);
  if (flags.tasks >= 0) spec->set_tasks(flags.tasks);
  if (flags.cpu_milli >= 0) task.set_cpu_milli(flags.cpu_milli);
  if (flags.memory_mib >= 0) task.set_memory_mib(flags.memory_mib);
  if (flags.gpus >= 0) task.set_gpu_count(flags.gpus);
  if (flags.gpu_milli >= 0) {
    task.set_gpu_milli(flags.gpu_milli);
    if (flags.gpus < 0 && task.gpu_count() == 0) task.set_gpu_count(1);
  }
  if (!flags.command.empty()) {
    spec->clear_command();
    for (const std::string& arg : flags.command) spec->add_command(arg);
  }
}

// What `flags` asks to submit, each job with its idempotency key; a usage error in `error`.
std::vector<std::pair<v1::JobSpec, std::string>> SpecsToSubmit(const SubmitFlags& flags,
                                                               std::string* error) {
  std::vector<v1::JobSpec> specs;
  if (!flags.file.empty()) {
    std::vector<std::unique_ptr<v1::JobSpec>> read;
    const Status status = ReadMessageFiles(flags.file, [&read]() -> pb::Message* {
      return read.emplace_back(std::make_unique<v1::JobSpec>()).get();
    });
    if (!status.ok()) {
      *error = status.message();
      return {};
    }
    for (auto& spec : read) specs.push_back(std::move(*spec));
    if (specs.empty()) {
      *error = flags.file + ": no job in the file";
      return {};
    }
  } else {
    // Without --queue the server puts the job in its default queue. The defaults of
    // tessera::JobSpecBuilder: one task of 1 CPU and 1 GiB.
    v1::JobSpec& spec = specs.emplace_back();
    spec.mutable_task()->set_cpu_milli(1000);
    spec.mutable_task()->set_memory_mib(1024);
  }
  std::vector<std::pair<v1::JobSpec, std::string>> jobs;
  for (v1::JobSpec& spec : specs) {
    ApplySubmitFlags(flags, &spec);
    if (!ApplyPlacementFlags(flags, &spec, error)) return {};
    if (!ApplyElasticFlags(flags, &spec, error)) return {};
    if (flags.array == 0) {
      jobs.emplace_back(std::move(spec), "");
      continue;
    }
    for (int i = 0; i < flags.array; ++i) {
      v1::JobSpec& copy = jobs.emplace_back(spec, "").first;
      if (!copy.name().empty()) copy.set_name(copy.name() + "-" + std::to_string(i));
    }
  }
  const bool several = jobs.size() > 1;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (flags.idempotency_key.empty()) continue;
    jobs[i].second =
        several ? flags.idempotency_key + "-" + std::to_string(i) : flags.idempotency_key;
  }
  return jobs;
}

// Submits every job over `connections` concurrent connections, so that the daemon's group commit
// makes them share fsyncs; results in the order of `jobs`.
std::vector<CallResult> SubmitAll(const ApiClient& api,
                                  const std::vector<std::pair<v1::JobSpec, std::string>>& jobs,
                                  std::vector<v1::Job>* submitted) {
  constexpr size_t kConnections = 16;
  std::vector<CallResult> results(jobs.size());
  submitted->resize(jobs.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      results[i] = api.SubmitJob(jobs[i].first, jobs[i].second, &(*submitted)[i]);
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < std::min(kConnections, jobs.size()); ++t) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  return results;
}

std::string DryRunVerdict(const v1::DryRunResult& result) {
  switch (result.verdict()) {
    case v1::DryRunResult::STARTS_NOW:
      return "would start now";
    case v1::DryRunResult::PREEMPTS:
      return "would start after preempting " + std::to_string(result.victims_size()) + " job(s)";
    case v1::DryRunResult::WAITS: {
      std::string cause = v1::DryRunResult::WaitCause_Name(result.wait_cause());
      std::transform(cause.begin(), cause.end(), cause.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      return "would wait (" + cause + ")";
    }
    case v1::DryRunResult::INFEASIBLE:
      return "could never run on this cluster";
    default:
      return "unknown";
  }
}

void PrintDryRun(const v1::DryRunResult& result, int64_t now_us) {
  Table table({"FIELD", "VALUE"});
  table.AddRow({"verdict", DryRunVerdict(result)});
  table.AddRow({"queue", result.queue()});
  table.AddRow({"priority", std::to_string(result.priority()) +
                                (result.preemptible() ? " (preemptible)" : " (not preemptible)")});
  table.AddRow({"reason", result.reason()});
  if (result.verdict() != v1::DryRunResult::INFEASIBLE) {
    table.AddRow({"jobs ahead", std::to_string(result.jobs_ahead())});
    std::string start = "unknown: " + result.start_unknown_reason();
    if (result.estimated_start_us() > 0) {
      const int64_t in_s = std::max<int64_t>(0, result.estimated_start_us() - now_us) / 1000000;
      start = result.verdict() == v1::DryRunResult::STARTS_NOW
                  ? "now"
                  : Timestamp(result.estimated_start_us()) + " (in about " + std::to_string(in_s) +
                        " s)";
    }
    table.AddRow({"start", start});
  }
  for (const v1::TaskPlacement& placement : result.placements()) {
    std::string gpus;
    for (const int gpu : placement.gpus()) gpus += (gpus.empty() ? "" : ",") + std::to_string(gpu);
    table.AddRow({result.verdict() == v1::DryRunResult::STARTS_NOW
                      ? "task " + std::to_string(placement.index())
                      : "node",
                  placement.node() + (gpus.empty() ? "" : " gpus " + gpus)});
  }
  for (const v1::DryRunVictim& victim : result.victims()) {
    const std::string who = victim.job_id() == 0 ? "a job of another tenant"
                                                 : "job " + std::to_string(victim.job_id()) +
                                                       " (queue " + victim.queue() + ")";
    table.AddRow({"preempts", who + ", priority " + std::to_string(victim.priority()) + ", " +
                                  std::to_string(victim.tasks()) + " task(s): " + victim.reason()});
  }
  table.Print(std::cout);
}

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ExitCode DryRun(const ApiClient& api, const Output& output,
                const std::vector<std::pair<v1::JobSpec, std::string>>& jobs) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    v1::DryRunResult result;
    if (CallResult call = api.DryRunJob(jobs[i].first, &result); !call.ok()) {
      if (jobs.size() > 1) std::cerr << "tessctl: job " << i + 1 << " of " << jobs.size() << ": ";
      return Fail(call);
    }
    if (output.json) {
      std::cout << ToJson(result, jobs.size() == 1) << '\n';
      continue;
    }
    if (jobs.size() > 1)
      std::cout << (i == 0 ? "" : "\n") << "job " << i + 1 << " of " << jobs.size() << '\n';
    PrintDryRun(result, NowUs());
  }
  return ExitCode::kOk;
}

}  // namespace

ExitCode Submit(const ApiClient& api, const Output& output, const SubmitFlags& flags) {
  if (flags.dry_run && flags.array > 0) {
    return UsageError(
        "--dry-run answers for each job alone, not counting its copies: drop --array");
  }
  if (flags.dry_run && !flags.idempotency_key.empty()) {
    return UsageError("--dry-run stores nothing, so --idempotency-key would have no effect");
  }
  std::string error;
  const auto jobs = SpecsToSubmit(flags, &error);
  if (jobs.empty()) return UsageError(error);
  if (flags.dry_run) return DryRun(api, output, jobs);
  if (jobs.size() == 1) {
    v1::Job job;
    if (CallResult result = api.SubmitJob(jobs[0].first, jobs[0].second, &job); !result.ok()) {
      return Fail(result);
    }
    // The id alone, so that ID=$(tessctl submit ...) works.
    std::cout << (output.json ? ToJson(job, true) : std::to_string(job.id())) << '\n';
    return ExitCode::kOk;
  }
  std::vector<v1::Job> submitted;
  const std::vector<CallResult> results = SubmitAll(api, jobs, &submitted);
  ExitCode code = ExitCode::kOk;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].ok()) {
      std::cout << (output.json ? ToJson(submitted[i], false) : std::to_string(submitted[i].id()))
                << '\n';
      continue;
    }
    std::cout << "-\n";
    std::cerr << "tessctl: job " << i + 1 << " of " << jobs.size() << ": " << results[i].error
              << '\n';
    if (code == ExitCode::kOk) code = results[i].code;
  }
  return code;
}

ExitCode ListJobs(const ApiClient& api, const Output& output, const std::string& queue,
                  const std::vector<std::string>& states, int page_size) {
  v1::ListJobsResponse all;
  std::string token;
  do {
    v1::ListJobsResponse page;
    if (CallResult result = api.ListJobs(queue, states, page_size, token, &page); !result.ok()) {
      return Fail(result);
    }
    for (v1::Job& job : *page.mutable_jobs()) *all.add_jobs() = std::move(job);
    if (!token.empty() && page.next_page_token() == token) {
      return Fail({ExitCode::kServerError, "server repeated page token " + token});
    }
    token = page.next_page_token();
  } while (!token.empty());
  if (output.json) {
    std::cout << ToJson(all, true) << '\n';
  } else {
    std::vector<const v1::Job*> jobs;
    for (const v1::Job& job : all.jobs()) jobs.push_back(&job);
    PrintJobs(jobs);
  }
  return ExitCode::kOk;
}

ExitCode GetJob(const ApiClient& api, const Output& output, const std::string& id) {
  v1::Job job;
  if (CallResult result = api.GetJob(id, &job); !result.ok()) return Fail(result);
  if (output.json) {
    std::cout << ToJson(job, true) << '\n';
  } else {
    PrintJobDetail(job);
  }
  return ExitCode::kOk;
}

ExitCode CancelJob(const ApiClient& api, const Output& output, const std::string& id) {
  v1::Job job;
  if (CallResult result = api.CancelJob(id, &job); !result.ok()) return Fail(result);
  if (output.json) {
    std::cout << ToJson(job, true) << '\n';
  } else {
    PrintJobs({&job});
  }
  return ExitCode::kOk;
}

ExitCode ListQueues(const ApiClient& api, const Output& output) {
  std::vector<v1::Queue> queues;
  if (CallResult result = api.ListQueues(&queues); !result.ok()) return Fail(result);
  if (output.json) {
    std::cout << ListToJson("queues", queues) << '\n';
  } else {
    PrintQueues(queues);
  }
  return ExitCode::kOk;
}

ExitCode WriteQueue(const ApiClient& api, const Output& output, const std::string& file,
                    bool create) {
  v1::QueueSpec spec;
  if (Status status = ReadMessageFile(file, &spec); !status.ok()) {
    return UsageError(status.message());
  }
  if (spec.name().empty()) return UsageError(file + ": name: required");
  v1::Queue queue;
  if (CallResult result = api.WriteQueue(spec, create, &queue); !result.ok()) return Fail(result);
  if (output.json) {
    std::cout << ToJson(queue, false) << '\n';
  } else {
    std::cout << "queue " << queue.spec().name() << (create ? " created" : " updated") << '\n';
  }
  return ExitCode::kOk;
}

ExitCode DeleteQueue(const ApiClient& api, const std::string& name) {
  if (CallResult result = api.DeleteQueue(name); !result.ok()) return Fail(result);
  std::cout << "queue " << name << " deleted\n";
  return ExitCode::kOk;
}

ExitCode ListNodes(const ApiClient& api, const Output& output) {
  std::vector<v1::Node> nodes;
  if (CallResult result = api.ListNodes(&nodes); !result.ok()) return Fail(result);
  if (output.json) {
    std::cout << ListToJson("nodes", nodes) << '\n';
  } else {
    PrintNodes(nodes);
  }
  return ExitCode::kOk;
}

ExitCode ListGpus(const ApiClient& api, const Output& output) {
  std::vector<v1::Node> nodes;
  if (CallResult result = api.ListNodes(&nodes); !result.ok()) return Fail(result);
  if (output.json) {
    std::cout << ListToJson("nodes", nodes) << '\n';
  } else {
    PrintGpus(nodes);
  }
  return ExitCode::kOk;
}

ExitCode ListBackends(const ApiClient& api, const Output& output) {
  std::vector<v1::Backend> backends;
  if (CallResult result = api.ListBackends(&backends); !result.ok()) return Fail(result);
  if (output.json) {
    std::cout << ListToJson("backends", backends) << '\n';
  } else if (backends.empty()) {
    std::cout << "no backends: the built-in simulation runs the tasks\n";
  } else {
    PrintBackends(backends);
  }
  return ExitCode::kOk;
}

ExitCode NodeAction(const ApiClient& api, const std::string& node, const std::string& action) {
  if (CallResult result = api.NodeAction(node, action); !result.ok()) return Fail(result);
  std::cout << "node " << node << ' ' << (action == "drain" ? "draining" : action + "ed") << '\n';
  return ExitCode::kOk;
}

ExitCode Watch(const ApiClient& api, const Output& output, uint64_t after_seq, int limit) {
  constexpr int kWaitMs = 30000;
  constexpr int kMaxPerPoll = 500;
  int printed = 0;
  while (limit <= 0 || printed < limit) {
    v1::WatchEventsResponse page;
    if (CallResult result = api.WatchEvents(after_seq, kMaxPerPoll, kWaitMs, &page); !result.ok()) {
      return Fail(result);
    }
    for (const v1::Event& event : page.events()) {
      std::cout << (output.json ? ToJson(event, false) : EventLine(event)) << std::endl;
      if (limit > 0 && ++printed >= limit) break;
    }
    // Past other tenants' events as well; an older server without the field: the last event.
    after_seq = std::max(after_seq, page.next_after_seq());
    for (const v1::Event& event : page.events()) after_seq = std::max(after_seq, event.seq());
  }
  return ExitCode::kOk;
}

ExitCode Top(const ApiClient& api, const Output& output, bool once) {
  while (true) {
    std::vector<v1::Queue> queues;
    std::vector<v1::Node> nodes;
    if (CallResult result = api.ListQueues(&queues); !result.ok()) return Fail(result);
    if (CallResult result = api.ListNodes(&nodes); !result.ok()) return Fail(result);
    if (!once) std::cout << "\033[H\033[2J";  // home and clear, like top(1).
    if (output.json) {
      std::cout << ListToJson("queues", queues) << '\n' << ListToJson("nodes", nodes) << '\n';
    } else {
      PrintQueues(queues);
      std::cout << '\n';
      PrintNodes(nodes);
    }
    std::cout << std::flush;
    if (once) return ExitCode::kOk;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

}  // namespace tessera::cli
