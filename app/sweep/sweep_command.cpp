#include "app/sweep/sweep_command.h"
#include "app/subcommands.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <spdlog/spdlog.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include "app/result_set.h"
#include "app/sweep/collect.h"
#include "app/sweep/job_runner.h"
#include "app/sweep/local_backend.h"
#include "app/sweep/pareto.h"
#include "app/sweep/plan.h"
#include "app/sweep/results.h"
#include "app/sweep/sensitivity.h"
#include "app/sweep/slurm.h"
#include "app/sweep/spec.h"
#include "app/sweep/sweep_report.h"
#include "sim/config/config.h"
#include "sim/core/error.h"


namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace warpsim {
namespace {

const char* kSweepUsage =
    "usage: warpsim sweep <subcommand> ...\n"
    "\n"
    "  plan SPEC -o RUN_DIR           expand a sweep spec (configs/sweeps/README.md) into jobs; checks every\n"
    "                                 config override and workload now\n"
    "  submit RUN_DIR [--backend local|slurm|auto] [-j N]\n"
    "                                 run what is missing or failed (local: a process pool on this machine)\n"
    "  run-jobs RUN_DIR JOB [JOB ...] run the named jobs in this process (what the backends call per job)\n"
    "  status RUN_DIR                 jobs per state; failed jobs with the last line of their log\n"
    "  collect RUN_DIR -o FILE.csv    results in a long table (one row per job and kernel) and RUN_DIR/results.sqlite\n"
    "  sensitivity RUN_DIR [-o FILE.csv] [--svg FILE.svg]\n"
    "                                 rank a sensitivity sweep's parameters by their effect on each workload\n"
    "  pareto RUN_DIR [RUN_DIR ...] [--cost COLUMN] [--metric COLUMN] [-o FILE.csv] [--svg-dir DIR]\n"
    "                                 per workload, the candidates on the Pareto frontier of cost against time\n"
    "  cancel RUN_DIR                 scancel the sweep's Slurm arrays (submit again to finish it)\n"
    "\n"
    "warpsim report RUN_DIR [RUN_DIR ...] -o report.html: an HTML report of one or more sweeps.\n";

// Parses a subcommand's options; `positional` names its positional arguments. Returns false after --help.
bool parse(int argc, char** argv, po::options_description& desc, const po::positional_options_description& positional,
           po::variables_map& vm, const std::string& usage) {
  return parse_command_options("sweep", argc, argv, desc, vm, usage, &positional);
}

void require(const po::variables_map& vm, const char* name, const std::string& sub, const std::string& what) {
  if (!vm.count(name)) throw InputError(fmt::format("sweep {}: {} is missing (see warpsim sweep {} --help)", sub, what, sub));
}

// A subcommand whose first argument is RUN_DIR, then `desc`'s own options; false after --help.
bool parse_with_run_dir(int argc, char** argv, po::options_description& desc, std::string& run_dir,
                        po::variables_map& vm, const std::string& sub, const std::string& usage) {
  desc.add_options()("run-dir", po::value(&run_dir), "the run directory");
  po::positional_options_description pos;
  pos.add("run-dir", 1);
  if (!parse(argc, argv, desc, pos, vm, usage)) return false;
  require(vm, "run-dir", sub, "the run directory (RUN_DIR)");
  return true;
}

int sweep_plan(int argc, char** argv) {
  po::options_description desc("options");
  std::string spec_file, out;
  desc.add_options()("spec", po::value(&spec_file), "the sweep spec (YAML)")("out,o", po::value(&out), "the run directory to create");
  po::positional_options_description pos;
  pos.add("spec", 1);
  po::variables_map vm;
  if (!parse(argc, argv, desc, pos, vm, "usage: warpsim sweep plan SPEC -o RUN_DIR")) return 0;
  require(vm, "spec", "plan", "the sweep spec (SPEC)");
  require(vm, "out", "plan", "the run directory (-o RUN_DIR)");
  const auto start = std::chrono::steady_clock::now();
  const sweep::SweepSpec spec = sweep::load_sweep_spec(spec_file);
  if (sweep::holds_plan_of(out, spec.hash)) {
    fmt::print("{} already holds the plan of this spec: kept as it is (warpsim sweep status {})\n", out, out);
    return 0;
  }
  const sweep::SweepPlan plan = sweep::make_plan(spec);
  const auto planned = std::chrono::steady_clock::now();
  const bool written = sweep::write_plan(plan, out);
  const auto end = std::chrono::steady_clock::now();
  std::size_t aliases = 0;
  for (const auto& job : plan.jobs) aliases += !job.alias_of.empty();
  if (!written) {
    fmt::print("{} already holds the plan of this spec: kept as it is (warpsim sweep status {})\n", out, out);
    return 0;
  }
  fmt::print("planned {} jobs ({} design points x {} workloads; {} run as aliases of equal jobs) in {}: expanded in {:.2f} s, "
             "written in {:.2f} s\n",
             plan.jobs.size(), plan.design_points.size(), plan.workloads.size(), aliases, out,
             std::chrono::duration<double>(planned - start).count(), std::chrono::duration<double>(end - planned).count());
  return 0;
}

// sbatch on PATH?
bool sbatch_on_path() {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  const std::string dirs = path;
  for (std::size_t b = 0, e; b <= dirs.size(); b = e + 1) {
    e = dirs.find(':', b);
    if (e == std::string::npos) e = dirs.size();
    std::error_code ec;
    if (e > b && fs::exists(fs::path(dirs.substr(b, e - b)) / "sbatch", ec)) return true;
  }
  return false;
}

int sweep_submit(int argc, char** argv) {
  po::options_description desc("options");
  std::string run_dir, backend;
  unsigned parallel = 0;
  desc.add_options()("run-dir", po::value(&run_dir), "the run directory (from warpsim sweep plan)")
      ("backend", po::value(&backend)->default_value("local"), "local (a process pool here), slurm (job arrays through sbatch), "
       "or auto (slurm when sbatch is on PATH, else local)")
      ("jobs,j", po::value(&parallel), "local: jobs at once (default: the number of CPUs)");
  po::options_description slurm_desc("slurm backend options");
  sweep::add_slurm_options(slurm_desc);
  desc.add(slurm_desc);
  po::positional_options_description pos;
  pos.add("run-dir", 1);
  po::variables_map vm;
  if (!parse(argc, argv, desc, pos, vm, "usage: warpsim sweep submit RUN_DIR [--backend local|slurm|auto] [-j N]"))
    return 0;
  require(vm, "run-dir", "submit", "the run directory (RUN_DIR)");
  if (backend != "local" && backend != "slurm" && backend != "auto") {
    const std::string hint = did_you_mean(backend, {"local", "slurm", "auto"});
    throw InputError(fmt::format("--backend: expected local, slurm or auto, got '{}'{}", backend, hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  }
  if (backend == "auto") {
    const bool sbatch = sbatch_on_path();
    backend = sbatch ? "slurm" : "local";
    spdlog::info("sweep submit: backend {} (sbatch {} on PATH)", backend, sbatch ? "is" : "is not");
  }
  std::vector<std::string> jobs = sweep::jobs_to_run(run_dir);
  if (backend == "slurm") {
    if (!sweep::submitted_arrays(run_dir).empty()) {
      // Jobs the sweep's arrays still hold (queued or running) are not submitted twice; a `running` marker that no
      // task holds any more was left by a task that died without cleaning up (a failed node) and runs again.
      const auto held = sweep::slurm_states(run_dir);
      jobs.clear();
      for (const std::string& job : sweep::jobs_to_run(run_dir, /*include_running=*/true))
        if (!held.count(job)) jobs.push_back(job);
    }
    const auto arrays = sweep::submit_to_slurm(run_dir, jobs, sweep::warpsim_executable(), sweep::slurm_options_from(vm));
    std::size_t submitted = 0;
    for (const auto& a : arrays) submitted += static_cast<std::size_t>(a.job_count);
    fmt::print("submitted {} jobs in {} Slurm arrays (warpsim sweep status {} follows them)\n", submitted, arrays.size(), run_dir);
    return 0;
  }
  if (jobs.empty()) {
    bool all_done = false;
    fmt::print("{}", sweep::status_report(run_dir, all_done));
    fmt::print("nothing to run\n");
    return all_done ? 0 : 1;
  }
  if (!vm.count("jobs")) parallel = std::max(1u, std::thread::hardware_concurrency());
  spdlog::info("sweep submit: {} jobs to run, {} at a time", jobs.size(), parallel);
  const int status = sweep::run_local_pool(run_dir, jobs, parallel);
  bool all_done = false;
  fmt::print("{}", sweep::status_report(run_dir, all_done));
  return status;
}

int sweep_run_jobs(int argc, char** argv) {
  po::options_description desc("options");
  std::string run_dir;
  std::vector<std::string> names;
  desc.add_options()("run-dir", po::value(&run_dir), "the run directory")("job", po::value(&names), "job names");
  po::positional_options_description pos;
  pos.add("run-dir", 1).add("job", -1);
  po::variables_map vm;
  if (!parse(argc, argv, desc, pos, vm, "usage: warpsim sweep run-jobs RUN_DIR JOB_NAME [JOB_NAME ...]")) return 0;
  require(vm, "run-dir", "run-jobs", "the run directory (RUN_DIR)");
  return sweep::run_jobs(run_dir, names);
}

int sweep_status(int argc, char** argv) {
  po::options_description desc("options");
  std::string run_dir;
  po::variables_map vm;
  if (!parse_with_run_dir(argc, argv, desc, run_dir, vm, "status", "usage: warpsim sweep status RUN_DIR")) return 0;
  bool all_done = false;
  fmt::print("{}", sweep::status_report(run_dir, all_done));
  if (!sweep::submitted_arrays(run_dir).empty()) {
    // Jobs a Slurm array still holds (queued, or running on some node): absent once their task has ended.
    try {
      std::map<std::string, std::size_t> per_state;
      for (const auto& [job, state] : sweep::slurm_states(run_dir)) ++per_state[state];
      std::vector<std::string> parts;
      for (const auto& [state, n] : per_state) parts.push_back(fmt::format("{} {}", n, state));
      fmt::print("slurm: {}\n", parts.empty() ? "no task of this sweep's arrays is queued or running" : fmt::format("{}", fmt::join(parts, ", ")));
    } catch (const InputError& e) {
      fmt::print("slurm: cannot ask the cluster ({})\n", e.what());
    }
  }
  return 0;
}

int sweep_sensitivity(int argc, char** argv) {
  po::options_description desc("options");
  std::string run_dir, csv, svg;
  desc.add_options()("out,o", po::value(&csv), "also write the effects as CSV to this file")
      ("svg", po::value(&svg), "also write a tornado plot (SVG) to this file");
  po::variables_map vm;
  if (!parse_with_run_dir(argc, argv, desc, run_dir, vm, "sensitivity",
                          "usage: warpsim sweep sensitivity RUN_DIR [-o effects.csv] [--svg tornado.svg]"))
    return 0;
  const sweep::SensitivityResult r = sweep::read_sensitivity(run_dir);
  if (!csv.empty()) write_file_atomically(csv, sweep::sensitivity_csv(r));
  if (!svg.empty()) write_file_atomically(svg, sweep::sensitivity_svg(r));
  fmt::print("{}", sweep::sensitivity_table(r));
  return 0;
}

// RUN_DIR [RUN_DIR ...] then `desc`'s own options; false after --help.
bool parse_with_run_dirs(int argc, char** argv, po::options_description& desc, std::vector<std::string>& run_dirs,
                         po::variables_map& vm, const std::string& command, const std::string& usage) {
  desc.add_options()("run-dir", po::value(&run_dirs), "the run directories");
  po::positional_options_description pos;
  pos.add("run-dir", -1);
  if (!parse_command_options(command, argc, argv, desc, vm, usage, &pos)) return false;
  if (run_dirs.empty()) throw InputError(fmt::format("{}: the run directory (RUN_DIR) is missing (see --help)", command));
  return true;
}

int sweep_pareto(int argc, char** argv) {
  po::options_description desc("options");
  std::vector<std::string> run_dirs;
  std::string cost, metric, csv, svg_dir;
  desc.add_options()("cost", po::value(&cost)->default_value(sweep::kDefaultParetoCost),
                     "the cost column: a numeric design-point parameter (sm.count, hbm.bandwidth, ...) or a job column "
                     "(job_energy_j, job_average_power_w, job_peak_kernel_power_w, ...)")
      ("metric", po::value(&metric)->default_value(sweep::kDefaultParetoMetric), "the metric column (lower is better, or higher for a rate: llm.tokens_per_s, ...)")
      ("out,o", po::value(&csv), "also write the table as CSV to this file")
      ("svg-dir", po::value(&svg_dir), "also write a plot per workload (pareto_<n>.svg) into this directory");
  po::variables_map vm;
  if (!parse_with_run_dirs(argc, argv, desc, run_dirs, vm, "sweep pareto",
                           "usage: warpsim sweep pareto RUN_DIR [RUN_DIR ...] [--cost COLUMN] [--metric COLUMN] [-o pareto.csv]"))
    return 0;
  std::vector<sweep::RunResults> runs;
  for (const std::string& dir : run_dirs) runs.push_back(sweep::load_run_results(dir));
  const sweep::ParetoResult r = sweep::pareto(runs, cost, metric);
  if (!csv.empty()) write_file_atomically(csv, sweep::pareto_csv(r));
  if (!svg_dir.empty()) {
    std::error_code ec;
    fs::create_directories(svg_dir, ec);
    for (std::size_t w = 0; w < r.workloads.size(); ++w)
      write_file_atomically(fs::path(svg_dir) / fmt::format("pareto_{}.svg", w + 1), sweep::pareto_svg(r, w));
  }
  fmt::print("{}", sweep::pareto_table(r));
  return 0;
}

int sweep_cancel(int argc, char** argv) {
  po::options_description desc("options");
  std::string run_dir;
  po::variables_map vm;
  if (!parse_with_run_dir(argc, argv, desc, run_dir, vm, "cancel", "usage: warpsim sweep cancel RUN_DIR")) return 0;
  const int cancelled = sweep::cancel_slurm_arrays(run_dir);
  fmt::print("cancelled {} Slurm arrays; their running jobs are marked unfinished, and `warpsim sweep submit {}` "
             "runs what is left\n", cancelled, run_dir);
  return 0;
}

int sweep_collect(int argc, char** argv) {
  po::options_description desc("options");
  std::string run_dir, out;
  desc.add_options()("out,o", po::value(&out), "the CSV file to write");
  po::variables_map vm;
  if (!parse_with_run_dir(argc, argv, desc, run_dir, vm, "collect", "usage: warpsim sweep collect RUN_DIR -o results.csv")) return 0;
  require(vm, "out", "collect", "the CSV file (-o FILE)");
  const sweep::CollectSummary s = sweep::collect_results(run_dir, out);
  fmt::print("{} rows from {} jobs in {} and {}/results.sqlite{}\n", s.rows, s.jobs_with_results, out, run_dir,
             s.jobs_without ? fmt::format("; {} jobs have no results yet (warpsim sweep status {})", s.jobs_without, run_dir) : "");
  return 0;
}

}  // namespace

int cmd_sweep(int argc, char** argv) {
  return dispatch_command({{"plan", sweep_plan},
                           {"submit", sweep_submit},
                           {"run-jobs", sweep_run_jobs},
                           {"status", sweep_status},
                           {"collect", sweep_collect},
                           {"sensitivity", sweep_sensitivity},
                           {"pareto", sweep_pareto},
                           {"cancel", sweep_cancel}},
                          "sweep subcommand", kSweepUsage, argc, argv);
}

int cmd_report(int argc, char** argv) {
  po::options_description desc("options");
  std::vector<std::string> run_dirs;
  std::string out;
  sweep::ReportOptions options;
  desc.add_options()("out,o", po::value(&out), "the HTML file to write (its plots go to <name>_files/ beside it)")
      ("cost", po::value(&options.pareto_cost), "the Pareto plot's cost column (default: job_energy_j when the GPU models "
       "energy, else the first numeric design parameter)")
      ("metric", po::value(&options.pareto_metric), "the Pareto plot's metric column (default: job_total_time_us)");
  po::variables_map vm;
  if (!parse_with_run_dirs(argc, argv, desc, run_dirs, vm, "report",
                           "usage: warpsim report RUN_DIR [RUN_DIR ...] -o report.html [--cost COLUMN] [--metric COLUMN]\n"
                           "A self-contained HTML page (inline CSS and SVG) comparing the candidates of sweep run directories;\n"
                           "every plot also as SVG and PNG in <name>_files/."))
    return 0;
  if (!vm.count("out")) throw InputError("report: the HTML file (-o report.html) is missing (see warpsim report --help)");
  const sweep::ReportSummary s = sweep::write_sweep_report(run_dirs, out, options);
  fmt::print("wrote {} ({} finished jobs{}) and {} plots as SVG and PNG in {}\n", out, s.jobs_with_results,
             s.jobs_without ? fmt::format("; {} without results yet", s.jobs_without) : "", s.figures.size(), s.figures_dir);
  return 0;
}

}  // namespace warpsim
