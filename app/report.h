// Result output: stats.json (nested, for programs), stats.csv (one row per kernel, for tables and pandas),
// and the human summary printed to the terminal.
#pragma once

#include <string>

#include "models/gpu/gpu.h"

namespace warpsim {

std::string results_json(const RunResult& r);
std::string results_csv(const RunResult& r);
std::string results_summary(const RunResult& r);
// Chrome trace-event JSON (opens in Perfetto / chrome://tracing): one track per SM with each CTA's residency,
// and a track of kernels.
std::string results_timeline(const RunResult& r);

}  // namespace warpsim
