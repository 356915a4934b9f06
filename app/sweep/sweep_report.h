// `warpsim report RUN_DIR [RUN_DIR...] -o report.html`: one self-contained HTML page (inline CSS and SVG, nothing
// fetched) comparing the candidates of one or more sweeps: design points, speed-up per workload over the first
// candidate, stall mix, utilisation per unit, roofline position, the sensitivity tornado (a sensitivity sweep),
// the Pareto frontier (cost against time) and energy and power. Every plot is also written as SVG and PNG into
// <report stem>_files/ beside the HTML.
#pragma once

#include <string>
#include <vector>

namespace warpsim::sweep {

struct ReportOptions {
  std::string pareto_cost;    // "" = job_energy_j when the runs model energy, else the first numeric design parameter
  std::string pareto_metric;  // "" = job_total_time_us
};

struct ReportSummary {
  std::string figures_dir;
  std::vector<std::string> figures;  // the SVG files written (each with its PNG)
  std::size_t jobs_with_results = 0, jobs_without = 0;
};

// InputError (exit 2) naming the run directory that is missing, holds no plan or has no finished job, or the
// unknown Pareto column.
ReportSummary write_sweep_report(const std::vector<std::string>& run_dirs, const std::string& html_path,
                                 const ReportOptions& options);

}  // namespace warpsim::sweep
