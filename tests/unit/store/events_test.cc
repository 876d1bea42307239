// The event log: gap-free sequence numbers (across failed writes and reopens), LastEventSeq,
// and ReadEvents' slicing and waiting.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "store/store.h"
#include "store_test_util.h"

namespace tessera::store::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

v1::Event QueueEvent(const std::string& queue) {
  v1::Event event;
  event.set_kind(v1::QUEUE_CREATED);
  event.set_queue(queue);
  event.set_time_us(5);
  return event;
}

TEST_CASE("store: event sequence numbers start at 1 and are gap-free") {
  TempDir dir;
  const StoreOptions options = OptionsIn(dir);
  {
    std::unique_ptr<Store> store = OpenStore(options);
    CHECK(store->LastEventSeq() == 0);
    CHECK(AppendEvents(*store, {QueueEvent("a")}) == std::vector<uint64_t>{1});
    CHECK(store->LastEventSeq() == 1);
    CHECK(AppendEvents(*store, {QueueEvent("b"), QueueEvent("c"), QueueEvent("d")}) ==
          std::vector<uint64_t>{2, 3, 4});
    CHECK(store->LastEventSeq() == 4);

    // A write that appended two events and then failed gives its numbers back.
    uint64_t seq_seen_by_failed = 0;
    Status failed = store->WriteAndWait([&](WriteTransaction& txn) -> Status {
      v1::Event e1 = QueueEvent("lost-1"), e2 = QueueEvent("lost-2");
      TESSERA_RETURN_IF_ERROR(txn.AppendEvent(e1).status());
      TESSERA_ASSIGN_OR_RETURN(seq_seen_by_failed, txn.AppendEvent(e2));
      return InternalError("changed my mind");
    });
    CHECK(failed.code() == StatusCode::kInternal);
    CHECK(seq_seen_by_failed == 6);
    CHECK(store->LastEventSeq() == 4);
    CHECK(AppendEvents(*store, {QueueEvent("e")}) == std::vector<uint64_t>{5});

    // A failed write between two good ones in the same batch: the second good one continues
    // right after the first.
    std::vector<uint64_t> seqs;
    std::vector<uint64_t> seen(10, 0);
    std::mutex mu;
    auto append = [&](int i, bool fail) {
      store->Write(
          [&, i, fail](WriteTransaction& txn) -> Status {
            v1::Event event = QueueEvent("batch-" + std::to_string(i));
            // A write may run more than once (see GroupCommit): the last run's number counts.
            TESSERA_ASSIGN_OR_RETURN(seen[i], txn.AppendEvent(event));
            if (fail) return InternalError("fail");
            return Status::Ok();
          },
          [&, i](const Status& status) {
            if (!status.ok()) return;
            std::lock_guard<std::mutex> lock(mu);
            seqs.push_back(seen[i]);
          });
    };
    for (int i = 0; i < 10; ++i) append(i, i % 3 == 1);
    store->Flush();
    CHECK(seqs == std::vector<uint64_t>{6, 7, 8, 9, 10, 11, 12});
    CHECK(store->LastEventSeq() == 12);
  }
  {
    // Reopening continues from the last committed number.
    std::unique_ptr<Store> store = OpenStore(options);
    CHECK(store->LastEventSeq() == 12);
    CHECK(AppendEvents(*store, {QueueEvent("after-reopen")}) == std::vector<uint64_t>{13});
    std::vector<v1::Event> events = AllEvents(*store);
    REQUIRE(events.size() == 13);
    for (size_t i = 0; i < events.size(); ++i) {
      CAPTURE(i);
      CHECK(events[i].seq() == i + 1);
      CHECK(events[i].queue().rfind("lost", 0) != 0);
    }
    CHECK(events[0].queue() == "a");
    CHECK(events[4].queue() == "e");
    CHECK(events[12].queue() == "after-reopen");
  }
}

TEST_CASE("store: serialized events appended many per statement keep order and numbering") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  CHECK(AppendEvents(*store, {QueueEvent("q1")}) == std::vector<uint64_t>{1});
  // 37 rows: two statements of 16, then five one by one.
  std::vector<std::string> payloads;
  for (int i = 2; i <= 38; ++i)
    payloads.push_back(QueueEvent("q" + std::to_string(i)).SerializeAsString());
  REQUIRE(store
              ->WriteAndWait([&](WriteTransaction& txn) -> Status {
                std::vector<WriteTransaction::EventRow> rows;
                for (size_t i = 0; i < payloads.size(); ++i) {
                  rows.push_back(
                      {static_cast<int64_t>(100 + i), i % 3 == 0 ? 0 : 1000 + i, payloads[i]});
                }
                TESSERA_RETURN_IF_ERROR(txn.AppendSerializedEvents(rows));
                if (txn.next_event_seq() != 39) return InternalError("seq did not advance by 37");
                return Status::Ok();
              })
              .ok());
  CHECK(AppendEvents(*store, {QueueEvent("q39")}) == std::vector<uint64_t>{39});
  CHECK(store->LastEventSeq() == 39);
  StatusOr<std::vector<v1::Event>> events = store->ReadEvents(0, 100, milliseconds(0));
  REQUIRE(events.ok());
  REQUIRE(events->size() == 39);
  for (const v1::Event& e : *events) CHECK(e.queue() == "q" + std::to_string(e.seq()));
  CHECK(QueryInt(store->path(), "SELECT COUNT(*) FROM events WHERE job_id IS NULL") == 2 + 13);
  CHECK(QueryInt(store->path(), "SELECT job_id FROM events WHERE seq = 3") == 1001);
  CHECK(QueryInt(store->path(), "SELECT time_us FROM events WHERE seq = 38") == 136);
}

TEST_CASE("store: ReadEvents returns the requested slice") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  std::vector<v1::Event> to_append;
  for (int i = 1; i <= 25; ++i) to_append.push_back(QueueEvent("q" + std::to_string(i)));
  AppendEvents(*store, to_append);

  auto read = [&](uint64_t after, int max) {
    StatusOr<std::vector<v1::Event>> events = store->ReadEvents(after, max, milliseconds(0));
    REQUIRE_MESSAGE(events.ok(), events.status().ToString());
    std::vector<uint64_t> seqs;
    for (const v1::Event& e : *events) {
      CHECK(e.queue() == "q" + std::to_string(e.seq()));  // payload matches its number.
      seqs.push_back(e.seq());
    }
    return seqs;
  };
  CHECK(read(0, 3) == std::vector<uint64_t>{1, 2, 3});
  CHECK(read(10, 4) == std::vector<uint64_t>{11, 12, 13, 14});
  CHECK(read(22, 100) == std::vector<uint64_t>{23, 24, 25});
  CHECK(read(24, 1) == std::vector<uint64_t>{25});
  CHECK(read(25, 10).empty());
  CHECK(read(1000, 10).empty());
  CHECK(read(0, 1000).size() == 25);

  CHECK(store->ReadEvents(0, 0, milliseconds(0)).status().code() == StatusCode::kInvalidArgument);
  CHECK(store->ReadEvents(0, -5, milliseconds(0)).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("store: ReadEvents waits for the requested time when nothing arrives") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  AppendEvents(*store, {QueueEvent("a"), QueueEvent("b")});

  const auto start = Clock::now();
  StatusOr<std::vector<v1::Event>> events = store->ReadEvents(2, 10, milliseconds(200));
  const auto waited = Clock::now() - start;
  REQUIRE(events.ok());
  CHECK(events->empty());
  CHECK(waited >= milliseconds(190));
  CHECK(waited < milliseconds(2000));

  // With events already there it does not wait at all.
  const auto start2 = Clock::now();
  events = store->ReadEvents(1, 10, milliseconds(5000));
  REQUIRE(events.ok());
  REQUIRE(events->size() == 1);
  CHECK((*events)[0].seq() == 2);
  CHECK(Clock::now() - start2 < milliseconds(1000));
}

TEST_CASE("store: ReadEvents wakes as soon as an event is committed") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  AppendEvents(*store, {QueueEvent("before")});

  Status flags_status, events_status;
  const auto start = Clock::now();  // the events come at least 150 ms after this.
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(100));
    // A write without events does not wake the reader with nothing...
    flags_status =
        store->WriteAndWait([](WriteTransaction& txn) { return txn.PutNodeFlags("n", 1, 0); });
    std::this_thread::sleep_for(milliseconds(50));
    events_status = store->WriteAndWait([](WriteTransaction& txn) -> Status {
      v1::Event first = QueueEvent("wake-up"), second = QueueEvent("and-this");
      TESSERA_RETURN_IF_ERROR(txn.AppendEvent(first).status());
      return txn.AppendEvent(second).status();
    });
  });
  StatusOr<std::vector<v1::Event>> events = store->ReadEvents(1, 10, milliseconds(10000));
  const auto waited = Clock::now() - start;
  writer.join();
  CHECK(flags_status.ok());
  CHECK(events_status.ok());
  REQUIRE(events.ok());
  REQUIRE(events->size() == 2);
  CHECK((*events)[0].seq() == 2);
  CHECK((*events)[0].queue() == "wake-up");
  CHECK((*events)[1].seq() == 3);
  CHECK(waited >= milliseconds(140));  // ...only the event does.
  CHECK(waited < milliseconds(5000));
}

// Writers take an event's time before the writer orders it (a submit on its client's thread,
// the engine on its strand), so an event may carry an earlier time than the one committed
// before it; the wall clock may also step back between runs. Times along the log never go
// back: an earlier time is raised to the time before it, in one write, across writes, in the
// multi-row insert and across a reopen.
TEST_CASE("store: event times never go back along the log") {
  TempDir dir;
  const StoreOptions options = OptionsIn(dir);
  auto at = [](int64_t time_us) {
    v1::Event event = QueueEvent("q");
    event.set_time_us(time_us);
    return event;
  };
  {
    std::unique_ptr<Store> store = OpenStore(options);
    AppendEvents(*store, {at(100), at(90), at(120)});
    AppendEvents(*store, {at(110)});
    // More rows than one multi-row insert takes (16), every second one earlier than the one
    // before it.
    std::vector<int64_t> times;
    for (int k = 0; k < 20; ++k) times.push_back(130 + 10 * (k / 2) - 5 * (k % 2));
    std::vector<std::string> payloads;
    for (int64_t t : times) payloads.push_back(at(t).SerializeAsString());
    std::vector<WriteTransaction::EventRow> rows;
    for (size_t i = 0; i < times.size(); ++i) rows.push_back({times[i], 0, payloads[i]});
    const Status written = store->WriteAndWait(
        [&](WriteTransaction& txn) { return txn.AppendSerializedEvents(rows); });
    REQUIRE(written.ok());
  }
  std::unique_ptr<Store> store = OpenStore(options);
  AppendEvents(*store, {at(50)});  // the clock stepped back while the store was closed.
  std::vector<int64_t> seen;
  for (const v1::Event& e : AllEvents(*store)) seen.push_back(e.time_us());
  REQUIRE(seen.size() == 4 + 20 + 1);
  CHECK(std::vector<int64_t>(seen.begin(), seen.begin() + 4) ==
        std::vector<int64_t>{100, 100, 120, 120});
  for (int k = 0; k < 20; ++k) {
    INFO("row ", k);
    CHECK(seen[4 + k] == 130 + 10 * (k / 2));  // the earlier ones raised to the one before.
  }
  CHECK(seen.back() == 220);  // the last row's time, not the stepped-back 50.
}

}  // namespace
}  // namespace tessera::store::testing
