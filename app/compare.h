// `warpsim compare`: design candidates side by side. Reads the stats.json of several runs and prints, per
// kernel (matched across runs by name, grid and block, not by position), time, throughput and the main
// utilisations of each run and its speed-up over the first; then the kernels some run lacks, and a totals row
// per run.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace warpsim {

// Throws InputError when a file is missing or is not a warpsim stats.json.
std::string compare_runs(const std::vector<std::string>& stats_files);
// The same for runs in memory: (label, stats.json text) pairs, baseline first (`warpsim compare --gpu A --gpu B`).
std::string compare_results(const std::vector<std::pair<std::string, std::string>>& runs);

}  // namespace warpsim
