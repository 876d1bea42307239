// Store::ListJobs: ordering, page sizes, page tokens and the queue, state and label filters.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "store/store.h"
#include "store_test_util.h"

namespace tessera::store::testing {
namespace {

// Inserts `count` jobs in queue `queue` in one write; returns their ids.
std::vector<uint64_t> InsertMany(Store& store, int count, const std::string& queue = "q") {
  std::vector<uint64_t> ids;
  Status status = store.WriteAndWait([&](WriteTransaction& txn) -> Status {
    for (int i = 0; i < count; ++i) {
      TESSERA_ASSIGN_OR_RETURN(uint64_t id, txn.InsertJob(MakeJob(queue), 0, 0));
      ids.push_back(id);
    }
    return Status::Ok();
  });
  REQUIRE_MESSAGE(status.ok(), status.ToString());
  return ids;
}

v1::ListJobsResponse List(Store& store, const v1::ListJobsRequest& request) {
  StatusOr<v1::ListJobsResponse> response = store.ListJobs(request);
  REQUIRE_MESSAGE(response.ok(), response.status().ToString());
  return *response;
}

std::vector<uint64_t> Ids(const v1::ListJobsResponse& response) {
  std::vector<uint64_t> ids;
  for (const v1::Job& job : response.jobs()) ids.push_back(job.id());
  return ids;
}

// Ids of every job matching `request`, following page tokens.
std::vector<uint64_t> ListAllIds(Store& store, v1::ListJobsRequest request) {
  std::vector<uint64_t> ids;
  for (int page = 0; page < 1000; ++page) {
    v1::ListJobsResponse response = List(store, request);
    for (uint64_t id : Ids(response)) ids.push_back(id);
    if (response.next_page_token().empty()) return ids;
    request.set_page_token(response.next_page_token());
  }
  FAIL("ListJobs kept returning page tokens");
  return ids;
}

TEST_CASE("store: ListJobs pages through jobs in id order") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  v1::ListJobsRequest request;
  v1::ListJobsResponse empty = List(*store, request);
  CHECK(empty.jobs_size() == 0);
  CHECK(empty.next_page_token().empty());

  const std::vector<uint64_t> ids = InsertMany(*store, 250);

  SUBCASE("the default page size is 100") {
    v1::ListJobsResponse first = List(*store, request);
    CHECK(Ids(first) == std::vector<uint64_t>(ids.begin(), ids.begin() + 100));
    CHECK_FALSE(first.next_page_token().empty());
    CHECK(first.jobs(0).spec().queue() == "q");  // whole records.
  }
  SUBCASE("pages cover every job exactly once, in order") {
    for (int page_size : {1, 7, 50, 100, 249, 250, 251, 1000}) {
      CAPTURE(page_size);
      request.set_page_size(page_size);
      request.clear_page_token();
      int pages = 0;
      std::vector<uint64_t> seen;
      while (true) {
        v1::ListJobsResponse response = List(*store, request);
        ++pages;
        CHECK(response.jobs_size() <= page_size);
        for (uint64_t id : Ids(response)) seen.push_back(id);
        if (response.next_page_token().empty()) break;
        CHECK(response.jobs_size() == page_size);
        request.set_page_token(response.next_page_token());
        REQUIRE(pages < 1000);
      }
      CHECK(seen == ids);
      // Only full pages end with a token, and the last page has none.
      CHECK(pages == (250 + page_size - 1) / page_size);
    }
  }
  SUBCASE("a token stays valid for jobs inserted later") {
    request.set_page_size(200);
    v1::ListJobsResponse first = List(*store, request);
    const std::vector<uint64_t> more = InsertMany(*store, 10);
    request.set_page_token(first.next_page_token());
    std::vector<uint64_t> rest = ListAllIds(*store, request);
    std::vector<uint64_t> expected(ids.begin() + 200, ids.end());
    expected.insert(expected.end(), more.begin(), more.end());
    CHECK(rest == expected);
  }
}

TEST_CASE("store: ListJobs page_size is at most 1000 and never negative") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  const std::vector<uint64_t> ids = InsertMany(*store, 1001);

  v1::ListJobsRequest request;
  request.set_page_size(1000);
  v1::ListJobsResponse first = List(*store, request);
  CHECK(first.jobs_size() == 1000);
  REQUIRE_FALSE(first.next_page_token().empty());
  request.set_page_token(first.next_page_token());
  v1::ListJobsResponse second = List(*store, request);
  CHECK(Ids(second) == std::vector<uint64_t>{ids.back()});
  CHECK(second.next_page_token().empty());

  for (int bad : {1001, -1, 1 << 30}) {
    CAPTURE(bad);
    v1::ListJobsRequest invalid;
    invalid.set_page_size(bad);
    StatusOr<v1::ListJobsResponse> response = store->ListJobs(invalid);
    REQUIRE_FALSE(response.ok());
    CHECK(response.status().code() == StatusCode::kInvalidArgument);
    CHECK(response.status().message().find("page_size") != std::string::npos);
  }
}

TEST_CASE("store: ListJobs rejects page tokens it did not hand out") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  InsertMany(*store, 3);
  for (const char* bad : {"abc", "12abc", "-1", " 1", "1.5", "99999999999999999999999"}) {
    CAPTURE(bad);
    v1::ListJobsRequest request;
    request.set_page_token(bad);
    StatusOr<v1::ListJobsResponse> response = store->ListJobs(request);
    REQUIRE_FALSE(response.ok());
    CHECK(response.status().code() == StatusCode::kInvalidArgument);
    CHECK(response.status().message().find("page_token") != std::string::npos);
  }
}

TEST_CASE("store: ListJobs filters by queue, exactly or by subtree") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  const uint64_t team = InsertMany(*store, 1, "team")[0];
  const uint64_t teamx = InsertMany(*store, 1, "teamx")[0];
  const uint64_t team_x = InsertMany(*store, 1, "team/x")[0];
  const uint64_t team_dash = InsertMany(*store, 1, "team-a")[0];
  const uint64_t team_x_y = InsertMany(*store, 1, "team/x/y")[0];
  const uint64_t team0 = InsertMany(*store, 1, "team0")[0];
  const uint64_t other = InsertMany(*store, 1, "other")[0];
  const uint64_t team_2 = InsertMany(*store, 1, "team")[0];

  auto by_queue = [&](const std::string& queue) {
    v1::ListJobsRequest request;
    request.set_queue(queue);
    request.set_page_size(2);  // the filter holds across pages too.
    return ListAllIds(*store, request);
  };
  CHECK(by_queue("team") == std::vector<uint64_t>{team, team_2});
  CHECK(by_queue("team/x") == std::vector<uint64_t>{team_x});
  CHECK(by_queue("teamx") == std::vector<uint64_t>{teamx});
  CHECK(by_queue("tea").empty());
  CHECK(by_queue("team/") == std::vector<uint64_t>{team, team_x, team_x_y, team_2});
  CHECK(by_queue("team/x/") == std::vector<uint64_t>{team_x, team_x_y});
  CHECK(by_queue("other/") == std::vector<uint64_t>{other});
  CHECK(by_queue("nobody/").empty());
  CHECK(by_queue("").size() == 8);
  (void)team_dash;
  (void)team0;
}

TEST_CASE("store: ListJobs filters by state and by labels") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  const uint64_t pending_gpu =
      InsertJob(*store, MakeJob("q", v1::PENDING, "", {{"kind", "gpu"}, {"team", "vision"}}));
  const uint64_t running_gpu =
      InsertJob(*store, MakeJob("q", v1::RUNNING, "", {{"kind", "gpu"}, {"team", "nlp"}}));
  const uint64_t failed_cpu = InsertJob(*store, MakeJob("q", v1::FAILED, "", {{"kind", "cpu"}}));
  const uint64_t pending_plain = InsertJob(*store, MakeJob("r", v1::PENDING));
  const uint64_t succeeded_gpu =
      InsertJob(*store, MakeJob("r", v1::SUCCEEDED, "", {{"kind", "gpu"}, {"team", "vision"}}));

  auto list = [&](std::vector<v1::JobState> states, std::map<std::string, std::string> labels,
                  const std::string& queue = "") {
    v1::ListJobsRequest request;
    for (v1::JobState state : states) request.add_states(state);
    for (const auto& [k, v] : labels) (*request.mutable_labels())[k] = v;
    request.set_queue(queue);
    request.set_page_size(1);
    return ListAllIds(*store, request);
  };
  CHECK(list({v1::PENDING}, {}) == std::vector<uint64_t>{pending_gpu, pending_plain});
  CHECK(list({v1::RUNNING, v1::FAILED}, {}) == std::vector<uint64_t>{running_gpu, failed_cpu});
  CHECK(list({v1::LOST}, {}).empty());
  CHECK(list({}, {{"kind", "gpu"}}) ==
        std::vector<uint64_t>{pending_gpu, running_gpu, succeeded_gpu});
  CHECK(list({}, {{"kind", "gpu"}, {"team", "vision"}}) ==
        std::vector<uint64_t>{pending_gpu, succeeded_gpu});
  CHECK(list({}, {{"team", "nlp"}}) == std::vector<uint64_t>{running_gpu});
  CHECK(list({}, {{"kind", "tpu"}}).empty());
  CHECK(list({}, {{"missing", ""}}).empty());  // a missing label does not match "".
  CHECK(list({v1::PENDING}, {{"kind", "gpu"}}) == std::vector<uint64_t>{pending_gpu});
  CHECK(list({v1::PENDING, v1::SUCCEEDED}, {{"team", "vision"}}, "r") ==
        std::vector<uint64_t>{succeeded_gpu});
}

}  // namespace
}  // namespace tessera::store::testing
