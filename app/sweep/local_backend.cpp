#include "app/sweep/local_backend.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "app/json_input.h"
#include "app/result_set.h"
#include "app/sweep/job_runner.h"
#include "app/sweep/plan.h"
#include "sim/config/input_file.h"
#include "sim/core/error.h"

namespace fs = std::filesystem;

namespace warpsim::sweep {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_pool_signal(int sig) { g_stop_signal = sig; }

// Forks `warpsim sweep run-jobs RUN_DIR JOB`, its output appended to the job's log.txt.
pid_t start_job(const std::string& exe, const std::string& run_dir, const std::string& job) {
  const std::string log = (fs::path(run_dir) / kJobsDir / job / kJobLog).string();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      ::close(fd);
    }
    std::vector<std::string> args{exe, "sweep", "run-jobs", run_dir, job};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

std::string duration_text(double s) {
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

}  // namespace

std::string warpsim_executable() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw InputError(fmt::format("sweep submit: cannot find the warpsim executable (/proc/self/exe): {}", ec.message()));
  return exe.string();
}

std::vector<std::string> jobs_to_run(const std::string& run_dir, bool include_running) {
  const nlohmann::json m = read_manifest(run_dir);
  std::vector<std::string> jobs;
  for (const auto& job : m.at("jobs")) {
    if (job.contains("alias_of")) continue;
    const std::string name = job.at("name");
    const JobState s = job_state(fs::path(run_dir) / kJobsDir / name);
    if (s != JobState::done && (include_running || s != JobState::running)) jobs.push_back(name);
  }
  return jobs;
}

int run_local_pool(const std::string& run_dir, const std::vector<std::string>& jobs, unsigned parallel) {
  if (jobs.empty()) return 0;
  parallel = std::max(1u, parallel);
  const std::string exe = warpsim_executable();
  struct sigaction sa {}, old_int {}, old_term {};
  sa.sa_handler = on_pool_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  g_stop_signal = 0;

  const auto start = std::chrono::steady_clock::now();
  auto last_print = start - std::chrono::seconds(60);
  std::map<pid_t, std::string> running;
  std::size_t next = 0, finished = 0, failed = 0;
  const auto print_progress = [&](bool force) {
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_print < std::chrono::seconds(3)) return;
    last_print = now;
    const double elapsed = std::chrono::duration<double>(now - start).count();
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * finished / jobs.size());
    // The rest at the pace so far (jobs alike).
    const std::string eta = finished ? duration_text(elapsed * static_cast<double>(jobs.size() - finished) / static_cast<double>(finished))
                                     : std::string("unknown");
    spdlog::info("[{}{}] {}/{} jobs{}, {} running, {} elapsed, ETA {}", std::string(filled, '#'), std::string(kWidth - filled, '.'),
                 finished, jobs.size(), failed ? fmt::format(" ({} failed)", failed) : "", running.size(), duration_text(elapsed), eta);
  };
  while ((next < jobs.size() || !running.empty())) {
    if (g_stop_signal) break;
    while (next < jobs.size() && running.size() < parallel) {
      running[start_job(exe, run_dir, jobs[next])] = jobs[next];
      ++next;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      print_progress(false);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const fs::path job_dir = fs::path(run_dir) / kJobsDir / it->second;
    const JobState state = job_state(job_dir);
    if (state != JobState::done) {
      ++failed;
      if (state != JobState::failed && state != JobState::unfinished) {
        // Died without saying why: a crash (signal) or exec failure.
        const std::string why = WIFSIGNALED(status) ? fmt::format("the job process died of signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)))
                                                    : fmt::format("the job process exited with status {} without a result", WEXITSTATUS(status));
        write_file_atomically(job_dir / kFailedMarker, why + "\n");
        std::error_code ec;
        fs::remove(job_dir / kRunningMarker, ec);
      }
      spdlog::warn("sweep job {} {}: {}", it->second, state_name(job_state(job_dir)), last_line(job_dir / kFailedMarker));
    }
    ++finished;
    running.erase(it);
    print_progress(finished == jobs.size());
  }
  const int sig = g_stop_signal;
  if (sig) {
    spdlog::warn("sweep submit: stopped by signal {}: stopping {} running jobs (they are marked unfinished; submit again to finish)",
                 sig, running.size());
    for (const auto& [pid, name] : running) kill(pid, SIGTERM);
    for (const auto& [pid, name] : running) {
      int status = 0;
      waitpid(pid, &status, 0);
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (sig) return 128 + sig;
  return failed ? 1 : 0;
}

}  // namespace warpsim::sweep
