// `warpsim sweep plan`: a sweep spec expanded into jobs, every design point's config resolved (so that a bad key
// fails here, not in job 517), and written as a run directory:
//   RUN_DIR/manifest.json                 the spec's hash, the parameter columns, every job (written last)
//   RUN_DIR/jobs/<job>/job.yaml           what the job runs (its workload, its config's hash)
//   RUN_DIR/jobs/<job>/config.resolved.yaml  the job's GPU config, every value resolved (the job runs this file)
// A job whose resolved config and workload equal an earlier job's (two candidates that come to the same
// hardware) is an alias of it: it has no directory, and collect reports the other job's results under its own
// design point.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "app/llm/plan.h"
#include "app/run_one.h"
#include "app/sweep/spec.h"

namespace warpsim::sweep {

inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kJobsDir = "jobs";
inline constexpr const char* kJobFile = "job.yaml";
inline constexpr const char* kJobConfigFile = "config.resolved.yaml";
inline constexpr const char* kManifestFormat = "warpsim-sweep-manifest/1";
// Job names longer than this are cut and given a hash suffix (file systems allow 255 bytes per name).
inline constexpr std::size_t kMaxJobNameLength = 120;

struct DesignPoint {
  std::string candidate;
  std::string config_file;                                        // base or the candidate's config
  std::vector<std::pair<std::string, std::string>> overrides;     // candidate's set:, then the axes' values
  std::vector<std::pair<std::string, std::string>> axis_values;   // the axes' values only (for the job name)
  std::string resolved_yaml, config_hash;
  nlohmann::ordered_json params;                                  // column -> value in base units
};

struct PlannedWorkload {
  WorkloadSpec spec;            // a trace or a synthesizer; empty for an LLM step
  std::string llm_model;        // an LLM step: the model (warpsim llm --model) ...
  std::map<std::string, std::string> llm_scenario;  // ... and its scenario's keys as written
  std::string label;            // readable, for job names
  nlohmann::ordered_json given; // the keys as written in the spec
  nlohmann::ordered_json params;  // every key of the synthesizer (defaults filled in), numbers in base units
};

struct PlannedJob {
  std::string name;
  std::size_t design_point = 0, workload = 0;
  std::string alias_of;  // "" for a job that runs
};

// A sensitivity spec's candidate "base" and its perturbations.
inline constexpr const char* kSensitivityBase = "base";
struct SensitivityPoint {
  std::string candidate, key;
  int direction = 0;                 // -1 or +1
  double base_value = 0, value = 0;  // in the parameter's base unit
};
// "sm.count+10pct": the candidate of `key` changed by `direction` x step.
std::string sensitivity_candidate_name(const std::string& key, int direction, double step);

struct SweepPlan {
  SweepSpec spec;
  std::vector<DesignPoint> design_points;
  std::vector<PlannedWorkload> workloads;
  std::vector<PlannedJob> jobs;
  std::vector<std::string> param_columns;     // design-point parameters (dotted config keys)
  std::vector<std::string> workload_columns;  // workload keys
  std::vector<SensitivityPoint> sensitivity;   // a sensitivity spec's perturbed candidates
};

// An LLM step's scenario from the keys of a workload entry (phase, batch, prompt, context, dtype, tp); InputError
// naming the key for a malformed value.
llm::Scenario llm_scenario(const std::map<std::string, std::string>& keys);

// Expands the spec. Throws InputError naming the spec file and the candidate or parameter for a config key or
// value the schema rejects, an unknown synthesizer or key, a missing trace file.
SweepPlan make_plan(const SweepSpec& spec);

// The manifest's JSON.
nlohmann::ordered_json manifest_json(const SweepPlan& plan);

// RUN_DIR/manifest.json, checked to be a sweep plan of this warpsim's format: InputError (saying how to make
// one) when RUN_DIR holds none or another format.
nlohmann::json read_manifest(const std::string& run_dir);
// The error of a RUN_DIR without a plan.
std::string no_plan_message(const std::string& run_dir);

// True when RUN_DIR holds the plan of a spec with this hash; InputError when it holds another spec's plan.
bool holds_plan_of(const std::string& run_dir, const std::string& spec_hash);

// Writes the run directory. A directory that already holds a plan of the same spec is left as it is (its
// results are kept; returns false); a plan of another spec there is an InputError.
bool write_plan(const SweepPlan& plan, const std::string& run_dir);

}  // namespace warpsim::sweep
