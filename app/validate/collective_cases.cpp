#include "app/validate/collective_cases.h"

#include <fmt/format.h>

#include "app/gpu_configs.h"
#include "models/node/collective.h"
#include "sim/core/error.h"

namespace warpsim {
namespace {

double collective_case_number(const ReferenceCase& c, const std::string& key) {
  const auto it = c.keys.find(key);
  if (it == c.keys.end()) throw InputError(fmt::format("workload key {} is missing ({} needs bytes and gpus)", key, c.kind));
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != it->second.size() || !(v > 0))
    throw InputError(fmt::format("workload key {}: expected a number > 0, got '{}'", key, it->second));
  return v;
}

CaseResult run_collective_case(const ReferenceCase& c, const ValidateOptions& options) {
  CaseResult r;
  r.reference = c;
  r.unit = "us";
  try {
    for (const auto& [key, value] : c.keys)
      if (key != "bytes" && key != "gpus")
        throw InputError(fmt::format("workload key '{}' is not one of {}'s: bytes, gpus", key, c.kind));
    if (c.metric != "time_us") throw InputError(fmt::format("metric {}: {} cases give time_us", c.metric, c.kind));
    const double bytes = collective_case_number(c, "bytes"), gpus = collective_case_number(c, "gpus");
    if (gpus != static_cast<double>(static_cast<unsigned>(gpus)) || gpus < 2)
      throw InputError(fmt::format("workload key gpus: expected a whole number >= 2, got {}", gpus));
    std::vector<std::string> overrides = options.extra_overrides;
    overrides.insert(overrides.end(), c.overrides.begin(), c.overrides.end());
    const Config config = load_gpu_config(c.gpu, overrides);
    const CollectiveEstimate e =
        estimate_collective(CollectiveParams::from(config), collective_op(c.kind), bytes, static_cast<unsigned>(gpus));
    r.status = CaseStatus::Ok;
    r.simulated = e.chosen.time_us;
    r.error_pct = (r.simulated - c.measured) / c.measured * 100.0;
  } catch (const std::exception& e) {
    r.status = CaseStatus::Failed;
    r.reason = e.what();
  }
  return r;
}

}  // namespace

bool is_collective_kind(const std::string& kind) {
  for (const char* k : {"allreduce", "allgather", "reducescatter", "alltoall", "all_reduce", "all_gather", "reduce_scatter",
                        "all_to_all"})
    if (kind == k) return true;
  return false;
}

std::vector<CaseResult> run_collective_cases(const std::vector<const ReferenceCase*>& members,
                                             const ValidateOptions& options) {
  std::vector<CaseResult> results;
  for (const ReferenceCase* c : members) results.push_back(run_collective_case(*c, options));
  return results;
}

}  // namespace warpsim
