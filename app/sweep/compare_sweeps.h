// `warpsim compare RUN_DIR RUN_DIR...` given sweep run directories: per workload, every candidate of every sweep
// side by side (time, speed-up and energy against the first sweep's first candidate), as text on the terminal.
// `warpsim report` draws the same comparison as plots.
#pragma once

#include <string>
#include <vector>

namespace warpsim::sweep {

// InputError when a directory holds no sweep plan or no finished job.
std::string compare_sweeps(const std::vector<std::string>& run_dirs);

}  // namespace warpsim::sweep
