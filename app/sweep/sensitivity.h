// `warpsim sweep sensitivity RUN_DIR`: the parameters of a sensitivity sweep (a spec with `sensitivity:`, see
// app/sweep/spec.h) ranked by their effect on each workload's time, as a table with text bars (a tornado), a
// CSV and an SVG tornado plot.
#pragma once

#include <string>
#include <vector>

namespace warpsim::sweep {

struct ParameterEffect {
  std::string key;
  double value_down = 0, value_up = 0;  // the parameter's values, base unit
  double time_down_us = 0, time_up_us = 0;
  double change_down = 0, change_up = 0;  // time / base time - 1
  double magnitude() const;               // the larger |change|
};

struct WorkloadSensitivity {
  std::string workload;
  double base_time_us = 0;
  std::vector<ParameterEffect> effects;  // largest magnitude first (ties: the spec's order)
};

struct SensitivityResult {
  double step = 0;
  std::vector<WorkloadSensitivity> workloads;  // in the plan's order
};

// Reads a finished sensitivity sweep. InputError when RUN_DIR's plan has no sensitivity section or a job has no
// results yet (naming how many and `warpsim sweep submit`).
SensitivityResult read_sensitivity(const std::string& run_dir);

std::string sensitivity_table(const SensitivityResult& r);  // the text report, bars included
std::string sensitivity_csv(const SensitivityResult& r);    // one row per workload and parameter
std::string sensitivity_svg(const SensitivityResult& r);    // a tornado plot per workload, one SVG document

}  // namespace warpsim::sweep
