#include "app/validate/runner.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "app/run_one.h"
#include "app/synth_metrics.h"
#include "app/validate/metrics.h"
#include "sim/core/error.h"
#include "traces/synth/registry.h"

namespace warpsim {
namespace {

// The metric of a finished run: a kernel field, or what the synthesizer derives from the timing.
double measure(const ReferenceCase& c, const MetricInfo& metric, const RunOutcome& run) {
  if (metric.source == MetricSource::Kernel) return kernel_metric(run.result, c.metric);
  WorkloadSpec workload;
  workload.synthesizer = c.kind;
  workload.synth_keys = c.keys;
  for (const SynthMetricValue& v : synth_metrics(workload, run))
    if (v.metric.name == c.metric) return v.value;
  throw InputError(fmt::format("{}: the {} synthesizer declares no such result", c.metric, c.kind));
}

void set_simulated(CaseResult& r, double simulated) {
  r.status = CaseStatus::Ok;
  r.simulated = simulated;
  r.error_pct = (simulated - r.reference.measured) / r.reference.measured * 100.0;
}

// --- worker processes ------------------------------------------------------------------------------------------

std::string result_message(const CaseResult& r) {
  nlohmann::json j;
  j["status"] = status_name(r.status);
  j["simulated"] = r.simulated;
  j["unit"] = r.unit;
  j["reason"] = r.reason;
  return j.dump();
}

// The result a worker sent, or Failed when there is none (the worker died) or it is unreadable.
CaseResult read_result_message(const ReferenceCase& c, const std::string& text, int wait_status) {
  CaseResult r;
  r.reference = c;
  if (const std::optional<MetricInfo> metric = find_metric(c.kind, c.metric)) r.unit = metric->unit;
  if (WIFSIGNALED(wait_status)) {
    r.reason = fmt::format("the worker process was killed by signal {} ({})", WTERMSIG(wait_status), strsignal(WTERMSIG(wait_status)));
    return r;
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0 || text.empty()) {
    r.reason = fmt::format("the worker process exited with status {} without a result",
                           WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1);
    return r;
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    r.reason = "the worker process sent an unreadable result";
    return r;
  }
  const std::string status = j.value("status", "");
  r.unit = j.value("unit", r.unit);
  r.reason = j.value("reason", "");
  if (status == "ok") set_simulated(r, j.value("simulated", 0.0));
  else if (status == "unsupported") r.status = CaseStatus::Unsupported;
  else if (status == "skipped") r.status = CaseStatus::Skipped;
  return r;
}

void write_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR) return;  // the parent is gone: nothing to tell
    if (n > 0) done += static_cast<std::size_t>(n);
  }
}

struct Worker {
  pid_t pid = -1;
  int fd = -1;  // read end of the result pipe
  std::size_t index = 0;
  std::string received;
};

Worker start_worker(const std::vector<ReferenceCase>& cases, std::size_t index, const ValidateOptions& options) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("validate: cannot create a pipe: {}", std::strerror(errno)));
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("validate: cannot start a worker process: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    int code = 0;
    try {
      write_all(fds[1], result_message(run_case(cases[index], options)));
    } catch (...) {
      code = 70;
    }
    ::close(fds[1]);
    std::fflush(nullptr);
    ::_exit(code);  // no static destructors or atexit handlers of the parent's state
  }
  ::close(fds[1]);
  return Worker{pid, fds[0], index, {}};
}

std::vector<CaseResult> run_in_workers(const std::vector<ReferenceCase>& cases, const ValidateOptions& options) {
  std::vector<CaseResult> results(cases.size());
  std::vector<Worker> running;
  std::size_t next = 0;
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && running.size() < options.jobs) {
      if (options.on_start) options.on_start(next, cases[next]);
      running.push_back(start_worker(cases, next++, options));
    }
    std::vector<pollfd> fds;
    for (const Worker& w : running) fds.push_back(pollfd{w.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("validate: poll failed: {}", std::strerror(errno)));
    }
    for (std::size_t i = fds.size(); i-- > 0;) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Worker& w = running[i];
      char buffer[4096];
      const ssize_t n = ::read(w.fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        w.received.append(buffer, static_cast<std::size_t>(n));
        continue;
      }
      // End of the pipe: the worker is done (or dead); its exit status says which.
      ::close(w.fd);
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      results[w.index] = read_result_message(cases[w.index], w.received, status);
      if (options.on_finish) options.on_finish(w.index, results[w.index]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  return results;
}

}  // namespace

const char* status_name(CaseStatus status) {
  switch (status) {
    case CaseStatus::Ok: return "ok";
    case CaseStatus::Unsupported: return "unsupported";
    case CaseStatus::Failed: return "failed";
    case CaseStatus::Skipped: return "skipped";
  }
  return "?";
}

CaseResult run_case(const ReferenceCase& c, const ValidateOptions& options) {
  CaseResult r;
  r.reference = c;
  const SynthRegistry& synths = SynthRegistry::instance();
  const std::optional<MetricInfo> metric = find_metric(c.kind, c.metric);
  r.unit = metric ? metric->unit : "";
  if (!synths.find(c.kind)) {
    r.status = CaseStatus::Unsupported;
    r.reason = fmt::format("workload kind '{}' is not built yet (registered kinds: {})", c.kind, fmt::join(synths.kinds(), ", "));
    return r;
  }
  if (!metric) {
    r.reason = fmt::format("unknown metric '{}' for kind {}", c.metric, c.kind);
    return r;
  }
  if (metric->source == MetricSource::Llm) {
    r.status = CaseStatus::Unsupported;
    r.reason = fmt::format("{} is an LLM serving metric; LLM inference is not simulated yet", c.metric);
    return r;
  }
  RunSpec spec;
  spec.gpu = c.gpu;
  spec.overrides = c.overrides;
  spec.overrides.insert(spec.overrides.end(), options.extra_overrides.begin(), options.extra_overrides.end());
  spec.workload.synthesizer = c.kind;
  spec.workload.synth_keys = c.keys;
  spec.driver = "plain";  // SystemC elaborates once per process; the plain driver gives the same results
  spec.progress = false;
  spec.max_memory_bytes = options.max_memory_bytes;
  try {
    PreparedRun prepared = prepare_run(spec);
    if (options.max_warp_instructions != 0) {
      const std::uint64_t estimate = estimate_warp_instructions(*prepared.workload);
      if (estimate > options.max_warp_instructions) {
        r.status = CaseStatus::Skipped;
        r.reason = fmt::format("about {:.3g} warp-instructions, over --max-warp-instructions {:.3g}",
                               static_cast<double>(estimate), static_cast<double>(options.max_warp_instructions));
        return r;
      }
    }
    if (options.before_simulation) options.before_simulation(c);
    const RunOutcome run = simulate(std::move(prepared));
    set_simulated(r, measure(c, *metric, run));
  } catch (const std::exception& e) {  // InputError, SimulationError, or a model's internal error: the case's
    r.status = CaseStatus::Failed;
    r.reason = e.what();
  }
  return r;
}

std::vector<CaseResult> run_cases(const std::vector<ReferenceCase>& cases, const ValidateOptions& options) {
  if (options.jobs > 1) return run_in_workers(cases, options);
  std::vector<CaseResult> results;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (options.on_start) options.on_start(i, cases[i]);
    results.push_back(run_case(cases[i], options));
    if (options.on_finish) options.on_finish(i, results.back());
  }
  return results;
}

}  // namespace warpsim
