// SchedulerImpl: opening, recovery, the decision thread, timers and shutdown.
#include "api/scheduler_impl.h"

#include <pthread.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <set>
#include <unordered_map>

#include "api/validation.h"
#include "common/log.h"
#include "config/yaml_proto.h"

namespace tessera {

Scheduler::~Scheduler() = default;

StatusOr<std::unique_ptr<Scheduler>> Scheduler::Open(const Options& options) {
  return SchedulerImpl::Create(options);
}

v1::SimulatedCluster DefaultSimulatedCluster() {
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* a100 = cluster.add_groups();
  a100->set_name_prefix("sim-a100");
  a100->set_count(2);
  a100->set_cpu_milli(64000);
  a100->set_memory_mib(512 * 1024);
  a100->set_gpus(8);
  a100->set_gpu_model("A100-80GB");
  a100->set_gpu_memory_mib(80 * 1024);
  a100->set_gpus_per_nvlink_domain(8);
  (*a100->mutable_labels())["rack"] = "rack-1";
  v1::SimulatedNodeGroup* h100 = cluster.add_groups();
  h100->set_name_prefix("sim-h100");
  h100->set_count(2);
  h100->set_cpu_milli(48000);
  h100->set_memory_mib(384 * 1024);
  h100->set_gpus(4);
  h100->set_gpu_model("H100-80GB");
  h100->set_gpu_memory_mib(80 * 1024);
  h100->set_gpus_per_nvlink_domain(4);
  (*h100->mutable_labels())["rack"] = "rack-2";
  return cluster;
}

StatusOr<std::unique_ptr<Scheduler>> SchedulerImpl::Create(const Options& options) {
  TESSERA_RETURN_IF_ERROR(ValidateOptions(options));

  v1::SimulatedCluster cluster;
  if (!options.backends.empty() || options.executor_plugin) {
    // The backends report the nodes; no simulated cluster is run.
  } else if (options.simulated_cluster) {
    cluster = *options.simulated_cluster;
  } else if (!options.simulated_cluster_file.empty()) {
    TESSERA_RETURN_IF_ERROR(YamlFileToMessage(options.simulated_cluster_file, &cluster));
  } else {
    cluster = DefaultSimulatedCluster();
  }
  StatusOr<std::vector<v1::NodeSpec>> nodes = ExpandSimulatedCluster(cluster);
  if (!nodes.ok()) return nodes.status().WithContext("simulated_cluster");

  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, store::Store::Open(options.store));
  std::shared_ptr<Clock> clock = options.clock ? options.clock : RealClock();
  std::unique_ptr<SchedulerImpl> impl(new SchedulerImpl(options, clock, std::move(store)));
  TESSERA_RETURN_IF_ERROR(impl->Recover(*nodes));
  return std::unique_ptr<Scheduler>(std::move(impl));
}

SchedulerImpl::SchedulerImpl(const Options& options, std::shared_ptr<Clock> clock,
                             std::unique_ptr<store::Store> store)
    : options_(options),
      clock_(std::move(clock)),
      store_(std::move(store)),
      event_watches_(std::make_unique<EventWatches>(*store_)),
      strand_(boost::asio::make_strand(io_)),
      timer_(io_) {
  EngineHost& host = *this;
  engine_ = std::make_unique<Engine>(options_, *clock_, host);
  feasibility_ = engine_->feasibility();
}

namespace {

// The backends as Options lists them: executor_plugin is a set of one.
std::vector<BackendOptions> BackendList(const Options& options) {
  if (!options.executor_plugin) return options.backends;
  BackendOptions only;
  only.plugin = *options.executor_plugin;
  return {only};
}

// The field that configures backend `i`, for errors.
std::string BackendField(const Options& options, size_t i) {
  return options.executor_plugin ? "executor_plugin" : "backends[" + std::to_string(i) + "]";
}

}  // namespace

PluginBackend::Host SchedulerImpl::BackendHost(BackendSet::Member member) {
  PluginBackend::Host host;
  host.post = [this](std::function<void()> fn) { Post(std::move(fn)); };
  host.closing = [this] { return closing_.load(); };
  host.events = backend_set_.get();
  host.timers = &engine_->timers();
  host.clock = clock_;
  host.log = options_.log;
  host.telemetry = [this](const v1::GpuTelemetry& reading) {
    // A reading for a node or GPU the engine does not know is the plugin's mistake, not ours.
    Status status = engine_->OnTelemetry(reading);
    if (!status.ok())
      LogWarning(options_.log, "telemetry from plugin dropped: {}", status.message());
  };
  host.on_inventory = [this, member](const InventoryDiff& diff) {
    InventoryDiff change = backend_set_->TakeChange(member, diff);
    TakeBurstNodes(member, change.added, /*added=*/true);
    TakeBurstNodes(member, change.changed, /*added=*/false);
    TakeInventoryChange(change, backend_set_->name(member));
    if (burst_) burst_->TakeLeft(change.removed);
  };
  host.on_provisioned = [this](const std::string& request_id, bool succeeded,
                               const std::string& why, const std::vector<std::string>& nodes) {
    if (burst_) burst_->ProvisionEnded(request_id, succeeded, why, nodes);
  };
  host.fencing_epoch = options_.fencing_epoch;
  host.on_interruption = [this, member](const std::string& node, int64_t deadline_us,
                                        const std::string& why) {
    // A notice is the node's owner's to give, or the capacity provider's that added it (an EC2
    // instance joined as a Kubernetes node); of any other backend it is ignored.
    const std::string* provider = burst_ ? burst_->ProviderOf(node) : nullptr;
    const bool provided = provider != nullptr && *provider == backend_set_->name(member);
    if (backend_set_->OwnerOf(node) != member && !provided) {
      LogWarning(options_.log,
                 "backend '{}' sent a spot interruption for node '{}', which it neither "
                 "owns nor added; ignored",
                 backend_set_->name(member), node);
      return;
    }
    if (burst_) burst_->Interrupted(node);
    const int64_t left_s = std::max<int64_t>(0, (deadline_us - clock_->NowUs()) / 1'000'000);
    engine_->InterruptNode(node, "spot interruption reported by backend '" +
                                     backend_set_->name(member) + "': " + why +
                                     " (node leaves in " + std::to_string(left_s) + " s)");
  };
  // A partitioner of another backend's nodes: its start and result go to the node's owner.
  host.on_foreign_partition_started = [this](const std::string& node, int gpu) {
    const BackendSet::Member owner = backend_set_->OwnerOf(node);
    if (owner >= 0) backends_[owner]->executor()->PartitionUnderWay(node, gpu);
  };
  host.on_foreign_partition_result = [this, member](const std::string& node, int gpu,
                                                    const v1::PartitionLayoutResult& result) {
    const BackendSet::Member owner = backend_set_->OwnerOf(node);
    if (owner < 0 || owner == member) return;  // the node left (or is the partitioner's own).
    backends_[owner]->executor()->TakePartitionResult(node, gpu, result);
  };
  host.on_foreign_partition_failed = [this, member](const std::string& node, int gpu,
                                                    const std::string& why) {
    const BackendSet::Member owner = backend_set_->OwnerOf(node);
    if (owner < 0 || owner == member) return;
    backends_[owner]->executor()->PartitionFailed(node, gpu, why);
  };
  host.on_job_submitted = [this, member](const v1::JobSpec& job, const std::string& external_id) {
    SubmitFromBackend(backend_set_->name(member), job, external_id);
  };
  host.on_job_withdrawn = [this, member](const std::string& external_id) {
    WithdrawFromBackend(backend_set_->name(member), external_id);
  };
  host.on_lost = [this, member](const std::string& why) {
    engine_->LoseNodes(backend_set_->NodesOf(member),
                       "backend '" + backend_set_->name(member) + "' failed: " + why);
  };
  host.on_restarted = [this, member](PluginExecutor* fresh, const InventoryDiff& diff,
                                     const std::vector<TaskRef>& live) {
    const std::set<TaskRef> forgotten = backend_set_->ForgetTasks(member);
    backend_set_->Replace(member, fresh);
    backend_set_->TakeLiveTasks(member, live);
    InventoryDiff change = backend_set_->TakeChange(member, diff);
    TakeBurstNodes(member, change.added, /*added=*/true);
    TakeBurstNodes(member, change.changed, /*added=*/false);
    TakeInventoryChange(change, backend_set_->name(member));
    if (burst_) burst_->TakeLeft(change.removed);
    engine_->RegainNodes(backend_set_->NodesOf(member), forgotten, live);
  };
  return host;
}

Status SchedulerImpl::OpenBackends() {
  const std::vector<BackendOptions> list = BackendList(options_);
  backend_set_ = std::make_unique<BackendSet>(*engine_, options_.log);
  std::map<std::string, BackendSet::Member> by_name;
  for (size_t i = 0; i < list.size(); ++i) {
    const BackendSet::Member member = static_cast<BackendSet::Member>(i);
    StatusOr<std::unique_ptr<PluginBackend>> opened =
        PluginBackend::Open(list[i], options_.plugin_dirs, BackendHost(member));
    if (!opened.ok()) return opened.status().WithContext(BackendField(options_, i));
    PluginBackend& backend = **opened;
    if (!by_name.emplace(backend.name(), member).second) {
      return InvalidFieldError(BackendField(options_, i) + ".name",
                               "backend '" + backend.name() +
                                   "' is named twice (two backends of one plugin need names)");
    }
    backend_set_->Add(backend.name(), backend.executor());
    backends_.push_back(std::move(*opened));
  }
  // Partitioners, once every name is known.
  std::set<BackendSet::Member> partitioned;
  for (size_t i = 0; i < list.size(); ++i) {
    const PluginInfo& info = backends_[i]->info();
    if (info.partitioner && !info.executor && !info.capacity_provider &&
        list[i].partitions.empty()) {
      return InvalidFieldError(BackendField(options_, i) + ".partitions",
                               "plugin '" + info.name +
                                   "' only partitions (its kinds lack "
                                   "TESSERA_PLUGIN_KIND_EXECUTOR): name the backends whose GPUs "
                                   "it shapes");
    }
    for (size_t j = 0; j < list[i].partitions.size(); ++j) {
      const std::string field =
          BackendField(options_, i) + ".partitions[" + std::to_string(j) + "]";
      const std::string& other = list[i].partitions[j];
      auto found = by_name.find(other);
      if (found == by_name.end()) {
        return InvalidFieldError(field, "no backend is named '" + other + "'");
      }
      if (!backends_[i]->info().partitioner) {
        return InvalidFieldError(field, "plugin '" + backends_[i]->info().name +
                                            "' is not a partitioner (its kinds lack "
                                            "TESSERA_PLUGIN_KIND_PARTITIONER)");
      }
      if (!partitioned.insert(found->second).second) {
        return InvalidFieldError(field, "backend '" + other + "' has another partitioner");
      }
      backend_set_->SetPartitioner(found->second, static_cast<BackendSet::Member>(i));
    }
  }
  for (size_t i = 0; i < backends_.size(); ++i) {
    const BackendSet::Member member = static_cast<BackendSet::Member>(i);
    backend_set_->TakeInventory(member, backends_[i]->first_inventory());
    backend_set_->TakeLiveTasks(member, backends_[i]->first_live_tasks());
    backends_[i]->executor()->Poll();
  }
  executor_ = backend_set_.get();
  return OpenBurst();
}

void SchedulerImpl::TakeInventoryChange(const InventoryDiff& diff, const std::string& backend) {
  if (diff.empty()) return;
  const Status status = engine_->ApplyInventoryChange(diff, backend);
  if (!status.ok()) LogWarning(options_.log, "inventory change: {}", status.message());
  if (diff.added.empty()) return;
  // A node that comes back keeps what an operator set for it (cordon, drain) before it left.
  std::vector<store::NodeFlags> flags;
  const Status loaded = store_->LoadNodeFlags(&flags);
  if (!loaded.ok()) {
    LogWarning(options_.log, "node flags of joining nodes not read: {}", loaded.message());
    return;
  }
  for (const store::NodeFlags& f : flags) {
    const bool joined = std::any_of(diff.added.begin(), diff.added.end(),
                                    [&f](const v1::NodeSpec& n) { return n.name() == f.name; });
    if (joined && engine_->HasNode(f.name)) {
      (void)engine_->SetNodeFlags(f.name, f.cordoned, f.draining);
    }
  }
}

Status SchedulerImpl::Recover(const std::vector<v1::NodeSpec>& nodes) {
  if (!options_.backends.empty() || options_.executor_plugin) {
    TESSERA_RETURN_IF_ERROR(OpenBackends());
  } else {
    simulation_ = std::make_unique<SimulatedExecutor>(nodes, engine_->timers(), *clock_, *engine_);
    executor_ = simulation_.get();
  }
  engine_->SetExecutor(executor_);

  // The decision thread is not running yet, so the engine is used directly here.
  std::vector<v1::NodeSpec> inventory = executor_->Inventory();
  if (burst_) {
    // Nodes a capacity provider still has (after a restart) are burst nodes again, by their
    // group label or their provider's names.
    for (v1::NodeSpec& node : inventory) {
      std::vector<v1::NodeSpec> one{node};
      TakeBurstNodes(backend_set_->OwnerOf(node.name()), one, /*added=*/false);
      node = std::move(one[0]);
    }
  }
  TESSERA_RETURN_IF_ERROR(engine_->AddNodes(inventory));
  std::vector<store::NodeFlags> flags;
  TESSERA_RETURN_IF_ERROR(store_->LoadNodeFlags(&flags));
  for (const store::NodeFlags& f : flags) {
    if (engine_->HasNode(f.name)) {
      TESSERA_RETURN_IF_ERROR(engine_->SetNodeFlags(f.name, f.cordoned, f.draining));
    }
  }

  std::vector<v1::QueueSpec> queues;
  TESSERA_RETURN_IF_ERROR(store_->LoadQueues(&queues));
  if (queues.empty() && !options_.default_queue.empty()) {
    v1::QueueSpec spec;
    spec.set_name(options_.default_queue);
    spec.set_weight(1);
    const TimestampUs now = clock_->NowUs();
    TESSERA_RETURN_IF_ERROR(store_->WriteAndWait([spec, now](store::WriteTransaction& t) {
      TESSERA_RETURN_IF_ERROR(t.PutQueue(spec));
      v1::Event event;
      event.set_time_us(now);
      event.set_kind(v1::QUEUE_CREATED);
      event.set_queue(spec.name());
      event.set_reason("default queue");
      return t.AppendEvent(event).status();
    }));
    queues.push_back(spec);
  }
  // Sorted by name, so parents come before their children.
  for (const v1::QueueSpec& spec : queues) {
    Status status = engine_->CreateQueue(spec);
    if (!status.ok()) return status.WithContext("reloading queue '" + spec.name() + "'");
    if (burst_) burst_->SetQueueBudget(spec.name(), spec.burst_budget());
  }
  if (burst_) burst_->RefreshRefusals();

  const std::vector<TaskRef> live_tasks = executor_->LiveTasks();
  const std::set<TaskRef> live(live_tasks.begin(), live_tasks.end());
  TESSERA_RETURN_IF_ERROR(
      store_->LoadLiveJobs([&](v1::Job&& job) { engine_->AddJob(job, &live); }));
  engine_->StopSupersededTasks(live_tasks);

  if (!clock_->IsRealTime()) {
    clock_listener_ =
        clock_->AddAdvanceListener([this] { Post([this] { engine_->OnTimeAdvanced(); }); });
  }
  decision_thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "tessera-decide");
    auto guard = boost::asio::make_work_guard(io_);
    io_.run();
  });
  // What reconciling changed (jobs whose tasks are gone, requeued or failed) is durable before
  // Open returns, so the first read after it shows the reconciled state.
  Call<bool>(
      [this] {
        FlushPersists();
        return true;
      },
      false);
  store_->Flush();
  Post([this] { RequestDecisions(); });
  if (options_.retention.enabled()) {
    retention_ =
        std::make_unique<RetentionSweeper>(options_.retention, *store_, *clock_, options_.log);
  }
  return Status::Ok();
}

SchedulerImpl::~SchedulerImpl() {
  Close();
  engine_.reset();
  executor_ = nullptr;
  backends_.clear();
  backend_set_.reset();
  simulation_.reset();
  event_watches_.reset();
  store_.reset();
}

void SchedulerImpl::Close() {
  if (closing_.exchange(true)) return;
  // Callers blocked in WatchEvents, and open watches, get UNAVAILABLE now rather than at the
  // end of their wait.
  if (store_) store_->StopEventWaits();
  if (event_watches_) event_watches_->FinishAll();
  // A restart under way finishes (and is dropped); none starts after. The backends stay: the
  // strand may still read them.
  for (const std::unique_ptr<PluginBackend>& backend : backends_) backend->StopRestarts();
  // A batch under way commits; none starts after.
  if (retention_) retention_->Stop();
  if (clock_listener_) clock_->RemoveAdvanceListener(clock_listener_);
  if (decision_thread_.joinable()) {
    Call<bool>(
        [this] {
          engine_->Pause();
          timer_.cancel();
          return true;
        },
        false);
    // Writes in flight commit; their follow-ups run on the strand before it stops, and what
    // those follow-ups write still reaches the store.
    store_->Flush();
    Call<bool>(
        [this] {
          FlushPersists();
          return true;
        },
        false);
    {
      std::unique_lock<std::shared_mutex> lock(strand_calls_mu_);
      strand_stopped_ = true;
    }
    io_.stop();
    decision_thread_.join();
  }
}

Status SchedulerImpl::CheckOpen() const {
  if (closing_) return ShuttingDown();
  return Status::Ok();
}

// --- Strand plumbing ---------------------------------------------------------------------------

void SchedulerImpl::Post(std::function<void()> fn) {
  ++posted_;
  boost::asio::post(strand_, [this, fn = std::move(fn)] {
    fn();
    // Counted out before AfterStrandTask, so that posted_ there is the tasks still queued.
    --posted_;
    AfterStrandTask();
  });
}

void SchedulerImpl::AfterStrandTask() {
  ArmTimer();
  if (!gathered_persists_.empty() && !persist_flush_posted_) {
    // Posted, not run here: the tasks already queued (the timer task ArmTimer just posted, say)
    // add their writes to the same store write.
    persist_flush_posted_ = true;
    Post([this] {
      persist_flush_posted_ = false;
      FlushPersists();
    });
  }
}

void SchedulerImpl::RequestDecisions() {
  if (decisions_posted_) return;
  decisions_posted_ = true;
  Post([this] { RunDecisionPass(); });
}

void SchedulerImpl::RunDecisionPass() {
  decisions_posted_ = false;
  // On a virtual clock a pass runs to its end: where a slice of real time would cut it depends
  // on the machine, and so would the decisions and events that follow.
  const auto deadline = clock_->IsRealTime()
                            ? std::chrono::steady_clock::now() + options_.engine.decision_slice
                            : std::chrono::steady_clock::time_point::max();
  if (engine_->RunDecisions(deadline)) RequestDecisions();
}

void SchedulerImpl::ArmTimer() {
  const std::optional<TimestampUs> next = engine_->timers().NextDeadline();
  if (!next) return;
  const TimestampUs now = clock_->NowUs();
  if (*next <= now) {
    if (!time_post_pending_) {
      time_post_pending_ = true;
      Post([this] {
        time_post_pending_ = false;
        engine_->OnTimeAdvanced();
      });
    }
    return;
  }
  if (!clock_->IsRealTime()) return;  // the manual clock's listener wakes us.
  // A queued task checks for due timers again when it ends, so while the strand has work the
  // timer need not be set: re-setting it at every task cost a system call each time.
  if (posted_.load(std::memory_order_relaxed) > 0) return;
  if (armed_deadline_ && *armed_deadline_ <= *next) return;
  armed_deadline_ = *next;
  timer_.expires_after(std::chrono::microseconds(*next - now));
  timer_.async_wait(
      boost::asio::bind_executor(strand_, [this](const boost::system::error_code& ec) {
        armed_deadline_.reset();
        if (ec) return;
        engine_->OnTimeAdvanced();
        AfterStrandTask();
      }));
}

void SchedulerImpl::WaitIdle() {
  // Quiet means: no strand task queued, no store write outstanding, and no decision possible.
  // Each part can create work for another, so check until all are quiet at once: a round is
  // quiet only if no write was enqueued while it ran (a write's follow-up could otherwise be
  // posted after the strand was checked).
  auto pause = std::chrono::microseconds(50);
  while (true) {
    const uint64_t writes_before = store_->WritesEnqueued();
    store_->Flush();
    bool backend_busy = false;
    const bool engine_busy = Call<bool>(
        [this, &backend_busy] {
          const std::optional<TimestampUs> next = engine_->timers().NextDeadline();
          // Calls still running in a backend plugin will report back to the strand, and so will
          // a plugin restart under way. (The backends are read here: a restart swaps their
          // executors on the strand.) Read before the queued tasks: a call that ends in between
          // has posted its report by then.
          backend_busy = executor_->Busy();
          for (const std::unique_ptr<PluginBackend>& backend : backends_) {
            backend_busy = backend_busy || backend->Busy();
          }
          const int64_t other_tasks = posted_.load() - 1;  // all but this one.
          return other_tasks > 0 || engine_->HasDecisionWork() || decisions_posted_ ||
                 (next && *next <= clock_->NowUs());
        },
        /*if_closed=*/false);
    if (!engine_busy && !backend_busy && store_->WritesEnqueued() == writes_before &&
        store_->Idle()) {
      return;
    }
    // Back off while work goes on, so that waiting does not take CPU from it.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

std::optional<TimestampUs> SchedulerImpl::NextWakeupUs() {
  return Call<std::optional<TimestampUs>>([this] { return engine_->timers().NextWakeup(); },
                                          std::nullopt);
}

// --- EngineHost ---------------------------------------------------------------------------------

void SchedulerImpl::Persist(JobUpdate update, std::function<void(const Status&)> durable) {
  gathered_persists_.push_back({std::move(update), std::move(durable)});
  if (gathered_persists_.size() >= kMaxGatheredPersists) FlushPersists();
}

void SchedulerImpl::PersistEvent(v1::Event event) {
  SerializedEvent serialized;
  serialized.time_us = event.time_us();
  SerializeInto(event, &serialized.bytes);
  JobUpdate update;
  update.AddEvent(serialized);
  gathered_persists_.push_back({std::move(update), nullptr});
  if (gathered_persists_.size() >= kMaxGatheredPersists) FlushPersists();
}

void SchedulerImpl::FlushPersists() {
  if (gathered_persists_.empty()) return;
  // The engine serialized its updates on this thread, so the store writer (the busier thread)
  // only binds bytes. The engine's own transitions cannot fail one by one (only the store as a
  // whole can), so they share one write without a savepoint, and each job's row is written
  // once, with its last status.
  auto batch = std::make_shared<std::vector<PendingPersist>>();
  if (!spare_persist_buffers_.empty()) {
    batch->swap(spare_persist_buffers_.back());
    spare_persist_buffers_.pop_back();
  } else {
    // Not kMaxGatheredPersists: most writes hold a few updates, and when more writes are in
    // flight than spares are kept (the store behind, at saturation), each fresh buffer of the
    // full size (~450 KiB) cost page faults.
    batch->reserve(kFreshPersistBuffer);
  }
  batch->swap(gathered_persists_);
  const TimestampUs now = clock_->NowUs();
  // The callbacks run on the strand, in order; the updates are freed there too (on the thread
  // that allocated them) and the emptied buffer is kept for reuse. An event that concerns no
  // job is not retried (the engine keeps nothing waiting on it).
  auto after_commit = [this, batch](const Status& status) {
    for (PendingPersist& p : *batch) {
      if (status.ok()) {
        if (p.durable) p.durable(status);
      } else if (p.update.job_id != 0) {
        engine_->PersistFailed(status, std::move(p.update), std::move(p.durable));
      }
    }
    batch->clear();
    if (spare_persist_buffers_.size() < kMaxSparePersistBuffers) {
      spare_persist_buffers_.push_back(std::move(*batch));
    }
  };
  // On a virtual clock the strand waits for the commit and then queues what follows it itself,
  // so that launches and their reports come at a point fixed by the strand's order rather than
  // by when the store thread finishes: the same inputs give the same event log. On the real
  // clock the strand goes on deciding while the store commits.
  const bool wait_for_commit = !clock_->IsRealTime();
  auto committed = wait_for_commit ? std::make_shared<Waiter<Status>>() : nullptr;
  store_->Write(
      [batch, now](store::WriteTransaction& t) -> Status {
        std::vector<store::WriteTransaction::EventRow> events;
        events.reserve(batch->size() + batch->size() / 4);
        for (const PendingPersist& p : *batch) {
          const JobUpdate& update = p.update;
          // The batch outlives the transaction: the bytes are bound, not copied.
          if (update.job_id != 0) {
            t.DeferJobStatus(update.job_id, update.state, update.status(), now);
          }
          for (size_t i = 0; i < update.event_count(); ++i) {
            events.push_back({update.event_time_us(i), update.job_id, update.event(i)});
          }
        }
        return t.AppendSerializedEvents(events);
      },
      [this, after_commit, committed](const Status& status) {
        if (committed) {
          committed->Set(status);
        } else {
          Post([after_commit, status] { after_commit(status); });
        }
      },
      store::WriteKind::kTransition);
  if (committed) {
    // Posted from here rather than run here: a flush may come from inside the engine (Persist,
    // when many writes have gathered), which must not be re-entered.
    Post([after_commit, status = committed->Wait()] { after_commit(status); });
  }
}

void SchedulerImpl::InventoryChanged(std::shared_ptr<const FeasibilityChecker> feasibility) {
  std::lock_guard<std::mutex> lock(feasibility_mu_);
  feasibility_ = std::move(feasibility);
}

}  // namespace tessera
