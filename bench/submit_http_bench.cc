// submit --http: acknowledged submits per second through the real daemon. The benchmark starts
// the tesserad binary built beside it (TESSERA_TESSERAD_PATH) with a temporary configuration
// (127.0.0.1:0, the store in a scratch directory, no tokens, decisions paused unless
// --decisions on), reads the port from its "listening" line, waits one second and reads the
// idle daemon's VmRSS, then runs C client threads. Each client holds one keep-alive HTTP/1.1
// connection (Boost.Beast) and POSTs small JobSpecs to /v1/jobs one at a time; a submit counts
// when its 200 arrives, which the daemon sends only once the job is committed (and fsync'ed
// with --durable true). The daemon gets SIGTERM at the end of each run, and on any error.
//
// submit --tessctl measures what a shell script's loop of `tessctl submit` gets: each of the C
// clients starts the tessctl built beside the benchmark (TESSERA_TESSCTL_PATH) once per job and
// waits for it to exit, so every submit pays the CLI's start-up, a new connection and its own
// commit. A submit counts when tessctl exits 0 (it prints the id only after the 200).
//
// submit --tessctl --vs-sbatch follows each run with the same loop of `sbatch --hold` against a
// Slurm cluster that SLURM_CONF names (bench/slurm/one-node.sh starts one on this machine), so
// that the CLI's rate is compared with Slurm's on the same machine in the same sitting. Slurm
// acknowledges a job before its state is saved (slurmctld writes its state files periodically),
// while a tesserad acknowledgement follows the commit's fsync: the comparison favours sbatch.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <latch>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "benchmarks.h"
#include "tessera/status.h"

namespace tessera::bench {

#ifdef TESSERA_TESSERAD_PATH

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// A field of /proc/<pid>/status in MiB ("VmRSS:   12345 kB"); -1 when it cannot be read.
double ProcStatusMib(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    std::istringstream in(line.substr(field.size() + 1));
    double kib = 0;
    in >> kib;
    return kib / 1024.0;
  }
  return -1;
}

// The tesserad child process. The destructor sends SIGTERM (then SIGKILL after 10 s) if Stop
// has not run, so an error path never leaves a daemon behind.
class DaemonProcess {
 public:
  explicit DaemonProcess(std::string dir) : dir_(std::move(dir)) {}
  ~DaemonProcess() {
    if (pid_ > 0) Stop();
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  pid_t pid() const { return pid_; }
  unsigned short port() const { return port_; }
  std::string log_path() const { return dir_ + "/tesserad.log"; }

  // Starts the daemon and waits (up to 60 s) for its "listening" line; false with `error` set
  // when it does not come.
  bool Start(bool durable, bool decisions, std::string* error) {
    const std::string config_path = dir_ + "/tesserad.yaml";
    {
      std::ofstream config(config_path);
      config << "store:\n  path: " << dir_
             << "/var/tessera.db\n  durable: " << (durable ? "true" : "false") << "\n"
             << "engine:\n  start_paused: " << (decisions ? "false" : "true") << "\n"
             << "server:\n  listen: 127.0.0.1:0\n";
    }
    int out[2];
    if (pipe(out) != 0) {
      *error = "pipe failed";
      return false;
    }
    pid_ = fork();
    if (pid_ < 0) {
      *error = "fork failed";
      return false;
    }
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      const int log = open(log_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (log >= 0) dup2(log, STDERR_FILENO);
      close(out[0]);
      close(out[1]);
      execl(TESSERA_TESSERAD_PATH, TESSERA_TESSERAD_PATH, "--config", config_path.c_str(), nullptr);
      _exit(127);
    }
    close(out[1]);
    std::string line;
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < deadline) {
      pollfd fd{out[0], POLLIN, 0};
      if (poll(&fd, 1, 100) <= 0) continue;
      char c;
      if (read(out[0], &c, 1) != 1 || c == '\n') break;
      line.push_back(c);
    }
    close(out[0]);  // later stdout lines (there are none) would get EPIPE, not block.
    const std::string prefix = "tesserad: listening on http://127.0.0.1:";
    if (line.rfind(prefix, 0) != 0) {
      *error = "tesserad did not start (first line: '" + line + "'; log " + log_path() + ")";
      return false;
    }
    port_ = static_cast<unsigned short>(std::stoi(line.substr(prefix.size())));
    return true;
  }

  // SIGTERM, then waits up to 10 s before SIGKILL. Returns the exit status, -1 when killed.
  int Stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  unsigned short port_ = 0;
};

std::string JobSpecJson(int client, int64_t index) {
  return R"({"name":"c)" + std::to_string(client) + "-" + std::to_string(index) +
         R"(","queue":"default","task":{"cpuMilli":1000,"memoryMib":1024,"gpuCount":1}})";
}

// One GET on a fresh connection; the body, or "" on error.
std::string Get(unsigned short port, const std::string& target) {
  try {
    asio::io_context io;
    tcp::socket socket(io);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    http::request<http::empty_body> request{http::verb::get, target, 11};
    request.set(http::field::host, "127.0.0.1");
    request.keep_alive(false);
    http::write(socket, request);
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(socket, buffer, response);
    return response.body();
  } catch (const std::exception&) {
    return "";
  }
}

// The value of an unlabelled Prometheus sample, or -1.
double Metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

struct ClientResult {
  std::vector<double> latencies_ms;  // 200 responses only.
  int64_t failed = 0;
  std::string first_error;
  double child_cpu_s = 0;  // user + system CPU of the commands a loop ran (wait4).
};

// User + system CPU seconds process `pid` has used so far (/proc/<pid>/stat), or -1.
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t name_end = stat.rfind(')');  // the command name may hold spaces.
  if (name_end == std::string::npos) return -1;
  std::istringstream fields(stat.substr(name_end + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {  // utime is field 14, stime 15.
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The pid of the oldest process whose command name is `comm`, or -1.
pid_t FindProcess(const std::string& comm) {
  pid_t found = -1;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "comm");
    std::string line;
    if (!std::getline(in, line) || line != comm) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (found < 0 || pid < found) found = pid;
  }
  return found;
}

void Fail(ClientResult* out, const std::string& error) {
  if (out->failed++ == 0) out->first_error = error;
}

// One keep-alive connection, one request in flight; reconnects after a connection error.
void RunHttpClient(unsigned short port, int client, int64_t jobs, ClientResult* out) {
  out->latencies_ms.reserve(jobs);
  asio::io_context io;
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
  tcp::socket socket(io);
  bool connected = false;
  beast::flat_buffer buffer;
  for (int64_t i = 0; i < jobs; ++i) {
    http::request<http::string_body> request{http::verb::post, "/v1/jobs", 11};
    request.set(http::field::host, "127.0.0.1");
    request.set(http::field::content_type, "application/json");
    request.keep_alive(true);
    request.body() = JobSpecJson(client, i);
    request.prepare_payload();
    http::response<http::string_body> response;
    const Clock::time_point start = Clock::now();
    beast::error_code ec;
    if (!connected) {
      socket = tcp::socket(io);
      socket.connect(endpoint, ec);
      socket.set_option(tcp::no_delay(true), ec);
      buffer.clear();
      connected = !ec;
    }
    if (!ec) http::write(socket, request, ec);
    if (!ec) http::read(socket, buffer, response, ec);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (ec) {
      Fail(out, "connection: " + ec.message());
      connected = false;
      continue;
    }
    if (response.result_int() == 200) {
      out->latencies_ms.push_back(ms);
    } else {
      Fail(out, std::to_string(response.result_int()) + " " + response.body());
    }
    if (!response.keep_alive()) connected = false;
  }
}

// Runs the command `args_of(i)` once per job, one at a time, as a script's loop does; a submit
// counts when the command exits 0. `args_of(i)[0]` is looked up in PATH.
template <typename ArgsOf>
void RunCommandLoop(int64_t jobs, const ArgsOf& args_of, ClientResult* out) {
  out->latencies_ms.reserve(jobs);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  for (int64_t i = 0; i < jobs; ++i) {
    std::vector<std::string> args = args_of(i);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const Clock::time_point start = Clock::now();
    pid_t pid = -1;
    if (posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
      Fail(out, "posix_spawn of " + args[0] + " failed");
      continue;
    }
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    out->child_cpu_s += static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                        static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      out->latencies_ms.push_back(ms);
    } else {
      Fail(out, args[0] + " exited with status " + std::to_string(status));
    }
  }
  posix_spawn_file_actions_destroy(&actions);
}

#ifdef TESSERA_TESSCTL_PATH
// Runs `tessctl submit` once per job, one at a time.
void RunTessctlClient(unsigned short port, int client, int64_t jobs, ClientResult* out) {
  const std::string server = "http://127.0.0.1:" + std::to_string(port);
  RunCommandLoop(
      jobs,
      [&](int64_t i) -> std::vector<std::string> {
        return {TESSERA_TESSCTL_PATH,
                "--server",
                server,
                "submit",
                "--name",
                "c" + std::to_string(client) + "-" + std::to_string(i),
                "--gpus",
                "1",
                "--",
                "/bin/true"};
      },
      out);
}
#endif

// Runs `sbatch` once per job against the Slurm cluster SLURM_CONF names (bench/slurm): the
// jobs are held, as the daemon's decisions are paused, so nothing runs meanwhile.
void RunSbatchClient(int client, int64_t jobs, ClientResult* out) {
  RunCommandLoop(
      jobs,
      [&](int64_t i) -> std::vector<std::string> {
        return {"sbatch",
                "--quiet",
                "--hold",
                "--job-name",
                "c" + std::to_string(client) + "-" + std::to_string(i),
                "--output",
                "/dev/null",
                "--wrap",
                "/bin/true"};
      },
      out);
}

// Runs `jobs` submits from `clients` threads, each running `client(c, share, result)`; the
// wall time of the whole and every client's result.
template <typename Client>
double RunClients(int clients, int64_t jobs, const Client& client,
                  std::vector<ClientResult>* results) {
  results->assign(clients, ClientResult{});
  std::vector<std::thread> threads;
  std::latch ready(clients + 1);
  for (int c = 0; c < clients; ++c) {
    const int64_t share = jobs / clients + (c < jobs % clients ? 1 : 0);
    threads.emplace_back([&, c, share] {
      ready.arrive_and_wait();
      client(c, share, &(*results)[c]);
    });
  }
  ready.arrive_and_wait();
  Stopwatch wall;
  for (std::thread& t : threads) t.join();
  return wall.Seconds();
}

// The latencies of every client, and the failures counted (the first error printed).
std::vector<double> Gather(const std::vector<ClientResult>& results, const char* what,
                           int64_t* failed, double* child_cpu_s) {
  std::vector<double> latencies;
  *failed = 0;
  *child_cpu_s = 0;
  for (const ClientResult& r : results) {
    *child_cpu_s += r.child_cpu_s;
    latencies.insert(latencies.end(), r.latencies_ms.begin(), r.latencies_ms.end());
    if (r.failed > 0 && *failed == 0)
      std::cerr << what << ": first error: " << r.first_error << '\n';
    *failed += r.failed;
  }
  return latencies;
}

// The client loop of this run: keep-alive HTTP, or one tessctl process per submit.
void RunClient(const SubmitFlags& flags, unsigned short port, int client, int64_t jobs,
               ClientResult* out) {
#ifdef TESSERA_TESSCTL_PATH
  if (flags.tessctl) return RunTessctlClient(port, client, jobs, out);
#endif
  RunHttpClient(port, client, jobs, out);
}

StatusOr<Json> RunOnce(const SubmitFlags& flags, int run) {
  ScratchDir dir("tessera-bench-submit-http");
  DaemonProcess daemon(dir.path());
  std::string error;
  if (!daemon.Start(flags.durable, flags.decisions == "on", &error)) {
    return UnavailableError(error);
  }
  // Idle footprint: listening, store open, no request yet.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double idle_rss_mib = ProcStatusMib(daemon.pid(), "VmRSS");
  const double commits_before =
      Metric(Get(daemon.port(), "/metrics"), "tessera_store_commits_total");

  Progress(std::string(flags.tessctl ? "submit --tessctl" : "submit --http") + " run " +
           std::to_string(run) + ": " + std::to_string(flags.jobs) + " jobs, " +
           std::to_string(flags.clients) + " clients, tesserad pid " +
           std::to_string(daemon.pid()) + " port " + std::to_string(daemon.port()) + ", idle " +
           std::to_string(idle_rss_mib) + " MiB");
  std::vector<ClientResult> results;
  const double daemon_cpu_before = ProcessCpuSeconds(daemon.pid());
  const double wall_s = RunClients(
      flags.clients, flags.jobs,
      [&](int c, int64_t share, ClientResult* out) {
        RunClient(flags, daemon.port(), c, share, out);
      },
      &results);
  const double daemon_cpu_s = ProcessCpuSeconds(daemon.pid()) - daemon_cpu_before;
  const double commits_after =
      Metric(Get(daemon.port(), "/metrics"), "tessera_store_commits_total");
  const double peak_rss_mib = ProcStatusMib(daemon.pid(), "VmHWM");
  const double loaded_rss_mib = ProcStatusMib(daemon.pid(), "VmRSS");
  const int exit_status = daemon.Stop();
  if (exit_status != 0) {
    std::cerr << "submit --http: tesserad exited with " << exit_status << '\n';
  }

  int64_t failed = 0;
  double client_cpu_s = 0;
  const std::vector<double> latencies = Gather(results, "submit --http", &failed, &client_cpu_s);
  const int64_t acknowledged = static_cast<int64_t>(latencies.size());
  const double per_job_ms = acknowledged > 0 ? 1000.0 / static_cast<double>(acknowledged) : 0;
  const int64_t commits = commits_before >= 0 && commits_after >= 0
                              ? static_cast<int64_t>(commits_after - commits_before)
                              : -1;
  Json result{
      {"benchmark", flags.tessctl ? "submit_tessctl" : "submit_http"},
      {"jobs", flags.jobs},
      {"clients", flags.clients},
      {"window", 1},
      {"durable", flags.durable},
      {"decisions", flags.decisions},
      {"seed", flags.common.seed},
      {"jobs_per_s", static_cast<double>(acknowledged) / wall_s},
      {"acknowledged", acknowledged},
      {"failed", failed},
      {"wall_s", wall_s},
      {"p50_ms", Percentile(latencies, 0.50)},
      {"p99_ms", Percentile(latencies, 0.99)},
      {"max_ms", Percentile(latencies, 1.0)},
      {"commits", commits},
      {"jobs_per_commit", commits > 0 ? static_cast<double>(acknowledged) / commits : 0.0},
      {"idle_rss_mib", idle_rss_mib},
      {"loaded_rss_mib", loaded_rss_mib},
      {"peak_rss_mib", peak_rss_mib},
      {"daemon_exit_status", exit_status},
      // CPU per acknowledged submit, which machine load does not inflate as it does latency:
      // the daemon's, and (with --tessctl) the tessctl processes'.
      {"daemon_cpu_ms_per_job", daemon_cpu_s * per_job_ms},
  };
  if (flags.tessctl) result["client_cpu_ms_per_job"] = client_cpu_s * per_job_ms;
  if (!flags.vs_sbatch) return result;
  // The same loop with sbatch, right after: the pair shares the machine's state of the moment.
  Progress("submit --tessctl --vs-sbatch run " + std::to_string(run) + ": " +
           std::to_string(flags.jobs) + " sbatch submits");
  const pid_t slurmctld = FindProcess("slurmctld");
  const double slurmctld_cpu_before = slurmctld > 0 ? ProcessCpuSeconds(slurmctld) : -1;
  const double sbatch_wall_s = RunClients(
      flags.clients, flags.jobs,
      [](int c, int64_t share, ClientResult* out) { RunSbatchClient(c, share, out); }, &results);
  const double slurmctld_cpu_s =
      slurmctld > 0 ? ProcessCpuSeconds(slurmctld) - slurmctld_cpu_before : -1;
  int64_t sbatch_failed = 0;
  double sbatch_cpu_s = 0;
  const std::vector<double> sbatch_latencies =
      Gather(results, "sbatch", &sbatch_failed, &sbatch_cpu_s);
  const double sbatch_rate = static_cast<double>(sbatch_latencies.size()) / sbatch_wall_s;
  const double per_sbatch_ms =
      sbatch_latencies.empty() ? 0 : 1000.0 / static_cast<double>(sbatch_latencies.size());
  result["sbatch_cpu_ms_per_job"] = sbatch_cpu_s * per_sbatch_ms;
  result["slurmctld_cpu_ms_per_job"] = slurmctld_cpu_s * per_sbatch_ms;
  result["sbatch_jobs_per_s"] = sbatch_rate;
  result["sbatch_p50_ms"] = Percentile(sbatch_latencies, 0.50);
  result["sbatch_failed"] = sbatch_failed;
  result["tessctl_over_sbatch"] =
      sbatch_rate > 0 ? result["jobs_per_s"].get<double>() / sbatch_rate : 0.0;
  result["failed"] = failed + sbatch_failed;
  return result;
}

}  // namespace

int RunSubmitHttp(const SubmitFlags& flags) {
#ifndef TESSERA_TESSCTL_PATH
  if (flags.tessctl) {
    std::cerr << "submit --tessctl: this tessera-bench was built without tessctl\n";
    return 2;
  }
#endif
  if (flags.vs_sbatch && !flags.tessctl) {
    std::cerr << "submit --vs-sbatch: pairs with --tessctl (the same loop of processes)\n";
    return 2;
  }
  if (flags.vs_sbatch && std::getenv("SLURM_CONF") == nullptr) {
    std::cerr << "submit --vs-sbatch: SLURM_CONF is not set; start a one-node Slurm with "
                 "bench/slurm/one-node.sh and export what it prints\n";
    return 2;
  }
  if (flags.window != 1) {
    std::cerr << "submit --http: each client keeps one request in flight; --window must be 1\n";
    return 2;
  }
  std::vector<Json> runs;
  for (int run = 1; run <= flags.common.repeat; ++run) {
    StatusOr<Json> result = RunOnce(flags, run);
    if (!result.ok()) {
      std::cerr << "submit --http: " << result.status() << '\n';
      return 1;
    }
    runs.push_back(*result);
  }
  const Json summary = Summarize(runs, "jobs_per_s");
  EmitJsonLine(summary);
  std::vector<std::string> fields = {
      "jobs",   "clients", "durable",         "jobs_per_s",   "p50_ms",      "p99_ms",
      "max_ms", "commits", "jobs_per_commit", "idle_rss_mib", "peak_rss_mib"};
  if (flags.vs_sbatch) {
    fields.insert(fields.end(), {"sbatch_jobs_per_s", "sbatch_p50_ms", "tessctl_over_sbatch",
                                 "client_cpu_ms_per_job", "daemon_cpu_ms_per_job",
                                 "sbatch_cpu_ms_per_job", "slurmctld_cpu_ms_per_job"});
  }
  PrintTable(summary, fields);
  return summary.value("failed", 0) > 0 || summary.value("daemon_exit_status", 0) != 0 ? 1 : 0;
}

#else  // !TESSERA_TESSERAD_PATH

int RunSubmitHttp(const SubmitFlags&) {
  std::cerr << "submit --http: this tessera-bench was built without tesserad "
               "(TESSERA_BUILD_EXAMPLES=OFF), so there is no daemon to start\n";
  return 2;
}

#endif

}  // namespace tessera::bench
