// The Slurm backend against a real one-node cluster (tools/slurm_local.sh). The "warpsim" the arrays run is
// tests/slurm/stub_run_jobs.sh, which marks each job done (or unfinished when it is killed). A test starts the
// cluster if none runs in $WARPSIM_SLURM_DIR (default /tmp/warpsim-slurm) and stops it again if it started it;
// where Slurm is not installed (the script's exit 3) the test reports "warpsim-skip".
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "app/sweep/slurm.h"
#include "test_helpers.h"

using namespace warpsim::sweep;
using wstest::read_text;
using wstest::ScopedEnv;
using wstest::TempDir;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = WARPSIM_SOURCE_DIR;

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Starts the local cluster unless one runs; stops it on destruction when it started it.
class LocalCluster {
 public:
  LocalCluster() {
    const char* d = std::getenv("WARPSIM_SLURM_DIR");
    dir_ = d && *d ? d : "/tmp/warpsim-slurm";
    const std::string script = (kSource / "tools" / "slurm_local.sh").string();
    if (shell("'" + script + "' status '" + dir_ + "' > /dev/null 2>&1") == 0) {
      available_ = true;
    } else {
      // --no-install: a test does not install packages; `tools/slurm_local.sh start` (CI) does.
      status_ = shell("'" + script + "' start --no-install '" + dir_ + "'");
      available_ = status_ == 0;
      started_ = available_;
    }
    if (available_) setenv("SLURM_CONF", (fs::path(dir_) / "etc" / "slurm.conf").c_str(), 1);
  }
  ~LocalCluster() {
    if (started_) shell("'" + (kSource / "tools" / "slurm_local.sh").string() + "' stop '" + dir_ + "'");
  }
  bool available() const { return available_; }
  int start_status() const { return status_; }

 private:
  std::string dir_;
  bool available_ = false, started_ = false;
  int status_ = 0;
};

// A planned sweep as the stub needs it: RUN_DIR/jobs/<name>/ per job.
std::vector<std::string> make_jobs(const fs::path& run_dir, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    names.push_back("point" + std::to_string(i));
    fs::create_directories(run_dir / "jobs" / names.back());
  }
  return names;
}

// Polls until `done()` or `seconds` pass; returns whether done() held.
template <class F>
bool wait_for(F done, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return done();
}

int lines_in(const fs::path& file) {
  if (!fs::exists(file)) return 0;
  const std::string text = read_text(file);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("a packed sweep split into two arrays runs every job exactly once on the local Slurm", "[cluster]") {
  LocalCluster cluster;
  if (!cluster.available()) {
    REQUIRE(cluster.start_status() == 3);  // not installed is a skip; installed but not starting is a failure
    WARN("warpsim-skip: no local Slurm (tools/slurm_local.sh start installs it)");
    return;
  }
  TempDir tmp;
  const fs::path run_dir = tmp.path() / "sweep with spaces";  // the --output path and the arguments stay whole
  const std::vector<std::string> names = make_jobs(run_dir, 11);
  SlurmOptions o;
  o.jobs_per_task = 3;     // 4 tasks
  o.max_array_size = 3;    // arrays of 3 and 1 tasks
  o.time_limit = "00:02:00";
  o.memory = "100M";
  const auto submitted = submit_to_slurm(run_dir, names, kSource / "tests" / "slurm" / "stub_run_jobs.sh", o);
  REQUIRE(submitted.size() == 2);
  CHECK(submitted[0].task_count == 3);
  CHECK(submitted[1].task_count == 1);
  CHECK(submitted[0].job_count + submitted[1].job_count == 11);
  const bool finished = wait_for([&] { return slurm_states(run_dir).empty(); }, 40);
  REQUIRE(finished);
  for (const std::string& name : names) {
    INFO(name);
    CHECK(lines_in(run_dir / "jobs" / name / "done") == 1);
  }
  // Each task wrote its log where the script said, under the path with spaces.
  for (const SubmittedArray& a : submitted)
    for (int t = 0; t < a.task_count; ++t) CHECK(fs::exists(run_dir / "slurm" / "logs" / (a.job_id + "_" + std::to_string(t) + ".out")));
}

TEST_CASE("cancelling a running sweep's arrays stops its tasks, which mark their job unfinished", "[cluster]") {
  LocalCluster cluster;
  if (!cluster.available()) {
    REQUIRE(cluster.start_status() == 3);
    WARN("warpsim-skip: no local Slurm (tools/slurm_local.sh start installs it)");
    return;
  }
  TempDir tmp;
  const fs::path run_dir = tmp.path() / "sweep";
  const std::vector<std::string> names = make_jobs(run_dir, 2);
  wstest::write_text(run_dir / "stub-sleep", "60\n");  // each job would take a minute
  SlurmOptions o;
  o.time_limit = "00:05:00";
  o.memory = "100M";
  REQUIRE(submit_to_slurm(run_dir, names, kSource / "tests" / "slurm" / "stub_run_jobs.sh", o).size() == 1);
  const bool running = wait_for([&] {
    const auto states = slurm_states(run_dir);
    // Running, and the stub's SIGTERM trap in place (a task signalled before its shell set the trap leaves no mark).
    return states.count("point0") && states.at("point0") == "RUNNING" && fs::exists(run_dir / "jobs" / "point0" / "started");
  }, 20);
  REQUIRE(running);
  CHECK(cancel_slurm_arrays(run_dir) == 1);
  const bool gone = wait_for([&] { return slurm_states(run_dir).empty(); }, 20);
  REQUIRE(gone);
  CHECK_FALSE(fs::exists(run_dir / "jobs" / "point0" / "done"));
  CHECK(lines_in(run_dir / "jobs" / "point0" / "unfinished") == 1);  // scancel's SIGTERM reached the task
}
