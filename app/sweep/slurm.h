// The Slurm backend of `warpsim sweep submit`: a planned sweep (RUN_DIR with one jobs/<name>/ directory per job)
// becomes one or more job arrays. Each array task runs a few jobs in sequence through
//   warpsim sweep run-jobs RUN_DIR NAME...
// which skips finished jobs and, on SIGTERM (Slurm's --signal=B:TERM@N before the time limit, or scancel), marks
// the current one unfinished; so resubmitting after a kill runs only what is missing.
//
// What lands in RUN_DIR/slurm/:
//   array-N.sbatch     the batch script of array N (#SBATCH lines, module loads, exec of run-jobs)
//   tasks-N.txt        one line per array task: the names of the jobs it runs (task i reads line i+1)
//   logs/%A_%a.out     each task's output (%A: the array's job id, %a: the task index)
//   submitted.json     every array submitted so far: its Slurm job id, script, task list and task count
// N counts on across submissions, so a resubmission never rewrites the task list of an array still queued.
//
// Planning (plan_slurm_arrays) is pure and unit-tested; submit_to_slurm, slurm_states and cancel_slurm_arrays
// call sbatch, squeue and scancel (tools/slurm_local.sh starts a one-node cluster to try them on).
#pragma once

#include <boost/program_options.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace warpsim::sweep {

struct SlurmOptions {
  std::string partition;                  // --partition; empty: the cluster's default partition
  std::string account;                    // --account; empty: the user's default account
  std::string time_limit = "01:00:00";    // --time of each array task (all the jobs it packs)
  std::string memory = "4G";              // --mem of each array task
  int jobs_per_task = 1;                  // jobs packed into one array task, run one after the other
  int throttle = 0;                       // at most this many tasks running at once (--array=...%T); 0: no limit
  int max_array_size = 0;                 // the cluster's MaxArraySize; 0: ask `scontrol show config`
  int signal_seconds_before_end = 120;    // --signal=B:TERM@N; 0: no early signal
  std::vector<std::string> modules;       // `module load` lines at the top of the script, in order
  std::vector<std::string> extra_sbatch_args;  // more #SBATCH lines, verbatim (e.g. --qos=short)
};

// The MaxArraySize assumed when the cluster cannot be asked (Slurm's default: task indices 0..1000).
inline constexpr int kDefaultMaxArraySize = 1001;

// One job array to submit.
struct SlurmArray {
  int number = 0;                                // N of array-N.sbatch / tasks-N.txt
  std::vector<std::vector<std::string>> tasks;   // the job names of each array task, in task-index order
  std::string task_list;                         // the text of tasks-N.txt
  std::string script;                            // the text of array-N.sbatch
};

// Packs `pending_job_names` (in order) into array tasks of options.jobs_per_task jobs each, and the tasks into
// arrays of at most `max_array_size` tasks (indices 0..max_array_size-1, as Slurm requires), numbered from
// `first_number`. No names: no arrays. Throws InputError for options Slurm would reject or the script could not
// carry (a job name with white space, a run directory with '%', '"' or a line break, a malformed --time or --mem).
std::vector<SlurmArray> plan_slurm_arrays(const std::filesystem::path& run_dir,
                                          const std::vector<std::string>& pending_job_names,
                                          const std::filesystem::path& warpsim_binary, const SlurmOptions& options,
                                          int max_array_size, int first_number = 0);

// The cluster's MaxArraySize from `scontrol show config`; kDefaultMaxArraySize, with a warning, when scontrol is
// missing or does not say.
int cluster_max_array_size();

// One array as recorded in RUN_DIR/slurm/submitted.json.
struct SubmittedArray {
  int number = 0;
  std::string job_id;  // Slurm's id of the array (what squeue and scancel take)
  int task_count = 0;
  int job_count = 0;
};

// Writes the scripts and task lists of the pending jobs into RUN_DIR/slurm/, submits each array with
// `sbatch --parsable` and records it in RUN_DIR/slurm/submitted.json (rewritten atomically after each array, so
// a failure half-way still records what was submitted). With a throttle, each array after the first waits for the
// previous one (--dependency=afterany), so the limit holds across arrays. Returns the arrays submitted now
// (none when `pending_job_names` is empty). Throws InputError when sbatch is missing or rejects a script (with
// sbatch's message), or an option is malformed.
std::vector<SubmittedArray> submit_to_slurm(const std::filesystem::path& run_dir,
                                            const std::vector<std::string>& pending_job_names,
                                            const std::filesystem::path& warpsim_binary, const SlurmOptions& options);

// Every array recorded in RUN_DIR/slurm/submitted.json (empty when nothing was submitted).
std::vector<SubmittedArray> submitted_arrays(const std::filesystem::path& run_dir);

// The jobs of the recorded arrays that Slurm still has queued or running: job name -> Slurm state (PENDING,
// RUNNING, COMPLETING, ...), from `squeue -h -r -j IDS -o "%i %T"`. Jobs of finished tasks are absent: their
// state is in their job directory. Throws InputError when squeue is missing or fails.
std::map<std::string, std::string> slurm_states(const std::filesystem::path& run_dir);

// `scancel` of every recorded array; returns how many ids were passed. Arrays Slurm no longer knows are not an
// error. Throws InputError when scancel is missing or fails otherwise.
int cancel_slurm_arrays(const std::filesystem::path& run_dir);

// The options of `warpsim sweep submit --backend slurm`: --partition --account --time --mem --jobs-per-task
// --throttle --max-array-size --signal-seconds --module (repeatable) --sbatch-arg (repeatable).
void add_slurm_options(boost::program_options::options_description& desc);
// Reads them back (defaults for those not given); throws InputError naming the option when a value is invalid.
SlurmOptions slurm_options_from(const boost::program_options::variables_map& vm);

// The result of running a program to completion with its output captured.
struct ProcessResult {
  int exit_code = -1;  // the exit status, or 128 + signal number when it was killed
  std::string out, err;
};
// Runs `argv` (argv[0] looked up on PATH) with stdin from /dev/null, capturing stdout and stderr. Throws
// InputError "PROGRAM not found (...)" when it cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv);

}  // namespace warpsim::sweep
