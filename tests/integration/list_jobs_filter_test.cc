// ListJobs filters as an embedder meets them: a queue filter names an existing queue and means its
// subtree ("org" and "org/" alike), an unknown queue is NOT_FOUND instead of an empty list, and a
// page token only continues the listing it came from.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

std::vector<uint64_t> ListIds(Scheduler* s, v1::ListJobsRequest request) {
  std::vector<uint64_t> ids;
  while (true) {
    auto page = s->ListJobs(request);
    REQUIRE_MESSAGE(page.ok(), page.status().ToString());
    for (const v1::Job& job : page->jobs()) ids.push_back(job.id());
    if (page->next_page_token().empty()) return ids;
    request.set_page_token(page->next_page_token());
  }
}

struct OrgCluster {
  TestScheduler t = OpenCluster(OneNode(8));
  std::vector<uint64_t> org_ids;  // jobs in org/a and org/b, in id order.
  uint64_t other_id = 0;

  OrgCluster() {
    Scheduler* s = t.scheduler.get();
    CreateQueue(s, QueueSpec("org"));
    CreateQueue(s, QueueSpec("org/a"));
    CreateQueue(s, QueueSpec("org/b"));
    CreateQueue(s, QueueSpec("organic"));
    for (int i = 0; i < 3; ++i) {
      org_ids.push_back(MustSubmit(s, JobSpecBuilder("org/a").Label("k", "v").Build()).id());
      org_ids.push_back(MustSubmit(s, JobSpecBuilder("org/b").Build()).id());
    }
    other_id = MustSubmit(s, JobSpecBuilder("organic").Build()).id();
  }
};

TEST_CASE("ListJobs: a parent queue filter means its subtree, with or without the trailing '/'") {
  OrgCluster c;
  v1::ListJobsRequest request;
  request.set_queue("org");
  CHECK(ListIds(c.t.scheduler.get(), request) == c.org_ids);
  request.set_queue("org/");
  CHECK(ListIds(c.t.scheduler.get(), request) == c.org_ids);
  request.set_queue("org/a");
  CHECK(ListIds(c.t.scheduler.get(), request).size() == 3);
  request.set_queue("organic");
  CHECK(ListIds(c.t.scheduler.get(), request) == std::vector<uint64_t>{c.other_id});
}

TEST_CASE("ListJobs: an unknown queue is NOT_FOUND, not an empty list") {
  OrgCluster c;
  v1::ListJobsRequest request;
  for (const char* name : {"nope", "nope/", "org/c"}) {
    CAPTURE(name);
    request.set_queue(name);
    auto page = c.t->ListJobs(request);
    CHECK(page.status().code() == StatusCode::kNotFound);
    std::string expected = name;
    if (expected.back() == '/') expected.pop_back();
    CHECK(page.status().message() == "queue: '" + expected + "' does not exist");
  }
}

TEST_CASE("ListJobs: a page token continues only the listing it was issued for") {
  OrgCluster c;
  v1::ListJobsRequest request;
  request.set_queue("org");
  request.set_page_size(2);
  auto first = c.t->ListJobs(request);
  REQUIRE(first.ok());
  REQUIRE_FALSE(first->next_page_token().empty());

  // Same filter, another page size: accepted.
  v1::ListJobsRequest next = request;
  next.set_page_size(10);
  next.set_page_token(first->next_page_token());
  auto rest = c.t->ListJobs(next);
  REQUIRE_MESSAGE(rest.ok(), rest.status().ToString());
  CHECK(rest->jobs_size() == 4);

  auto refused = [&](v1::ListJobsRequest changed) {
    changed.set_page_token(first->next_page_token());
    auto page = c.t->ListJobs(changed);
    CHECK(page.status().code() == StatusCode::kInvalidArgument);
    CHECK(page.status().message() ==
          "page_token: was issued for a different filter (queue, states or labels); start again "
          "without a token");
  };
  v1::ListJobsRequest other_queue = request;
  other_queue.set_queue("org/a");
  refused(other_queue);
  v1::ListJobsRequest no_queue = request;
  no_queue.clear_queue();
  refused(no_queue);
  v1::ListJobsRequest with_state = request;
  with_state.add_states(v1::PENDING);
  refused(with_state);
  v1::ListJobsRequest with_label = request;
  (*with_label.mutable_labels())["k"] = "v";
  refused(with_label);

  v1::ListJobsRequest forged = request;
  forged.set_page_token("2");
  auto bare = c.t->ListJobs(forged);
  CHECK(bare.status().code() == StatusCode::kInvalidArgument);
  CHECK(bare.status().message() == "page_token: '2' is not a token returned by ListJobs");
}

}  // namespace
}  // namespace tessera
