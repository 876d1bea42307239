// Helpers shared by the store tests: opening a store in a TempDir, building jobs and events,
// write operations that insert them, and reading state back (through the Store's own API or a
// separate SQLite connection, to check what is really in the file).
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "store/sqlite.h"
#include "store/store.h"
#include "support/temp_dir.h"

namespace tessera::store::testing {

using tessera::testing::TempDir;

inline StoreOptions OptionsIn(const TempDir& dir, const std::string& name = "store.db",
                              bool durable = false) {
  StoreOptions options;
  options.path = dir.File(name);
  options.durable = durable;
  return options;
}

inline std::unique_ptr<Store> OpenStore(const StoreOptions& options) {
  StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  REQUIRE_MESSAGE(store.ok(), store.status().ToString());
  return std::move(*store);
}

inline v1::Job MakeJob(const std::string& queue, v1::JobState state = v1::PENDING,
                       const std::string& idempotency_key = "",
                       const std::map<std::string, std::string>& labels = {}) {
  v1::Job job;
  job.set_idempotency_key(idempotency_key);
  job.mutable_spec()->set_name("job-in-" + queue);
  job.mutable_spec()->set_queue(queue);
  job.mutable_spec()->mutable_task()->set_cpu_milli(1000);
  job.mutable_spec()->mutable_task()->set_memory_mib(512);
  for (const auto& [key, value] : labels) (*job.mutable_spec()->mutable_labels())[key] = value;
  job.mutable_status()->set_state(state);
  job.mutable_status()->set_submit_time_us(1'000'000);
  return job;
}

inline v1::Event JobEvent(uint64_t job_id, v1::JobState to_state = v1::PENDING,
                          const std::string& reason = "") {
  v1::Event event;
  event.set_kind(v1::JOB_STATE_CHANGED);
  event.set_job_id(job_id);
  event.set_to_state(to_state);
  event.set_time_us(2'000'000);
  event.set_reason(reason);
  return event;
}

// Inserts `job` and, when `with_event`, a JOB_STATE_CHANGED event for it; stores the new id in
// `*id` (written on the writer thread: read it only after the write has finished).
inline WriteFn InsertJobOp(v1::Job job, uint64_t* id = nullptr, bool with_event = false) {
  return [job = std::move(job), id, with_event](WriteTransaction& txn) -> Status {
    StatusOr<uint64_t> inserted = txn.InsertJob(job, 0, 3'000'000);
    if (!inserted.ok()) return inserted.status();
    if (id) *id = *inserted;
    if (with_event) {
      v1::Event event = JobEvent(*inserted, job.status().state());
      StatusOr<uint64_t> seq = txn.AppendEvent(event);
      if (!seq.ok()) return seq.status();
    }
    return Status::Ok();
  };
}

// Inserts `job` (and an event for it when `with_event`) and returns its id; fails the test when
// the write fails.
inline uint64_t InsertJob(Store& store, const v1::Job& job, bool with_event = false) {
  uint64_t id = 0;
  Status status = store.WriteAndWait(InsertJobOp(job, &id, with_event));
  REQUIRE_MESSAGE(status.ok(), status.ToString());
  REQUIRE(id > 0);
  return id;
}

// Appends one event per entry of `events` in a single write; returns their sequence numbers.
inline std::vector<uint64_t> AppendEvents(Store& store, std::vector<v1::Event> events) {
  std::vector<uint64_t> seqs;
  Status status = store.WriteAndWait([&](WriteTransaction& txn) -> Status {
    for (v1::Event& event : events) {
      StatusOr<uint64_t> seq = txn.AppendEvent(event);
      if (!seq.ok()) return seq.status();
      seqs.push_back(*seq);
    }
    return Status::Ok();
  });
  REQUIRE_MESSAGE(status.ok(), status.ToString());
  return seqs;
}

inline std::vector<v1::Job> LiveJobs(Store& store) {
  std::vector<v1::Job> jobs;
  Status status = store.LoadLiveJobs([&](v1::Job&& job) { jobs.push_back(std::move(job)); });
  REQUIRE_MESSAGE(status.ok(), status.ToString());
  return jobs;
}

// Every job, through ListJobs pages.
inline std::vector<v1::Job> AllJobs(Store& store) {
  std::vector<v1::Job> jobs;
  v1::ListJobsRequest request;
  request.set_page_size(1000);
  for (int pages = 0; pages < 10000; ++pages) {
    StatusOr<v1::ListJobsResponse> page = store.ListJobs(request);
    REQUIRE_MESSAGE(page.ok(), page.status().ToString());
    for (const v1::Job& job : page->jobs()) jobs.push_back(job);
    if (page->next_page_token().empty()) break;
    request.set_page_token(page->next_page_token());
  }
  return jobs;
}

// Every event, without waiting.
inline std::vector<v1::Event> AllEvents(Store& store) {
  std::vector<v1::Event> events;
  uint64_t after = 0;
  while (true) {
    StatusOr<std::vector<v1::Event>> batch =
        store.ReadEvents(after, 1000, std::chrono::milliseconds(0));
    REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
    if (batch->empty()) return events;
    after = batch->back().seq();
    for (v1::Event& event : *batch) events.push_back(std::move(event));
  }
}

// Runs a one-row, one-column query on a separate connection to the file at `path`.
inline int64_t QueryInt(const std::string& path, const std::string& sql) {
  StatusOr<std::unique_ptr<Database>> db = Database::Open(path);
  REQUIRE_MESSAGE(db.ok(), db.status().ToString());
  StatusOr<std::unique_ptr<Statement>> s = (*db)->PrepareUncached(sql);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  StatusOr<bool> row = (*s)->Step();
  REQUIRE_MESSAGE(row.ok(), row.status().ToString());
  REQUIRE(*row);
  return (*s)->ColumnInt(0);
}

inline std::string QueryText(const std::string& path, const std::string& sql) {
  StatusOr<std::unique_ptr<Database>> db = Database::Open(path);
  REQUIRE_MESSAGE(db.ok(), db.status().ToString());
  StatusOr<std::unique_ptr<Statement>> s = (*db)->PrepareUncached(sql);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  StatusOr<bool> row = (*s)->Step();
  REQUIRE_MESSAGE(row.ok(), row.status().ToString());
  REQUIRE(*row);
  return std::string((*s)->ColumnText(0));
}

}  // namespace tessera::store::testing
