// tessctl, the real binary, against a fake tesserad: a Beast server on loopback that records
// each request and answers canned JSON. Checks what goes over the wire, what is printed, and
// the exit codes scripts rely on.
#include <doctest/doctest.h>
#include <google/protobuf/util/json_util.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/tessctl_runner.h"
#include "tessera/v1/dry_run.pb.h"
#include "tessera/v1/job.pb.h"

namespace {

using tesserad_test::RunResult;
using tesserad_test::Tessctl;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct RecordedRequest {
  std::string method;
  std::string target;
  std::string body;
  std::string authorization;
  std::string idempotency_key;
  std::string content_type;
  std::string accept;
};

struct CannedResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

// Answers one request per connection from `handler`, on 127.0.0.1 and a free port.
class FakeTesserad {
 public:
  using Handler = std::function<CannedResponse(const RecordedRequest&)>;

  explicit FakeTesserad(Handler handler)
      : handler_(std::move(handler)), acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { Serve(); });
  }

  ~FakeTesserad() {
    stopping_ = true;
    // Wake the blocking accept with a connection of our own.
    beast::error_code ignored;
    tcp::socket wake(io_);
    wake.connect(acceptor_.local_endpoint(), ignored);
    thread_.join();
  }

  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

  std::vector<RecordedRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void Serve() {
    while (true) {
      tcp::socket socket(io_);
      beast::error_code ec;
      acceptor_.accept(socket, ec);
      if (stopping_) return;
      if (ec) continue;
      beast::flat_buffer buffer;
      http::request<http::string_body> request;
      http::read(socket, buffer, request, ec);
      if (ec) continue;
      RecordedRequest recorded{std::string(request.method_string()),
                               std::string(request.target()),
                               request.body(),
                               std::string(request[http::field::authorization]),
                               std::string(request["Idempotency-Key"]),
                               std::string(request[http::field::content_type]),
                               std::string(request[http::field::accept])};
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(recorded);
      }
      const CannedResponse canned = handler_(recorded);
      http::response<http::string_body> response(static_cast<http::status>(canned.status), 11);
      response.set(http::field::content_type, canned.content_type);
      response.keep_alive(false);
      response.body() = canned.body;
      response.prepare_payload();
      http::write(socket, response, ec);
      socket.shutdown(tcp::socket::shutdown_both, ec);
    }
  }

  Handler handler_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<RecordedRequest> requests_;
  std::thread thread_;
};

template <typename T>
T ParseJson(const std::string& json) {
  T message;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &message);
  INFO(json);
  REQUIRE(status.ok());
  return message;
}

// The message a request carries: tessctl sends binary protobuf.
template <typename T>
T ParseBody(const RecordedRequest& request) {
  REQUIRE(request.content_type == "application/x-protobuf");
  T message;
  REQUIRE(message.ParseFromString(request.body));
  return message;
}

const char kJob42[] = R"({"id":"42","spec":{"name":"train","queue":"research/vision"},
  "status":{"state":"PENDING","reason":"waiting for 2 GPUs"}})";

CannedResponse Ok(std::string body) { return {200, std::move(body)}; }

// A port nothing listens on: bound once, then released.
std::string RefusedUrl() {
  asio::io_context io;
  tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  const int port = acceptor.local_endpoint().port();
  acceptor.close();
  return "http://127.0.0.1:" + std::to_string(port);
}

}  // namespace

TEST_CASE("tessctl submit from flags sends the JobSpec JSON and prints the id") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  const RunResult run = Tessctl({"--server",
                                 server.url(),
                                 "submit",
                                 "--queue",
                                 "research/vision",
                                 "--name",
                                 "train",
                                 "--tasks",
                                 "3",
                                 "--gpus",
                                 "2",
                                 "--cpu-milli",
                                 "4000",
                                 "--memory-mib",
                                 "8192",
                                 "--idempotency-key",
                                 "k-1",
                                 "--",
                                 "python",
                                 "train.py",
                                 "--lr",
                                 "1"});
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == "42\n");
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].method == "POST");
  CHECK(requests[0].target == "/v1/jobs");
  CHECK(requests[0].idempotency_key == "k-1");
  CHECK(requests[0].authorization.empty());
  const auto spec = ParseBody<tessera::v1::JobSpec>(requests[0]);
  CHECK(spec.queue() == "research/vision");
  CHECK(spec.name() == "train");
  CHECK(spec.tasks() == 3);
  CHECK(spec.task().gpu_count() == 2);
  CHECK(spec.task().cpu_milli() == 4000);
  CHECK(spec.task().memory_mib() == 8192);
  CHECK(std::vector<std::string>(spec.command().begin(), spec.command().end()) ==
        std::vector<std::string>{"python", "train.py", "--lr", "1"});
}

TEST_CASE("tessctl submit --selector and --toleration fill node_selector and tolerations") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  const RunResult run = Tessctl(
      {"--server", server.url(), "submit", "--gpus", "1", "--selector", "gpu-type=h100",
       "--selector", "zone=eu-1", "--toleration", "dedicated=infer:NoSchedule", "--toleration",
       "spot:PREFER_NO_SCHEDULE", "--toleration", "maintenance", "--", "/bin/sh", "-c", "exit 0"});
  INFO(run.err);
  CHECK(run.exit_code == 0);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  const auto spec = ParseBody<tessera::v1::JobSpec>(requests[0]);
  CHECK(spec.node_selector().size() == 2);
  CHECK(spec.node_selector().at("gpu-type") == "h100");
  CHECK(spec.node_selector().at("zone") == "eu-1");
  REQUIRE(spec.tolerations_size() == 3);
  CHECK(spec.tolerations(0).key() == "dedicated");
  CHECK(spec.tolerations(0).operator_() == tessera::v1::Toleration::EQUAL);
  CHECK(spec.tolerations(0).value() == "infer");
  CHECK(spec.tolerations(0).effect() == tessera::v1::NO_SCHEDULE);
  CHECK(spec.tolerations(1).key() == "spot");
  CHECK(spec.tolerations(1).operator_() == tessera::v1::Toleration::EXISTS);
  CHECK(spec.tolerations(1).effect() == tessera::v1::PREFER_NO_SCHEDULE);
  CHECK(spec.tolerations(2).key() == "maintenance");
  CHECK(spec.tolerations(2).effect() == tessera::v1::TAINT_EFFECT_UNSPECIFIED);
  // The argv after `--` is the task's, options and all (a list flag just before must not take it).
  CHECK(std::vector<std::string>(spec.command().begin(), spec.command().end()) ==
        std::vector<std::string>{"/bin/sh", "-c", "exit 0"});

  for (const char* bad : {"--selector=novalue", "--toleration=k:Sometimes"}) {
    const RunResult refused = Tessctl({"--server", server.url(), "submit", bad});
    CHECK(refused.exit_code == 1);
    CHECK_MESSAGE(refused.err.find(std::string(bad).substr(0, std::string(bad).find('='))) !=
                      std::string::npos,
                  refused.err);
  }
  CHECK(server.requests().size() == 1);
}

TEST_CASE("tessctl submit --elastic and --elastic-sizes fill elastic, --idle-gpu-exempt its flag") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  const RunResult run =
      Tessctl({"--server", server.url(), "submit", "--gpus", "1", "--elastic", "1:8",
               "--elastic-sizes", "powers-of-two", "--idle-gpu-exempt", "--", "torchrun"});
  INFO(run.err);
  CHECK(run.exit_code == 0);
  REQUIRE(server.requests().size() == 1);
  const auto spec = ParseBody<tessera::v1::JobSpec>(server.requests()[0]);
  CHECK(spec.tasks() == 0);
  CHECK(spec.elastic().min_tasks() == 1);
  CHECK(spec.elastic().max_tasks() == 8);
  CHECK(spec.elastic().sizes().powers_of_two());
  CHECK(spec.idle_gpu_exempt());

  const RunResult multiple = Tessctl({"--server", server.url(), "submit", "--elastic", "8:32",
                                      "--elastic-sizes", "multiple-of:8"});
  CHECK(multiple.exit_code == 0);
  const RunResult list =
      Tessctl({"--server", server.url(), "submit", "--elastic", "2:8", "--elastic-sizes", "2,6,8"});
  CHECK(list.exit_code == 0);
  REQUIRE(server.requests().size() == 3);
  CHECK(ParseBody<tessera::v1::JobSpec>(server.requests()[1]).elastic().sizes().multiple_of() == 8);
  const auto counts = ParseBody<tessera::v1::JobSpec>(server.requests()[2]).elastic().sizes();
  CHECK(std::vector<int>(counts.counts().begin(), counts.counts().end()) ==
        std::vector<int>{2, 6, 8});

  // Malformed values are refused before anything is sent, naming the flag.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--elastic", "2-8"},
        std::vector<std::string>{"--elastic", "1:8", "--elastic-sizes", "squares"},
        std::vector<std::string>{"--elastic", "1:8", "--elastic-sizes", "2,,4"},
        std::vector<std::string>{"--elastic-sizes", "powers-of-two"}}) {
    std::vector<std::string> args = {"--server", server.url(), "submit"};
    args.insert(args.end(), bad.begin(), bad.end());
    const RunResult refused = Tessctl(args);
    CHECK(refused.exit_code == 1);
    CHECK_MESSAGE(refused.err.find(bad[bad.size() - 2]) != std::string::npos, refused.err);
  }
  CHECK(server.requests().size() == 3);
}

TEST_CASE("tessctl submit without --queue leaves the queue to the server's default") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  const RunResult run = Tessctl({"--server", server.url(), "submit", "--gpus", "2"});
  INFO(run.err);
  CHECK(run.exit_code == 0);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  const auto spec = ParseBody<tessera::v1::JobSpec>(requests[0]);
  CHECK(spec.queue().empty());
  CHECK(spec.task().gpu_count() == 2);
}

TEST_CASE(
    "tessctl asks for binary protobuf and reads it, and reads JSON from a server that sends it") {
  tessera::v1::Job job;
  job.set_id(77);
  job.mutable_status()->set_state(tessera::v1::RUNNING);
  FakeTesserad binary([&job](const RecordedRequest&) {
    return CannedResponse{200, job.SerializeAsString(), "application/x-protobuf"};
  });
  const RunResult run = Tessctl({"--server", binary.url(), "submit", "--gpus", "1"});
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == "77\n");
  REQUIRE(binary.requests().size() == 1);
  CHECK(binary.requests()[0].accept == "application/x-protobuf");
  const RunResult shown = Tessctl({"--server", binary.url(), "-o", "json", "get", "77"});
  INFO(shown.err);
  CHECK(shown.exit_code == 0);
  CHECK(ParseJson<tessera::v1::Job>(shown.out).status().state() == tessera::v1::RUNNING);

  // A body that is not the message the content type promises is a server error, said so.
  FakeTesserad garbled([](const RecordedRequest&) {
    return CannedResponse{200, std::string("\xff\xff\xff", 3), "application/x-protobuf"};
  });
  const RunResult broken = Tessctl({"--server", garbled.url(), "get", "77"});
  CHECK(broken.exit_code == 2);
  CHECK(broken.err.find("malformed job from server: not a valid binary tessera.v1.Job") !=
        std::string::npos);
}

TEST_CASE("tessctl submit -f reads a JSON file, flags override it, -o json prints the Job") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  char path[] = "/tmp/tessctl-test-job-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string file = R"({"name": "from-file", "queue": "a/b",
    "task": {"cpuMilli": "2000", "memoryMib": "4096", "gpuCount": 1, "gpu_milli": 500}})";
  REQUIRE(write(fd, file.data(), file.size()) == static_cast<ssize_t>(file.size()));
  close(fd);
  const RunResult run =
      Tessctl({"--server", server.url(), "-o", "json", "submit", "-f", path, "--name", "x"});
  unlink(path);
  INFO(run.err);
  CHECK(run.exit_code == 0);
  const auto job = ParseJson<tessera::v1::Job>(run.out);
  CHECK(job.id() == 42);
  CHECK(job.status().state() == tessera::v1::PENDING);
  const auto spec = ParseBody<tessera::v1::JobSpec>(server.requests().at(0));
  CHECK(spec.name() == "x");
  CHECK(spec.queue() == "a/b");
  CHECK(spec.task().gpu_milli() == 500);
  CHECK(spec.task().memory_mib() == 4096);
}

// Writes `text` to a fresh file whose name ends in `suffix`; the caller unlinks it.
std::string WriteTempFile(const std::string& suffix, const std::string& text) {
  std::string path = "/tmp/tessctl-test-XXXXXX" + suffix;
  const int fd = mkstemps(path.data(), static_cast<int>(suffix.size()));
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  return path;
}

TEST_CASE("tessctl submit -f reads YAML, with snake_case or JSON names") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  const std::string path = WriteTempFile(".yaml", R"(# a training job
name: resnet
queue: research/vision
tasks: 4
priority_class: high
task:
  cpu_milli: 16000
  memoryMib: 65536
  gpu_count: 2
command: [python, train.py]
labels: {team: vision}
)");
  const RunResult run = Tessctl({"--server", server.url(), "submit", "-f", path});
  unlink(path.c_str());
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == "42\n");
  const auto spec = ParseBody<tessera::v1::JobSpec>(server.requests().at(0));
  CHECK(spec.name() == "resnet");
  CHECK(spec.tasks() == 4);
  CHECK(spec.priority_class() == "high");
  CHECK(spec.task().cpu_milli() == 16000);
  CHECK(spec.task().memory_mib() == 65536);
  CHECK(spec.task().gpu_count() == 2);
  CHECK(spec.command_size() == 2);
  CHECK(spec.labels().at("team") == "vision");
}

TEST_CASE("tessctl submit -f refuses a bad YAML file with its line and field, sending nothing") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  const std::string unknown = WriteTempFile(".yml", "queue: a\ntask:\n  gpus: 2\n");
  const RunResult bad_field = Tessctl({"--server", server.url(), "submit", "-f", unknown});
  unlink(unknown.c_str());
  CHECK(bad_field.exit_code == 1);
  CHECK(bad_field.err.find(unknown + ":3:3: task.gpus: unknown field") != std::string::npos);
  const std::string wrong_type = WriteTempFile(".yaml", "queue: a\ntasks: four\n");
  const RunResult bad_type = Tessctl({"--server", server.url(), "submit", "-f", wrong_type});
  unlink(wrong_type.c_str());
  CHECK(bad_type.exit_code == 1);
  CHECK(bad_type.err.find(wrong_type + ":2:8: tasks:") != std::string::npos);
  CHECK(server.requests().empty());
}

TEST_CASE("tessctl ls follows page tokens and passes the filters") {
  FakeTesserad server([](const RecordedRequest& request) {
    if (request.target.find("page_token=p2") != std::string::npos) {
      return Ok(R"({"jobs":[{"id":"2","spec":{"name":"second"},"status":{"state":"RUNNING"}}]})");
    }
    return Ok(R"({"jobs":[{"id":"1","spec":{"name":"first"},"status":{"state":"RUNNING"}}],
                  "nextPageToken":"p2"})");
  });
  const RunResult run =
      Tessctl({"--server", server.url(), "ls", "--queue", "research/", "--state", "RUNNING"});
  INFO(run.err);
  CHECK(run.exit_code == 0);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].method == "GET");
  CHECK(requests[0].target == "/v1/jobs?queue=research%2F&state=RUNNING");
  CHECK(requests[1].target == "/v1/jobs?queue=research%2F&state=RUNNING&page_token=p2");
  CHECK(run.out.find("ID") == 0);
  CHECK(run.out.find("first") != std::string::npos);
  CHECK(run.out.find("second") != std::string::npos);

  const RunResult json = Tessctl({"--server", server.url(), "-o", "json", "ls"});
  CHECK(json.exit_code == 0);
  CHECK(ParseJson<tessera::v1::ListJobsResponse>(json.out).jobs_size() == 2);
}

TEST_CASE("tessctl get and cancel use the job's path") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  const RunResult get = Tessctl({"--server", server.url(), "get", "42"});
  INFO(get.err);
  CHECK(get.exit_code == 0);
  CHECK(get.out.find("waiting for 2 GPUs") != std::string::npos);
  const RunResult cancel = Tessctl({"--server", server.url(), "-o", "json", "cancel", "42"});
  CHECK(cancel.exit_code == 0);
  CHECK(ParseJson<tessera::v1::Job>(cancel.out).id() == 42);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].method == "GET");
  CHECK(requests[0].target == "/v1/jobs/42");
  CHECK(requests[1].method == "POST");
  CHECK(requests[1].target == "/v1/jobs/42:cancel");
}

TEST_CASE("tessctl gpus: each GPU and MIG instance with its UUID, sharing and health") {
  FakeTesserad server([](const RecordedRequest& request) {
    if (request.target == "/v1/nodes") {
      return Ok(R"({"nodes":[{"spec":{"name":"h100-box","gpus":[
                     {"index":0,"model":"H100-80GB","uuid":"GPU-aaa","sharing":"GPU_SHARING_MIG",
                      "migManaged":true,
                      "migInstances":[{"profile":"3g.40gb","start":4},{"profile":"1g.10gb"}],
                      "instances":[{"mig":{"profile":"3g.40gb","start":4},"uuid":"MIG-bbb"}]},
                     {"index":1,"model":"A100-80GB","uuid":"GPU-ccc",
                      "sharing":"GPU_SHARING_TIME_SLICE","replicas":4}]},
                   "status":{"gpus":[{"index":1,"failed":true,"reason":"XID 79"}]}}]})");
    }
    return Ok("{}");
  });
  const RunResult gpus = Tessctl({"--server", server.url(), "gpus"});
  INFO(gpus.out);
  INFO(gpus.err);
  CHECK(gpus.exit_code == 0);
  CHECK(server.requests().back().target == "/v1/nodes");
  std::vector<std::string> lines;
  std::istringstream text(gpus.out);
  for (std::string line; std::getline(text, line);) {
    std::istringstream words(line);
    std::string joined;
    for (std::string word; words >> word;) joined += (joined.empty() ? "" : " ") + word;
    lines.push_back(joined);
  }
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "NODE GPU MODEL SHARING DEVICE UUID HEALTH");
  CHECK(lines[1] == "h100-box 0 H100-80GB mig (managed) whole GPU-aaa ok");
  CHECK(lines[2] == "3g.40gb@4 MIG-bbb");
  CHECK(lines[3] == "1g.10gb@0 -");  // an instance the backend names no device for.
  CHECK(lines[4] == "h100-box 1 A100-80GB time_slice x4 whole GPU-ccc failed: XID 79");
}

TEST_CASE("tessctl queues, nodes, cordon, watch and top") {
  FakeTesserad server([](const RecordedRequest& request) {
    if (request.target == "/v1/queues") {
      return Ok(R"({"queues":[{"spec":{"name":"research","weight":2},
                     "status":{"runningJobs":"3","dominantShare":0.25}}]})");
    }
    if (request.target == "/v1/nodes") {
      return Ok(R"({"nodes":[{"spec":{"name":"a100-0","cpuMilli":"64000",
                     "gpus":[{"model":"A100-80GB"}]},"status":{"cordoned":true}}]})");
    }
    if (request.target.rfind("/v1/events", 0) == 0) {
      return Ok(R"({"events":[{"seq":"7","kind":"JOB_STATE_CHANGED","jobId":"42",
                     "fromState":"PENDING","toState":"RUNNING"},{"seq":"8","kind":"NODE_UPDATED",
                     "node":"a100-0"}]})");
    }
    return Ok("{}");
  });
  const RunResult queues = Tessctl({"--server", server.url(), "queues"});
  CHECK(queues.exit_code == 0);
  CHECK(queues.out.find("research") != std::string::npos);
  const RunResult nodes = Tessctl({"--server", server.url(), "nodes"});
  CHECK(nodes.exit_code == 0);
  CHECK(nodes.out.find("Cordoned") != std::string::npos);
  const RunResult cordon = Tessctl({"--server", server.url(), "cordon", "a100-0"});
  CHECK(cordon.exit_code == 0);
  CHECK(server.requests().back().method == "POST");
  CHECK(server.requests().back().target == "/v1/nodes/a100-0:cordon");
  CHECK(Tessctl({"--server", server.url(), "uncordon", "a100-0"}).exit_code == 0);
  CHECK(server.requests().back().target == "/v1/nodes/a100-0:uncordon");
  CHECK(Tessctl({"--server", server.url(), "drain", "a100-0"}).exit_code == 0);
  CHECK(server.requests().back().target == "/v1/nodes/a100-0:drain");

  const RunResult watch =
      Tessctl({"--server", server.url(), "watch", "--after", "6", "--limit", "2"});
  INFO(watch.err);
  CHECK(watch.exit_code == 0);
  CHECK(server.requests().back().target.rfind("/v1/events?after_seq=6&", 0) == 0);
  CHECK(watch.out.find("PENDING->RUNNING") != std::string::npos);
  CHECK(std::count(watch.out.begin(), watch.out.end(), '\n') == 2);

  const RunResult top = Tessctl({"--server", server.url(), "top", "--once"});
  CHECK(top.exit_code == 0);
  CHECK(top.out.find("research") != std::string::npos);
  CHECK(top.out.find("a100-0") != std::string::npos);
}

TEST_CASE("tessctl sends the bearer token from --token or TESSERA_TOKEN") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  CHECK(Tessctl({"--server", server.url(), "--token", "s3cret", "get", "42"}).exit_code == 0);
  CHECK(server.requests().back().authorization == "Bearer s3cret");
  CHECK(Tessctl({"get", "42"}, {"TESSERA_SERVER=" + server.url(), "TESSERA_TOKEN=from-env"})
            .exit_code == 0);
  CHECK(server.requests().back().authorization == "Bearer from-env");
}

TEST_CASE("tessctl exit codes follow the HTTP status and print the server's message") {
  int status = 200;
  FakeTesserad server([&status](const RecordedRequest&) {
    return CannedResponse{status, R"({"code":"SOME_CODE","message":"the server's words"})"};
  });
  const std::vector<std::pair<int, int>> cases = {{400, 2}, {409, 2}, {404, 3}, {401, 4},
                                                  {403, 4}, {500, 5}, {503, 5}};
  for (const auto& each : cases) {
    const int http_status = each.first;  // not a structured binding: INFO's lambda captures it.
    const int exit_code = each.second;
    status = http_status;
    const RunResult run = Tessctl({"--server", server.url(), "get", "1"});
    INFO("HTTP ", http_status);
    CHECK(run.exit_code == exit_code);
    CHECK(run.err.find("SOME_CODE: the server's words") != std::string::npos);
    CHECK(run.out.empty());
  }

  const RunResult refused = Tessctl({"--server", RefusedUrl(), "queues"});
  CHECK(refused.exit_code == 5);
  CHECK(refused.err.find("cannot reach") != std::string::npos);
}

TEST_CASE("tessctl gives up on a server that accepts but never answers (--timeout)") {
  // The kernel completes the connection from the listen backlog; nobody ever reads or writes.
  asio::io_context io;
  tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
  const std::string url = "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port());
  const auto start = std::chrono::steady_clock::now();
  const RunResult run = Tessctl({"--server", url, "--timeout", "0.5", "queues"});
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(run.exit_code == 5);
  CHECK(run.err.find("no reply within 500 ms") != std::string::npos);
  CHECK(took < std::chrono::seconds(5));
}

TEST_CASE("tessctl usage errors exit 1 without calling the server") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  CHECK(Tessctl({"--server", server.url()}).exit_code == 1);
  CHECK(Tessctl({"--server", server.url(), "--bogus", "ls"}).exit_code == 1);
  CHECK(Tessctl({"--server", server.url(), "-o", "yaml", "ls"}).exit_code == 1);
  CHECK(Tessctl({"--server", server.url(), "get"}).exit_code == 1);
  CHECK(Tessctl({"--server", "ftp://example.com", "ls"}).exit_code == 1);
  CHECK(server.requests().empty());

  const RunResult help = Tessctl({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("Exit codes") != std::string::npos);
}

TEST_CASE("tessctl loads its TLS module only for https://, and says where it looked") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  // Plain HTTP never needs the module, even when it is missing.
  const std::vector<std::string> no_module = {"TESSCTL_TLS_MODULE=/nonexistent/libtessctl-tls.so"};
  CHECK(Tessctl({"--server", server.url(), "get", "42"}, no_module).exit_code == 0);
  const RunResult https = Tessctl({"--server", "https://127.0.0.1:1", "get", "42"}, no_module);
  CHECK(https.exit_code == 1);
  CHECK(https.err.find("tessctl: https:// needs tessctl's TLS module, libtessctl-tls.so, which "
                       "could not be loaded") != std::string::npos);
  CHECK(https.err.find("/nonexistent/libtessctl-tls.so") != std::string::npos);
  // Found beside tessctl in the build tree: a bad --cacert is then the module's usage error.
  const RunResult cacert =
      Tessctl({"--server", "https://127.0.0.1:1", "--cacert", "/nonexistent.pem", "get", "42"});
  CHECK(cacert.exit_code == 1);
  CHECK(cacert.err.find("--cacert /nonexistent.pem: not a readable PEM certificate file") !=
        std::string::npos);
  CHECK(server.requests().size() == 1);
}

TEST_CASE("tessctl takes the global options after the subcommand too") {
  FakeTesserad server(
      [](const RecordedRequest&) { return Ok(R"({"queues":[{"spec":{"name":"research"}}]})"); });
  const RunResult run = Tessctl({"queues", "-o", "json", "--server", server.url()});
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out.rfind("{\"queues\": [", 0) == 0);
}

TEST_CASE("tessctl queues shows an unset weight as 1, its meaning") {
  FakeTesserad server([](const RecordedRequest&) {
    return Ok(R"({"queues":[{"spec":{"name":"research"}},{"spec":{"name":"ops","weight":2.5}}]})");
  });
  const RunResult run = Tessctl({"--server", server.url(), "queues"});
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("research   1 ") != std::string::npos);
  CHECK(run.out.find("ops        2.5 ") != std::string::npos);
}

TEST_CASE("tessctl queues shows burst spend for queues with a budget or some spend") {
  FakeTesserad server([](const RecordedRequest&) {
    return Ok(R"x({"queues":[
      {"spec":{"name":"team","burstBudget":{"perHour":1,"perMonth":0}},
       "status":{"burst":{"thisHour":1.02,"today":1.5,"thisMonth":7.25,"ratePerHour":3,
                          "monthForecast":1500.126,
                          "outOfBudget":"queue 'team' has spent its burst budget per hour (1.02 of 1.00)"}}},
      {"spec":{"name":"spender"},"status":{"burst":{"ratePerHour":0.5}}},
      {"spec":{"name":"private"}}]})x");
  });
  const RunResult run = Tessctl({"--server", server.url(), "queues"});
  INFO(run.out);
  CHECK(run.exit_code == 0);
  // The lines after the queue table's blank line, each with its columns' blanks squeezed.
  std::vector<std::string> lines;
  std::istringstream in(run.out.substr(run.out.find("\n\n") + 2));
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string joined;
    for (std::string word; words >> word;) joined += (joined.empty() ? "" : " ") + word;
    lines.push_back(joined);
  }
  REQUIRE(lines.size() == 3);  // "private" has neither a budget nor spend.
  CHECK(lines[0] ==
        "QUEUE BURST THIS HOUR TODAY THIS MONTH RATE/H MONTH FORECAST BUDGET OUT OF BUDGET");
  CHECK(lines[1] ==
        "team 1.02 1.50 7.25 3.00 1500.13 1.00/h, 0.00/mo queue 'team' has spent its burst "
        "budget per hour (1.02 of 1.00)");
  CHECK(lines[2] == "spender 0.00 0.00 0.00 0.50 0.00 - -");

  // Without budgets or spend anywhere, no burst table at all.
  FakeTesserad plain(
      [](const RecordedRequest&) { return Ok(R"({"queues":[{"spec":{"name":"research"}}]})"); });
  const RunResult none = Tessctl({"--server", plain.url(), "queues"});
  CHECK(none.exit_code == 0);
  CHECK(none.out.find("BURST") == std::string::npos);

  // -o json carries the spend as the server sent it.
  const RunResult json = Tessctl({"--server", server.url(), "queues", "-o", "json"});
  CHECK(json.out.find(R"("burst":{"thisHour":1.02,"today":1.5,"thisMonth":7.25)") !=
        std::string::npos);
}

TEST_CASE("tessctl watch prints a new job's first state without an unspecified one") {
  FakeTesserad server([](const RecordedRequest&) {
    return Ok(R"({"events":[{"seq":"1","kind":"JOB_STATE_CHANGED","jobId":"42",
                   "toState":"PENDING"}]})");
  });
  const RunResult run = Tessctl({"--server", server.url(), "watch", "--limit", "1"});
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("job=42  PENDING") != std::string::npos);
  CHECK(run.out.find("UNSPECIFIED") == std::string::npos);
}

TEST_CASE("tessctl refuses a negative count with the bounds as integers") {
  const RunResult run = Tessctl({"submit", "--queue", "a", "--tasks", "-1"});
  CHECK(run.exit_code == 1);
  INFO(run.err);
  CHECK(run.err.find("--tasks") != std::string::npos);
  CHECK(run.err.find("not in range 0 to 2147483647") != std::string::npos);
  CHECK(run.err.size() < 200);
  const RunResult memory = Tessctl({"submit", "--queue", "a", "--memory-mib", "0"});
  CHECK(memory.exit_code == 1);
  INFO(memory.err);
  CHECK(memory.err.find("not in range 1 to 9223372036854775807") != std::string::npos);
}

// Answers each submit with a job whose id is 100 + the request's number, or 400 for a job named
// "refused".
CannedResponse NumberedJobs(const RecordedRequest& request, std::atomic<int>* count) {
  tessera::v1::JobSpec spec;
  if (spec.ParseFromString(request.body) && spec.name() == "refused") {
    return {400, R"({"code":"INVALID_ARGUMENT","message":"tasks: must be >= 1"})"};
  }
  return Ok(R"({"id":")" + std::to_string(100 + (*count)++) + R"("})");
}

TEST_CASE("tessctl submit -f submits every YAML document and prints each id in order") {
  std::atomic<int> count{0};
  FakeTesserad server([&count](const RecordedRequest& r) { return NumberedJobs(r, &count); });
  const std::string path = WriteTempFile(".yaml", R"(queue: a
name: first
---
queue: b
name: second
task: {gpu_count: 1}
---
)");
  const RunResult run = Tessctl({"--server", server.url(), "submit", "-f", path, "--tasks", "2"});
  unlink(path.c_str());
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK((run.out == "100\n101\n" || run.out == "101\n100\n"));
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  std::vector<std::string> queues;
  for (const auto& request : requests) {
    const auto spec = ParseBody<tessera::v1::JobSpec>(request);
    CHECK(spec.tasks() == 2);  // the flag applies to every document.
    queues.push_back(spec.queue());
  }
  std::sort(queues.begin(), queues.end());
  CHECK(queues == std::vector<std::string>{"a", "b"});
}

TEST_CASE("tessctl submit --array N submits N numbered copies with numbered keys") {
  std::atomic<int> count{0};
  FakeTesserad server([&count](const RecordedRequest& r) { return NumberedJobs(r, &count); });
  const RunResult run = Tessctl({"--server", server.url(), "submit", "--queue", "a", "--name",
                                 "sweep", "--array", "20", "--idempotency-key", "k"});
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(std::count(run.out.begin(), run.out.end(), '\n') == 20);
  std::vector<std::string> names, keys;
  for (const auto& request : server.requests()) {
    names.push_back(ParseBody<tessera::v1::JobSpec>(request).name());
    keys.push_back(request.idempotency_key);
  }
  REQUIRE(names.size() == 20);
  std::sort(names.begin(), names.end());
  std::sort(keys.begin(), keys.end());
  CHECK(names[0] == "sweep-0");
  CHECK(names[19] == "sweep-9");  // sorted as text: sweep-0, sweep-1, sweep-10, ...
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  CHECK(keys[0] == "k-0");
  CHECK(std::adjacent_find(keys.begin(), keys.end()) == keys.end());

  CHECK(Tessctl({"submit", "--queue", "a", "--array", "0"}).exit_code == 1);
}

TEST_CASE("tessctl submit -f with a bad document names it and sends nothing") {
  FakeTesserad server([](const RecordedRequest&) { return Ok(kJob42); });
  const std::string path =
      WriteTempFile(".yaml", "queue: a\n---\nqueue: b\ntask:\n  gpus: 2\n---\nqueue: c\n");
  const RunResult run = Tessctl({"--server", server.url(), "submit", "-f", path});
  unlink(path.c_str());
  CHECK(run.exit_code == 1);
  INFO(run.err);
  CHECK(run.err.find("document 2: " + path + ":5:3: task.gpus: unknown field") !=
        std::string::npos);
  CHECK(server.requests().empty());

  const std::string empty = WriteTempFile(".yaml", "---\n# nothing\n");
  const RunResult none = Tessctl({"--server", server.url(), "submit", "-f", empty});
  unlink(empty.c_str());
  CHECK(none.exit_code == 1);
  CHECK(none.err.find(empty + ": no job in the file") != std::string::npos);
}

TEST_CASE("tessctl submit of several jobs reports each refusal by its number and goes on") {
  std::atomic<int> count{0};
  FakeTesserad server([&count](const RecordedRequest& r) { return NumberedJobs(r, &count); });
  const std::string path =
      WriteTempFile(".yaml", "queue: a\n---\nqueue: a\nname: refused\n---\nqueue: a\n");
  const RunResult run = Tessctl({"--server", server.url(), "submit", "-f", path});
  unlink(path.c_str());
  CHECK(run.exit_code == 2);
  CHECK(server.requests().size() == 3);
  const std::vector<std::string> lines = [&run] {
    std::vector<std::string> out;
    std::istringstream in(run.out);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }();
  REQUIRE(lines.size() == 3);
  CHECK(lines[1] == "-");
  CHECK(lines[0] != "-");
  CHECK(lines[2] != "-");
  CHECK(run.err == "tessctl: job 2 of 3: INVALID_ARGUMENT: tasks: must be >= 1 (HTTP 400)\n");
}

// A row of tessctl's FIELD/VALUE table for a dry run (the longest field is "jobs ahead").
static std::string Row(const std::string& field, const std::string& value) {
  return field + std::string(13 - field.size(), ' ') + value;
}

TEST_CASE("tessctl submit --dry-run asks POST /v1/jobs:dryRun and prints the answer") {
  const char kPreempts[] = R"json({"verdict":"PREEMPTS",
    "reason":"preempting 2 victim(s) to make room",
    "placements":[{"node":"node-3"}],"estimatedStartUs":"1767225630000000",
    "victims":[{"jobId":"7","queue":"team-a","priority":0,"tasks":1,
                "reason":"preempted to make room for this job (higher priority)"},
               {"priority":0,"tasks":2,"shrinkOnly":true,
                "reason":"shrinking to make room for this job (higher priority)"}],
    "queue":"team-a","priority":1000})json";
  FakeTesserad server([&](const RecordedRequest&) { return Ok(kPreempts); });
  const RunResult run = Tessctl({"--server", server.url(), "submit", "--dry-run", "--queue",
                                 "team-a", "--gpus", "2", "--priority-class", "high"});
  INFO(run.out);
  INFO(run.err);
  CHECK(run.exit_code == 0);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].method == "POST");
  CHECK(requests[0].target == "/v1/jobs:dryRun");
  const auto spec = ParseBody<tessera::v1::JobSpec>(requests[0]);
  CHECK(spec.queue() == "team-a");
  CHECK(spec.task().gpu_count() == 2);
  CHECK(spec.priority_class() == "high");
  const std::string& out = run.out;
  CHECK(out.find(Row("verdict", "would start after preempting 2 job(s)")) != std::string::npos);
  CHECK(out.find(Row("priority", "1000 (not preemptible)")) != std::string::npos);
  CHECK(out.find(Row("start", "2026-01-01T00:00:30Z")) != std::string::npos);
  CHECK(out.find(Row("node", "node-3")) != std::string::npos);
  CHECK(out.find(Row("preempts",
                     "job 7 (queue team-a), priority 0, 1 task(s): preempted to "
                     "make room for this job (higher priority)")) != std::string::npos);
  CHECK(out.find(Row("preempts", "a job of another tenant, priority 0, 2 task(s): shrinking")) !=
        std::string::npos);

  // A wait without an estimate says why; -o json prints the DryRunResult.
  FakeTesserad waits([](const RecordedRequest&) {
    return Ok(R"json({"verdict":"WAITS","waitCause":"CAPACITY","reason":"waiting for capacity",
      "startUnknownReason":"it needs room that running jobs without a time limit hold"})json");
  });
  const RunResult table = Tessctl({"--server", waits.url(), "submit", "--dry-run", "--gpus", "1"});
  CHECK(table.exit_code == 0);
  CHECK(table.out.find(Row("verdict", "would wait (capacity)")) != std::string::npos);
  CHECK(table.out.find(Row("start",
                           "unknown: it needs room that running jobs without a time "
                           "limit hold")) != std::string::npos);
  const RunResult json =
      Tessctl({"--server", waits.url(), "-o", "json", "submit", "--dry-run", "--gpus", "1"});
  CHECK(json.exit_code == 0);
  const auto result = ParseJson<tessera::v1::DryRunResult>(json.out);
  CHECK(result.verdict() == tessera::v1::DryRunResult::WAITS);
  CHECK(result.wait_cause() == tessera::v1::DryRunResult::CAPACITY);
}

TEST_CASE("tessctl submit --dry-run refuses --array and --idempotency-key, and passes errors") {
  FakeTesserad server([](const RecordedRequest&) {
    return CannedResponse{403, R"json({"code":"PERMISSION_DENIED",
      "message":"queue \"x\" is outside the token's queues \"team-a\""})json"};
  });
  const RunResult array =
      Tessctl({"--server", server.url(), "submit", "--dry-run", "--array", "3", "--gpus", "1"});
  CHECK(array.exit_code == 1);
  CHECK(array.err.find("--dry-run answers for each job alone") != std::string::npos);
  const RunResult key = Tessctl(
      {"--server", server.url(), "submit", "--dry-run", "--idempotency-key", "k", "--gpus", "1"});
  CHECK(key.exit_code == 1);
  CHECK(key.err.find("--dry-run stores nothing") != std::string::npos);
  CHECK(server.requests().empty());
  const RunResult refused =
      Tessctl({"--server", server.url(), "submit", "--dry-run", "--queue", "x", "--gpus", "1"});
  CHECK(refused.exit_code == 4);
  CHECK(refused.err.find("is outside the token's queues") != std::string::npos);
}
