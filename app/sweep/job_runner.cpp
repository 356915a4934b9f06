#include "app/sweep/job_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "app/gpu_configs.h"
#include "app/json_input.h"
#include "app/llm/llm_run.h"
#include "app/llm/model.h"
#include "app/workload_cache.h"
#include "app/report.h"
#include "app/result_set.h"
#include "app/run_one.h"
#include "app/sweep/plan.h"
#include "sim/config/input_file.h"
#include "sim/config/yaml_tree.h"
#include "sim/core/error.h"

namespace fs = std::filesystem;

namespace warpsim::sweep {

const char* state_name(JobState s) {
  switch (s) {
    case JobState::pending: return "pending";
    case JobState::running: return "running";
    case JobState::done: return "done";
    case JobState::failed: return "failed";
    case JobState::unfinished: return "unfinished";
    case JobState::alias: return "alias";
  }
  return "?";
}

namespace {

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

bool file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// What the signal handler needs, prepared before each job: it may only call async-signal-safe functions.
char g_unfinished_path[4096];
char g_running_path[4096];
volatile std::sig_atomic_t g_in_job = 0;

extern "C" void on_stop_signal(int sig) {
  if (g_in_job) {
    const int fd = ::open(g_unfinished_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      const char* name = sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : sig == SIGUSR1 ? "SIGUSR1" : "SIGUSR2";
      const char prefix[] = "stopped by ";
      [[maybe_unused]] ssize_t n = ::write(fd, prefix, sizeof prefix - 1);
      n = ::write(fd, name, std::strlen(name));
      n = ::write(fd, " before the job finished\n", 25);
      ::close(fd);
    }
    ::unlink(g_running_path);
  }
  ::_exit(128 + sig);
}

void copy_path(char* dst, const fs::path& p) {
  const std::string s = p.string();
  WARPSIM_ASSERT(s.size() < 4096, "job path too long");
  std::memcpy(dst, s.c_str(), s.size() + 1);
}

void remove_if_there(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

struct Job {
  RunSpec spec;                                      // the workload on the job's resolved config
  std::string llm_model;                             // an LLM step instead: the model ...
  std::map<std::string, std::string> llm_scenario;   // ... and its scenario's keys
  std::string config_hash;                           // as planned
};

// The job's job.yaml.
Job read_job(const fs::path& job_dir) {
  const std::string file = (job_dir / kJobFile).string();
  using config_detail::TreeNode;
  const TreeNode doc = config_detail::parse_yaml(read_input_file(file, kMaxConfigFileBytes, "sweep job"), file);
  const auto text = [&](const char* key) {
    const TreeNode* n = doc.find(key);
    return n && n->kind == TreeNode::Kind::Scalar ? n->scalar : std::string();
  };
  Job job;
  job.spec.gpu = (job_dir / text("config")).string();
  job.spec.driver = "plain";  // SystemC elaborates once per process; the plain driver gives the same results
  job.spec.workload.trace_file = text("trace");
  job.spec.workload.synthesizer = text("synth");
  job.llm_model = text("llm");
  if (const TreeNode* keys = doc.find("keys"))
    for (const auto& e : keys->entries) (job.llm_model.empty() ? job.spec.workload.synth_keys : job.llm_scenario)[e.key] = e.value.scalar;
  job.config_hash = text("config_hash");
  return job;
}

// The stats.json of an LLM step (warpsim llm's): its kernels simulated through a cache in memory only, so that
// sweeps never share (or collide in) a cache directory.
std::string run_llm_step(const Job& job) {
  const llm::LlmModel model = llm::load_model(job.llm_model);
  llm::Scenario scenario = llm_scenario(job.llm_scenario);
  // As warpsim llm: the prefill's attention kernel is the one vLLM runs on this candidate (fa3 where it has TMA).
  scenario.prefill_attention = llm::prefill_attention_for(load_gpu_config(job.spec.gpu, job.spec.overrides));
  const std::vector<llm::PlanEntry> plan = llm::build_plan(model, scenario);
  WorkloadCache cache("");
  const llm::LlmResult result = llm::run_llm(model, scenario, plan, job.spec, cache);
  return llm::llm_stats_json(model, scenario, plan, result, "");
}

// Runs one job; false when it failed (its `failed` marker says why).
bool run_job(const fs::path& job_dir, const std::string& name) {
  for (const char* stale : {kStatsFile, kFailedMarker, kUnfinishedMarker}) remove_if_there(job_dir / stale);
  copy_path(g_unfinished_path, job_dir / kUnfinishedMarker);
  copy_path(g_running_path, job_dir / kRunningMarker);
  write_file_atomically(job_dir / kRunningMarker, fmt::format("{} {}\n", host_name(), getpid()));
  g_in_job = 1;
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  try {
    const Job job = read_job(job_dir);
    const std::string hash = config_hash(load_gpu_config(job.spec.gpu, {}));
    if (!job.config_hash.empty() && hash != job.config_hash)
      throw InputError(fmt::format("{}: the config resolves to hash {}, the plan recorded {} (was the file edited?)",
                                   job.spec.gpu, hash, job.config_hash));
    std::string stats;
    if (!job.llm_model.empty()) {
      stats = run_llm_step(job);
    } else {
      stats = results_json(simulate(prepare_run(job.spec)).result);
    }
    write_file_atomically(job_dir / kStatsFile, stats);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    write_file_atomically(job_dir / kDoneMarker, nlohmann::json{{"wall_s", wall}, {"config_hash", hash}}.dump() + "\n");
  } catch (const std::exception& e) {
    error = e.what();
  }
  g_in_job = 0;
  remove_if_there(job_dir / kRunningMarker);
  if (error.empty()) {
    spdlog::info("sweep job {}: done", name);
    return true;
  }
  std::string line = error;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  if (const auto nl = line.rfind('\n'); nl != std::string::npos) line = line.substr(nl + 1);
  write_file_atomically(job_dir / kFailedMarker, line + "\n");
  spdlog::error("sweep job {} failed: {}", name, error);
  return false;
}

}  // namespace

std::string last_line(const fs::path& file) {
  std::ifstream f(file);
  std::string line, last;
  while (std::getline(f, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

JobState job_state(const fs::path& job_dir) {
  if (file_exists(job_dir / kDoneMarker)) return JobState::done;
  if (file_exists(job_dir / kFailedMarker)) return JobState::failed;
  if (file_exists(job_dir / kUnfinishedMarker)) return JobState::unfinished;
  if (file_exists(job_dir / kRunningMarker)) {
    std::ifstream f(job_dir / kRunningMarker);
    std::string host;
    long pid = 0;
    f >> host >> pid;
    if (host == host_name() && pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return JobState::unfinished;
    return JobState::running;
  }
  return JobState::pending;
}

int run_jobs(const std::string& run_dir, const std::vector<std::string>& names) {
  const fs::path dir(run_dir);
  if (!file_exists(dir / kManifestFile)) throw InputError(no_plan_message(run_dir));
  if (names.empty()) throw InputError("sweep run-jobs: name at least one job (warpsim sweep status lists them)");
  std::vector<fs::path> dirs;
  for (const std::string& name : names) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      throw InputError(fmt::format("sweep run-jobs: '{}' is not a job name", name));
    const fs::path job_dir = dir / kJobsDir / name;
    if (!file_exists(job_dir / kJobFile)) {
      // An alias has no directory: its results are its original's.
      const nlohmann::json manifest = read_manifest(run_dir);
      bool alias = false;
      for (const auto& job : manifest.at("jobs"))
        if (job.value("name", "") == name && job.contains("alias_of")) alias = true;
      if (!alias) throw InputError(fmt::format("sweep run-jobs: no job '{}' in '{}'", name, run_dir));
    }
    dirs.push_back(job_dir);
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);
  int failed = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!file_exists(dirs[i] / kJobFile)) continue;  // an alias
    if (file_exists(dirs[i] / kDoneMarker)) {
      spdlog::info("sweep job {}: already done", names[i]);
      continue;
    }
    if (!run_job(dirs[i], names[i])) ++failed;
  }
  return failed ? 1 : 0;
}

}  // namespace warpsim::sweep
