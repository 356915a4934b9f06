// A sweep spec (`warpsim sweep plan SPEC`): the YAML file that says which GPU designs to simulate on which
// workloads. Its format is documented in configs/sweeps/README.md and README.md ("Sweeps"):
//
//   name: h100_variants                 # optional; default: the file's stem
//   base: h100_sxm                      # GPU config name or path (relative to this file)
//   candidates:                         # optional; default: one candidate, the base itself (named after it)
//     h100: {}                          #   the base as it is
//     more_sms: {set: {sm.count: 160}}  #   overrides, as --set (a map, or a list of "key=value")
//     mine: {config: mine.yaml}         #   another config file (relative to this file), optionally with set:
//   parameters:                         # optional; every candidate is crossed with every design point
//     grid:                             #   cartesian product of each parameter's values
//       sm.count: [114, 132]
//       clocks.sm: {from: 1.5GHz, to: 1.9GHz, step: 0.2GHz}   # a range, in the parameter's units
//     zip:                              #   linked parameters: the i-th values go together
//       - {sm.count: [66, 132], l2.size: [25MiB, 50MiB]}
//   workloads:                          # required
//     - trace: kernels.wst              #   a native or captured trace (relative to this file)
//     - synth: gemm                     #   a synthesizer kind and its keys; a list of values expands
//       m: [1, 16]
//       n: 4096
//       k: 4096
//     - llm: llama-3-8b                 #   an LLM step (warpsim llm): a preset or config.json, with
//       phase: decode                   #   phase, batch, prompt, context, dtype, tp (lists expand)
//       batch: [1, 8]
//   name: may label a workload entry (default: kind and keys).
//   sensitivity:                        # instead of candidates: and parameters:
//     step: 10%                         #   each parameter at base x 0.9 and base x 1.1 (a fraction or a percentage)
//     parameters: [sm.count, hbm.bandwidth, l2.size, clocks.sm]
//
// Synthesized workloads are deterministic, so a spec has no repeats or seeds: the same job would give the same
// numbers. A synthesizer that takes a `seed` key sweeps it as any other key (a list of seeds).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace warpsim::sweep {

// The values of one parameter: a list as written, or a range expanded once the parameter's type is known.
struct ParamValues {
  std::vector<std::string> list;
  std::string from, to, step;  // a range when `step` is set
  bool is_range() const { return !step.empty(); }
};

// One axis of the design space: the parameters whose values advance together (one for a grid parameter,
// several for a zip group). All of an axis's parameters have as many values.
struct Axis {
  std::vector<std::string> keys;          // dotted config keys, "sm.count"
  std::vector<ParamValues> values;        // per key
  std::string where;                      // "FILE:LINE" of the axis, for messages
};

struct Candidate {
  std::string name;
  std::string config;                                       // a config file (absolute), or "" for the base
  std::vector<std::pair<std::string, std::string>> set;     // overrides, key -> value as written
  std::string where;
};

struct WorkloadEntry {
  std::string label;                                        // `name:`, or "" (made from kind and keys)
  std::string trace;                                        // a trace file (absolute) ...
  std::string synthesizer;                                  // ... or a synthesizer kind ...
  std::vector<std::pair<std::string, std::vector<std::string>>> keys;  // ... with its keys (lists expand)
  std::string llm;                                          // ... or an LLM model (preset or config.json), its
                                                            // scenario in `keys` (phase, batch, ...)
  std::string where;
};

// `sensitivity:`: one-at-a-time perturbation of a base design. The plan makes the candidates: "base", and per
// parameter "<key>-<step>pct" and "<key>+<step>pct" with the base's value times (1 -/+ step);
// `warpsim sweep sensitivity RUN_DIR` ranks the parameters by their effect on each workload.
struct Sensitivity {
  double step = 0;                  // relative, in (0, 1)
  std::vector<std::string> keys;    // dotted config keys of numeric parameters
  std::string where;                // "FILE:LINE"
};

struct SweepSpec {
  std::string file;      // as given
  std::string name;
  std::string base;      // config name, or absolute path
  std::vector<Candidate> candidates;
  std::vector<Axis> axes;
  std::vector<WorkloadEntry> workloads;
  std::optional<Sensitivity> sensitivity;  // set: the candidates are made by the plan
  std::string hash;      // FNV-1a of the spec's text
};

// Reads and checks the structure of a spec. Throws InputError "FILE:LINE: KEY: what was expected" for unknown
// or misspelt keys (with a did-you-mean), wrong shapes and missing sections. Config keys and synthesizer keys
// are checked by the plan, against the config schema and the synthesizer's declaration.
SweepSpec load_sweep_spec(const std::string& path);

}  // namespace warpsim::sweep
