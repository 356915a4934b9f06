// The Slurm backend without a cluster: packing jobs into array tasks, the % throttle, splitting at MaxArraySize,
// the generated script run by bash with a stand-in warpsim, and submit/status/cancel against stand-in sbatch,
// squeue and scancel programs.
#include <catch2/catch.hpp>

#include <boost/program_options.hpp>
#include <cstdio>
#include <regex>

#include "app/sweep/slurm.h"
#include "sim/core/error.h"
#include "test_helpers.h"

using namespace warpsim::sweep;
using wstest::read_text;
using wstest::ScopedEnv;
using wstest::TempDir;
using wstest::write_text;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> names(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back("job" + std::to_string(i));
  return v;
}

// The value of `#SBATCH --KEY=VALUE` in a script ("" when absent).
std::string sbatch_value(const std::string& script, const std::string& key) {
  const std::regex re("#SBATCH --" + key + "=([^\n]*)\n");
  std::smatch m;
  return std::regex_search(script, m, re) ? m[1].str() : "";
}

int run_bash(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("jobs are packed in order, jobs_per_task to an array task, the last task holding the rest") {
  SlurmOptions o;
  o.jobs_per_task = 3;
  const auto arrays = plan_slurm_arrays("/runs/s", names(7), "/bin/warpsim", o, 1001);
  REQUIRE(arrays.size() == 1);
  const std::vector<std::vector<std::string>> expected{{"job0", "job1", "job2"}, {"job3", "job4", "job5"}, {"job6"}};
  CHECK(arrays[0].tasks == expected);
  CHECK(arrays[0].task_list == "job0 job1 job2\njob3 job4 job5\njob6\n");
  CHECK(sbatch_value(arrays[0].script, "array") == "0-2");  // 3 tasks, no throttle
  CHECK(sbatch_value(arrays[0].script, "time") == "01:00:00");
  CHECK(sbatch_value(arrays[0].script, "mem") == "4G");
  CHECK(sbatch_value(arrays[0].script, "signal") == "B:TERM@120");
  CHECK(sbatch_value(arrays[0].script, "partition").empty());  // the cluster's default
}

TEST_CASE("the throttle becomes the % of --array, and the options their #SBATCH lines") {
  SlurmOptions o;
  o.throttle = 4;
  o.partition = "gpu";
  o.account = "arch-lab";
  o.time_limit = "2-00:30:00";
  o.memory = "500M";
  o.signal_seconds_before_end = 0;
  o.modules = {"gcc/12", "cuda/12.2"};
  o.extra_sbatch_args = {"--qos=short", "--comment=\"my sweep\""};
  const auto arrays = plan_slurm_arrays("/runs/s", names(10), "/bin/warpsim", o, 1001);
  REQUIRE(arrays.size() == 1);
  const std::string& s = arrays[0].script;
  CHECK(sbatch_value(s, "array") == "0-9%4");
  CHECK(sbatch_value(s, "partition") == "gpu");
  CHECK(sbatch_value(s, "account") == "arch-lab");
  CHECK(sbatch_value(s, "time") == "2-00:30:00");
  CHECK(sbatch_value(s, "mem") == "500M");
  CHECK(s.find("--signal") == std::string::npos);
  CHECK(s.find("#SBATCH --qos=short\n#SBATCH --comment=\"my sweep\"\n") != std::string::npos);
  // Modules are loaded, in order, before run-jobs starts.
  const auto gcc = s.find("module load 'gcc/12'\n"), cuda = s.find("module load 'cuda/12.2'\n"), exec = s.find("exec ");
  CHECK(gcc < cuda);
  CHECK(cuda < exec);
  CHECK(exec != std::string::npos);
}

TEST_CASE("more tasks than MaxArraySize split into arrays whose indices stay below it, every job once") {
  SlurmOptions o;
  o.jobs_per_task = 2;
  const int max_array_size = 4;
  const auto job_names = names(19);  // 10 tasks: arrays of 4, 4 and 2 tasks
  const auto arrays = plan_slurm_arrays("/runs/s", job_names, "/bin/warpsim", o, max_array_size, 5);
  REQUIRE(arrays.size() == 3);
  CHECK(arrays[0].number == 5);
  CHECK(arrays[2].number == 7);
  CHECK(sbatch_value(arrays[0].script, "array") == "0-3");
  CHECK(sbatch_value(arrays[1].script, "array") == "0-3");
  CHECK(sbatch_value(arrays[2].script, "array") == "0-1");
  std::vector<std::string> seen;
  for (const auto& a : arrays) {
    CHECK(a.tasks.size() <= static_cast<std::size_t>(max_array_size));
    // Each array reads its own task list.
    CHECK(a.script.find("tasks-" + std::to_string(a.number) + ".txt") != std::string::npos);
    for (const auto& t : a.tasks) seen.insert(seen.end(), t.begin(), t.end());
  }
  CHECK(seen == job_names);
  // Exactly MaxArraySize tasks fit one array.
  CHECK(plan_slurm_arrays("/runs/s", names(8), "/bin/warpsim", o, 4).size() == 1);
}

TEST_CASE("no pending job: no array, and submit calls no sbatch and writes nothing") {
  TempDir tmp;
  CHECK(plan_slurm_arrays(tmp.path(), {}, "/bin/warpsim", SlurmOptions{}, 1001).empty());
  ScopedEnv path("PATH", (tmp.path() / "empty-bin").string());  // no sbatch reachable: calling it would throw
  CHECK(submit_to_slurm(tmp.path(), {}, "/bin/warpsim", SlurmOptions{}).empty());
  CHECK_FALSE(fs::exists(tmp.path() / "slurm"));
  CHECK(submitted_arrays(tmp.path()).empty());
}

TEST_CASE("the script, run by bash, passes paths with spaces and quotes and the task's job names to run-jobs") {
  TempDir tmp;
  const fs::path run_dir = tmp.path() / "my sweeps" / "it's run 1";
  const fs::path fake_warpsim = tmp.path() / "warp sim" / "warpsim";
  // A stand-in warpsim that prints its arguments one per line.
  write_text(fake_warpsim, "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n", true);
  SlurmOptions o;
  o.jobs_per_task = 3;
  const auto arrays = plan_slurm_arrays(run_dir, names(5), fake_warpsim, o, 1001);
  REQUIRE(arrays.size() == 1);
  // sbatch reads the quoted --output path whole.
  CHECK(sbatch_value(arrays[0].script, "output") == "\"" + (run_dir / "slurm/logs/%A_%a.out").string() + "\"");
  write_text(run_dir / "slurm" / "tasks-0.txt", arrays[0].task_list);
  write_text(tmp.path() / "array.sbatch", arrays[0].script);
  const fs::path out = tmp.path() / "out.txt";
  REQUIRE(run_bash("SLURM_ARRAY_TASK_ID=1 bash '" + (tmp.path() / "array.sbatch").string() + "' > '" + out.string() + "'") == 0);
  CHECK(read_text(out) == "sweep\nrun-jobs\n" + run_dir.string() + "\njob3\njob4\n");
  // A task index past the list is an error, not a run-jobs without names.
  CHECK(run_bash("SLURM_ARRAY_TASK_ID=2 bash '" + (tmp.path() / "array.sbatch").string() + "' 2> /dev/null") == 2);
}

TEST_CASE("what Slurm or the script could not carry is one clear error") {
  SlurmOptions o;
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const warpsim::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message([&] { plan_slurm_arrays("/r", {"a b"}, "/w", o, 10); }), Catch::Contains("'a b'"));
  CHECK_THAT(message([&] { plan_slurm_arrays("/r/100%", {"a"}, "/w", o, 10); }), Catch::Contains("'%'"));
  SlurmOptions bad_time;
  bad_time.time_limit = "1 hour";
  CHECK_THAT(message([&] { plan_slurm_arrays("/r", {"a"}, "/w", bad_time, 10); }), Catch::Contains("--time '1 hour'"));
  SlurmOptions bad_pack;
  bad_pack.jobs_per_task = 0;
  CHECK_THAT(message([&] { plan_slurm_arrays("/r", {"a"}, "/w", bad_pack, 10); }), Catch::Contains("--jobs-per-task 0"));
  SlurmOptions bad_mem;
  bad_mem.memory = "4 GB";
  CHECK_THAT(message([&] { plan_slurm_arrays("/r", {"a"}, "/w", bad_mem, 10); }), Catch::Contains("--mem '4 GB'"));
}

TEST_CASE("the sweep submit flags read back into SlurmOptions") {
  namespace po = boost::program_options;
  po::options_description desc;
  add_slurm_options(desc);
  const char* argv[] = {"submit",      "--partition", "gpu", "--account",  "lab", "--time",         "00:10:00",
                        "--mem",       "2G",          "--jobs-per-task", "5",   "--throttle",     "8",
                        "--max-array-size", "100",     "--signal-seconds", "60", "--module",       "a/1",
                        "--module",    "b/2",         "--sbatch-arg=--qos=short"};
  po::variables_map vm;
  po::store(po::parse_command_line(static_cast<int>(std::size(argv)), argv, desc), vm);
  po::notify(vm);
  const SlurmOptions o = slurm_options_from(vm);
  CHECK(o.partition == "gpu");
  CHECK(o.account == "lab");
  CHECK(o.time_limit == "00:10:00");
  CHECK(o.memory == "2G");
  CHECK(o.jobs_per_task == 5);
  CHECK(o.throttle == 8);
  CHECK(o.max_array_size == 100);
  CHECK(o.signal_seconds_before_end == 60);
  CHECK(o.modules == std::vector<std::string>{"a/1", "b/2"});
  CHECK(o.extra_sbatch_args == std::vector<std::string>{"--qos=short"});
  // None given: the struct's defaults.
  po::variables_map empty;
  const char* none[] = {"submit"};
  po::store(po::parse_command_line(1, none, desc), empty);
  po::notify(empty);
  const SlurmOptions d = slurm_options_from(empty);
  CHECK(d.time_limit == SlurmOptions{}.time_limit);
  CHECK(d.jobs_per_task == 1);
}

TEST_CASE("a missing sbatch is one error naming it") {
  TempDir tmp;
  ScopedEnv path("PATH", (tmp.path() / "empty-bin").string());
  SlurmOptions o;
  o.max_array_size = 10;  // no scontrol either
  CHECK_THROWS_WITH(submit_to_slurm(tmp.path(), {"a"}, "/bin/warpsim", o), Catch::Contains("sbatch not found"));
}

TEST_CASE("Slurm submit records each array's id, a resubmission numbers on, status maps tasks to jobs, cancel") {
  TempDir tmp;
  const fs::path bin = tmp.path() / "bin", calls = tmp.path() / "calls.txt";
  // Stand-ins: sbatch answers ids 41, 42, ... (--parsable "ID;cluster"), squeue reports two tasks of array 42,
  // scancel logs its arguments.
  write_text(bin / "sbatch",
             "#!/bin/sh\necho \"sbatch $*\" >> '" + calls.string() + "'\nn=$(grep -c '^sbatch' '" + calls.string() +
                 "')\necho \"$((40 + n));local\"\n",
             true);
  write_text(bin / "squeue", "#!/bin/sh\necho \"squeue $*\" >> '" + calls.string() + "'\nprintf '42_1 RUNNING\\n42_0 PENDING\\n999_0 RUNNING\\n'\n", true);
  write_text(bin / "scancel", "#!/bin/sh\necho \"scancel $*\" >> '" + calls.string() + "'\n", true);
  ScopedEnv path("PATH", bin.string() + ":/usr/bin:/bin");
  const fs::path run_dir = tmp.path() / "run";
  SlurmOptions o;
  o.jobs_per_task = 2;
  o.max_array_size = 2;
  o.throttle = 1;
  const auto first = submit_to_slurm(run_dir, names(6), "/bin/warpsim", o);  // 3 tasks: arrays of 2 and 1
  REQUIRE(first.size() == 2);
  CHECK(first[0].job_id == "41");
  CHECK(first[1].job_id == "42");
  CHECK(first[0].task_count == 2);
  CHECK(first[1].job_count == 2);
  // The throttle holds across arrays: the second waits for the first.
  CHECK_THAT(read_text(calls), Catch::Contains("--dependency=afterany:41"));
  CHECK(read_text(run_dir / "slurm" / "tasks-1.txt") == "job4 job5\n");
  // A resubmission keeps the queued arrays' files and numbers its arrays on.
  const auto second = submit_to_slurm(run_dir, {"job9"}, "/bin/warpsim", o);
  REQUIRE(second.size() == 1);
  CHECK(second[0].number == 2);
  CHECK(read_text(run_dir / "slurm" / "tasks-1.txt") == "job4 job5\n");
  CHECK(read_text(run_dir / "slurm" / "tasks-2.txt") == "job9\n");
  CHECK(submitted_arrays(run_dir).size() == 3);
  CHECK(fs::is_directory(run_dir / "slurm" / "logs"));
  // Array 42 is array 1: its task 0 runs job4 and job5; it has no task 1, and 999 is not ours.
  const auto states = slurm_states(run_dir);
  CHECK(states == std::map<std::string, std::string>{{"job4", "PENDING"}, {"job5", "PENDING"}});
  CHECK_THAT(read_text(calls), Catch::Contains("squeue -h -r -j 41,42,43 -o %i %T"));
  CHECK(cancel_slurm_arrays(run_dir) == 3);
  CHECK_THAT(read_text(calls), Catch::Contains("scancel 41 42 43"));
}

TEST_CASE("a submission sbatch rejects is one error carrying sbatch's message") {
  TempDir tmp;
  write_text(tmp.path() / "bin" / "sbatch",
             "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2\nexit 1\n",
             true);
  ScopedEnv path("PATH", (tmp.path() / "bin").string() + ":/usr/bin:/bin");
  SlurmOptions o;
  o.max_array_size = 10;
  o.partition = "nosuch";
  CHECK_THROWS_WITH(submit_to_slurm(tmp.path() / "run", {"a"}, "/bin/warpsim", o),
                    Catch::Contains("Invalid partition name specified") && Catch::Contains("exit 1"));
  CHECK(submitted_arrays(tmp.path() / "run").empty());
}
