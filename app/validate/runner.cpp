#include "app/validate/runner.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "app/llm/llm_cases.h"
#include "app/run_one.h"
#include "app/synth_metrics.h"
#include "app/validate/collective_cases.h"
#include "app/validate/metrics.h"
#include "app/workload_cache.h"
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

// Cases that need the same simulation (GPU, overrides, workload: same_simulation_groups), run with one.
std::vector<CaseResult> run_same_simulation(const std::vector<const ReferenceCase*>& members,
                                            const ValidateOptions& options) {
  if (!members.empty() && members.front()->kind == llm::kLlmKind) return llm::run_llm_cases(members, options);
  if (!members.empty() && is_collective_kind(members.front()->kind)) return run_collective_cases(members, options);
  std::vector<CaseResult> results(members.size());
  std::vector<std::size_t> to_simulate;
  std::vector<MetricInfo> metrics(members.size());
  const SynthRegistry& synths = SynthRegistry::instance();
  for (std::size_t i = 0; i < members.size(); ++i) {
    const ReferenceCase& c = *members[i];
    CaseResult& r = results[i];
    r.reference = c;
    const std::optional<MetricInfo> metric = find_metric(c.kind, c.metric);
    r.unit = metric ? metric->unit : "";
    if (!synths.find(c.kind)) {
      r.status = CaseStatus::Unsupported;
      r.reason = fmt::format("workload kind '{}' is not built yet (registered kinds: {})", c.kind, fmt::join(synths.kinds(), ", "));
    } else if (!metric) {
      r.reason = fmt::format("unknown metric '{}' for kind {}", c.metric, c.kind);
    } else if (metric->source == MetricSource::Llm) {
      r.status = CaseStatus::Unsupported;
      r.reason = fmt::format("{} is an LLM serving metric: it needs workload kind {} (validation/llm.yaml)", c.metric,
                             llm::kLlmKind);
    } else {
      metrics[i] = *metric;
      to_simulate.push_back(i);
    }
  }
  if (to_simulate.empty()) return results;
  const ReferenceCase& c = *members[to_simulate.front()];
  RunSpec spec;
  spec.gpu = c.gpu;
  // The case's own `set:` comes last, so that it wins over what applies to every case (calibrate's fitted values).
  spec.overrides = options.extra_overrides;
  spec.overrides.insert(spec.overrides.end(), c.overrides.begin(), c.overrides.end());
  spec.workload.synthesizer = c.kind;
  spec.workload.synth_keys = c.keys;
  spec.driver = "plain";  // SystemC elaborates once per process; the plain driver gives the same results
  spec.progress = false;
  spec.max_memory_bytes = options.max_memory_bytes;
  const auto mark = [&](CaseStatus status, const std::string& reason) {
    for (std::size_t i : to_simulate) {
      results[i].status = status;
      results[i].reason = reason;
    }
  };
  try {
    PreparedRun prepared = prepare_run(spec);
    if (options.max_warp_instructions != 0) {
      const std::uint64_t estimate = estimate_warp_instructions(*prepared.workload);
      if (estimate > options.max_warp_instructions) {
        mark(CaseStatus::Skipped, fmt::format("about {:.3g} warp-instructions, over --max-warp-instructions {:.3g}",
                                              static_cast<double>(estimate),
                                              static_cast<double>(options.max_warp_instructions)));
        return results;
      }
    }
    if (options.before_simulation) options.before_simulation(c);
    const RunOutcome run = options.cache ? options.cache->run(std::move(prepared)) : simulate(std::move(prepared));
    for (std::size_t i : to_simulate) {
      try {
        set_simulated(results[i], measure(*members[i], metrics[i], run));
      } catch (const std::exception& e) {
        results[i].status = CaseStatus::Failed;
        results[i].reason = e.what();
      }
    }
  } catch (const std::exception& e) {  // InputError, SimulationError, or a model's internal error: the cases'
    mark(CaseStatus::Failed, e.what());
  }
  return results;
}

// --- worker processes ------------------------------------------------------------------------------------------

nlohmann::json result_json(const CaseResult& r) {
  nlohmann::json j;
  j["status"] = status_name(r.status);
  j["simulated"] = r.simulated;
  j["unit"] = r.unit;
  j["reason"] = r.reason;
  return j;
}

// What a worker sends: the results of its group's cases, in order.
std::string results_message(const std::vector<CaseResult>& results) {
  nlohmann::json j = nlohmann::json::array();
  for (const CaseResult& r : results) j.push_back(result_json(r));
  return j.dump();
}

// The results a worker sent for `members`, or Failed for every one when there are none (the worker died) or they
// are unreadable.
std::vector<CaseResult> read_results_message(const std::vector<const ReferenceCase*>& members, const std::string& text,
                                             int wait_status) {
  std::vector<CaseResult> results(members.size());
  std::string failure;
  if (WIFSIGNALED(wait_status))
    failure = fmt::format("the worker process was killed by signal {} ({})", WTERMSIG(wait_status),
                          strsignal(WTERMSIG(wait_status)));
  else if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0 || text.empty())
    failure = fmt::format("the worker process exited with status {} without a result",
                          WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1);
  const nlohmann::json j = failure.empty() ? nlohmann::json::parse(text, nullptr, false) : nlohmann::json();
  if (failure.empty() && (j.is_discarded() || !j.is_array() || j.size() != members.size()))
    failure = "the worker process sent an unreadable result";
  for (std::size_t i = 0; i < members.size(); ++i) {
    CaseResult& r = results[i];
    r.reference = *members[i];
    if (const std::optional<MetricInfo> metric = find_metric(r.reference.kind, r.reference.metric)) r.unit = metric->unit;
    if (!failure.empty()) {
      r.reason = failure;
      continue;
    }
    const nlohmann::json& m = j[i];
    const std::string status = m.is_object() ? m.value("status", "") : "";
    if (!m.is_object()) {
      r.reason = "the worker process sent an unreadable result";
      continue;
    }
    r.unit = m.value("unit", r.unit);
    r.reason = m.value("reason", "");
    const nlohmann::json* simulated = m.contains("simulated") ? &m["simulated"] : nullptr;
    if (status == "ok" && !(simulated && simulated->is_number() && std::isfinite(simulated->get<double>()))) {
      r.reason = "the worker process sent an ok result without a simulated figure";
      continue;
    }
    if (status == "ok") set_simulated(r, simulated->get<double>());
    else if (status == "unsupported") r.status = CaseStatus::Unsupported;
    else if (status == "skipped") r.status = CaseStatus::Skipped;
  }
  return results;
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
  std::size_t group = 0;
  std::string received;
};

Worker start_worker(const std::vector<const ReferenceCase*>& members, std::size_t group, const ValidateOptions& options) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("validate: cannot create a pipe: {}", std::strerror(errno)));
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("validate: cannot start a worker process: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    int code = 0;
    try {
      write_all(fds[1], results_message(run_same_simulation(members, options)));
    } catch (...) {
      code = 70;
    }
    ::close(fds[1]);
    std::fflush(nullptr);
    ::_exit(code);  // no static destructors or atexit handlers of the parent's state
  }
  ::close(fds[1]);
  return Worker{pid, fds[0], group, {}};
}

// Cases that need the same simulation (GPU, overrides, workload), in order of first appearance: one simulation
// answers all their metrics (an Nsight Compute launch gives one case per metric).
std::vector<std::vector<std::size_t>> same_simulation_groups(const std::vector<ReferenceCase>& cases) {
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::string, std::size_t> group_of;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const ReferenceCase& c = cases[i];
    std::string key = c.gpu + '\n' + c.kind;
    for (const std::string& o : c.overrides) key += '\n' + o;
    key += "\n--";
    for (const auto& [k, v] : c.keys) key += '\n' + k + '=' + v;
    const auto [it, inserted] = group_of.emplace(key, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

std::vector<const ReferenceCase*> members_of(const std::vector<ReferenceCase>& cases, const std::vector<std::size_t>& group) {
  std::vector<const ReferenceCase*> members;
  for (std::size_t i : group) members.push_back(&cases[i]);
  return members;
}

std::vector<CaseResult> run_in_workers(const std::vector<ReferenceCase>& cases, const ValidateOptions& options) {
  const std::vector<std::vector<std::size_t>> groups = same_simulation_groups(cases);
  std::vector<CaseResult> results(cases.size());
  std::vector<Worker> running;
  // A failure here (pipe, fork, poll, or a callback that throws) must not leave workers behind.
  struct StopWorkers {
    std::vector<Worker>& running;
    ~StopWorkers() {
      for (const Worker& w : running) {
        ::kill(w.pid, SIGKILL);
        ::close(w.fd);
        while (::waitpid(w.pid, nullptr, 0) < 0 && errno == EINTR) {
        }
      }
    }
  } stop_workers{running};
  std::size_t next = 0;
  while (next < groups.size() || !running.empty()) {
    while (next < groups.size() && running.size() < options.jobs) {
      if (options.on_start)
        for (std::size_t i : groups[next]) options.on_start(i, cases[i]);
      running.push_back(start_worker(members_of(cases, groups[next]), next, options));
      ++next;
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
      const std::vector<std::size_t>& group = groups[w.group];
      std::vector<CaseResult> done = read_results_message(members_of(cases, group), w.received, status);
      for (std::size_t m = 0; m < group.size(); ++m) {
        results[group[m]] = std::move(done[m]);
        if (options.on_finish) options.on_finish(group[m], results[group[m]]);
      }
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
  return run_same_simulation({&c}, options).front();
}

std::vector<CaseResult> run_cases(const std::vector<ReferenceCase>& cases, const ValidateOptions& options) {
  if (options.jobs > 1) return run_in_workers(cases, options);
  std::vector<CaseResult> results(cases.size());
  for (const std::vector<std::size_t>& group : same_simulation_groups(cases)) {
    if (options.on_start)
      for (std::size_t i : group) options.on_start(i, cases[i]);
    std::vector<CaseResult> done = run_same_simulation(members_of(cases, group), options);
    for (std::size_t m = 0; m < group.size(); ++m) {
      results[group[m]] = std::move(done[m]);
      if (options.on_finish) options.on_finish(group[m], results[group[m]]);
    }
  }
  return results;
}

}  // namespace warpsim
