// `warpsim sweep submit RUN_DIR --backend local`: a pool of processes on this machine, each the warpsim
// executable itself running `warpsim sweep run-jobs RUN_DIR JOB` (a crash in one job cannot take the pool down),
// with its output in the job's log.txt; a progress line with an ETA on stderr.
#pragma once

#include <string>
#include <vector>

namespace warpsim::sweep {

// The running warpsim executable (/proc/self/exe): what the backends start per job.
std::string warpsim_executable();

// The jobs of RUN_DIR that still need running: not aliases, not done, not running in a live process.
std::vector<std::string> jobs_to_run(const std::string& run_dir, bool include_running = false);

// Runs `jobs` with at most `parallel` at once. SIGINT or SIGTERM stops the pool: its jobs are sent SIGTERM (they
// write `unfinished`) and it returns 128 + the signal. Otherwise returns 0 when every job ended done, 1 when one
// failed. A job process that dies without a marker (a crash) is marked failed with its signal.
int run_local_pool(const std::string& run_dir, const std::vector<std::string>& jobs, unsigned parallel);

}  // namespace warpsim::sweep
