// `warpsim sweep run-jobs RUN_DIR JOB...`: runs jobs of a planned sweep one after the other in this process (the
// local pool and each Slurm array task call it), and the states a job's directory records. Files in
// RUN_DIR/jobs/<job>/, each written through a temporary renamed into place:
//   running     while a run-jobs process works on it: "HOST PID"
//   stats.json  the results (the writer of `warpsim run`)
//   done        last, after stats.json: the job is complete ({"wall_s": ..., "config_hash": ...})
//   failed      the job stopped on an error: the error's last line
//   unfinished  a signal (SIGTERM, SIGINT, SIGUSR1, SIGUSR2: Slurm's --signal, scancel) stopped it mid-run
//   log.txt     its output, when the local pool ran it
// Only `done` marks a complete job: stats.json without it (a kill between the two) is not a result.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace warpsim::sweep {

inline constexpr const char* kDoneMarker = "done";
inline constexpr const char* kFailedMarker = "failed";
inline constexpr const char* kUnfinishedMarker = "unfinished";
inline constexpr const char* kRunningMarker = "running";
inline constexpr const char* kStatsFile = "stats.json";
inline constexpr const char* kJobLog = "log.txt";

enum class JobState { pending, running, done, failed, unfinished, alias };
const char* state_name(JobState s);

// The state of a job directory. A `running` marker of a process of this host that no longer exists reads as
// unfinished (killed with SIGKILL, or the machine's OOM killer).
JobState job_state(const std::filesystem::path& job_dir);

// The last non-empty line of a text file ("" when it cannot be read).
std::string last_line(const std::filesystem::path& file);

// Runs each named job not done yet. Returns 0 when every job is done (or an alias), 1 when one failed.
// InputError when RUN_DIR holds no plan or a name is no job of it. A signal listed above makes the current job
// write `unfinished` and the process exit with 128 + the signal.
int run_jobs(const std::string& run_dir, const std::vector<std::string>& names);

}  // namespace warpsim::sweep
