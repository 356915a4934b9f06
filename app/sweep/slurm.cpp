#include "app/sweep/slurm.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "app/json_input.h"
#include "app/result_set.h"
#include "sim/config/input_file.h"
#include "sim/core/error.h"

extern char** environ;

namespace warpsim::sweep {
namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace {

constexpr const char* kSubmittedFile = "submitted.json";

fs::path slurm_dir(const fs::path& run_dir) { return run_dir / "slurm"; }

// `text` as one word for bash, inside single quotes.
std::string shell_quoted(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool has_space_or_control(const std::string& s) {
  for (unsigned char c : s)
    if (std::isspace(c) || std::iscntrl(c)) return true;
  return false;
}

// A value that goes onto an #SBATCH line as one word: sbatch splits those lines at white space and treats
// '"', '\' and '#' specially.
void check_sbatch_word(const std::string& option, const std::string& value) {
  if (value.empty() || has_space_or_control(value) || value.find_first_of("\"\\#'") != std::string::npos)
    throw InputError(fmt::format("{} '{}': expected one word without white space, quotes, '\\' or '#'", option, value));
}

void check_options(const SlurmOptions& o) {
  if (!o.partition.empty()) check_sbatch_word("--partition", o.partition);
  if (!o.account.empty()) check_sbatch_word("--account", o.account);
  // Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, or no limit.
  static const std::regex time_re(R"(([0-9]+-)?[0-9]+(:[0-9]+){0,2}|UNLIMITED|INFINITE|unlimited|infinite)");
  if (!std::regex_match(o.time_limit, time_re))
    throw InputError(fmt::format("--time '{}': expected a Slurm time limit such as 01:00:00 (H:M:S), 90 (minutes) "
                                 "or 2-00:00:00 (days-H:M:S)", o.time_limit));
  static const std::regex mem_re(R"([0-9]+[KMGTkmgt]?)");
  if (!std::regex_match(o.memory, mem_re))
    throw InputError(fmt::format("--mem '{}': expected a size such as 4G, 500M or 4096 (megabytes)", o.memory));
  if (o.jobs_per_task < 1)
    throw InputError(fmt::format("--jobs-per-task {}: expected at least 1 job per array task", o.jobs_per_task));
  if (o.throttle < 0) throw InputError(fmt::format("--throttle {}: expected 0 (no limit) or more", o.throttle));
  if (o.max_array_size < 0)
    throw InputError(fmt::format("--max-array-size {}: expected 0 (ask the cluster) or more", o.max_array_size));
  if (o.signal_seconds_before_end < 0 || o.signal_seconds_before_end > 65535)  // Slurm's limit for @N
    throw InputError(fmt::format("--signal-seconds {}: expected 0 (no signal) to 65535", o.signal_seconds_before_end));
  for (const std::string& m : o.modules)
    if (m.empty() || has_space_or_control(m))
      throw InputError(fmt::format("--module '{}': expected one module name such as cuda/12.2 (give --module once per "
                                   "module)", m));
  for (const std::string& a : o.extra_sbatch_args)
    if (a.size() < 2 || a[0] != '-' || a.find_first_of("\n\r") != std::string::npos)
      throw InputError(fmt::format("--sbatch-arg '{}': expected one sbatch option such as --qos=short", a));
}

void check_job_name(const std::string& name) {
  // Task lists hold names separated by spaces, and each is a directory under jobs/.
  if (name.empty() || has_space_or_control(name) || name.find('/') != std::string::npos || name == "." || name == "..")
    throw InputError(fmt::format("sweep job name '{}': a Slurm task list needs names without white space or '/'", name));
}

// Slurm expands %-patterns in --output and reads quotes in #SBATCH lines: a run directory holding '%' or '"' cannot
// be written there faithfully.
void check_run_dir(const fs::path& run_dir) {
  const std::string s = run_dir.string();
  if (s.find_first_of("%\"\\\n\r") != std::string::npos)
    throw InputError(fmt::format("sweep directory '{}': Slurm's --output cannot name a path holding '%', '\"', '\\' or "
                                 "a line break; move the sweep to a plainer path",
                                 s));
}

// A --job-name from the sweep directory's name: letters, digits, '.', '_' and '-' only.
std::string array_job_name(const fs::path& run_dir) {
  std::string base = run_dir.filename().string();
  if (base.empty()) base = run_dir.parent_path().filename().string();
  for (char& c : base)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return "warpsim-" + base;
}

std::string script_text(const fs::path& run_dir, const fs::path& warpsim_binary, const SlurmOptions& o, int number,
                        std::size_t task_count, std::size_t job_count, const fs::path& task_list) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("# warpsim sweep {}: array {} ({} tasks, {} jobs), written by `warpsim sweep submit --backend slurm`\n",
                   run_dir.string(), number, task_count, job_count);
  s += fmt::format("#SBATCH --job-name={}\n", array_job_name(run_dir));
  s += fmt::format("#SBATCH --array=0-{}{}\n", task_count - 1, o.throttle > 0 ? fmt::format("%{}", o.throttle) : "");
  // Quoted for sbatch (spaces in the path); the directory was checked to hold no '"' or '%'.
  s += fmt::format("#SBATCH --output=\"{}\"\n", (slurm_dir(run_dir) / "logs" / "%A_%a.out").string());
  if (!o.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", o.partition);
  if (!o.account.empty()) s += fmt::format("#SBATCH --account={}\n", o.account);
  s += fmt::format("#SBATCH --time={}\n", o.time_limit);
  s += fmt::format("#SBATCH --mem={}\n", o.memory);
  // B: signals the batch shell, which is run-jobs itself (exec below); without B: only srun steps get it.
  if (o.signal_seconds_before_end > 0) s += fmt::format("#SBATCH --signal=B:TERM@{}\n", o.signal_seconds_before_end);
  for (const std::string& a : o.extra_sbatch_args) s += fmt::format("#SBATCH {}\n", a);
  s += "set -f  # the job names below are split at spaces, never globbed\n";
  for (const std::string& m : o.modules) s += fmt::format("module load {}\n", shell_quoted(m));
  s += fmt::format("jobs=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" {})\n", shell_quoted(task_list.string()));
  s += fmt::format("[ -n \"$jobs\" ] || {{ echo \"warpsim sweep: no line $((SLURM_ARRAY_TASK_ID + 1)) in {}\" >&2; exit 2; }}\n",
                   task_list.string());
  s += fmt::format("exec {} sweep run-jobs {} $jobs\n", shell_quoted(warpsim_binary.string()),
                   shell_quoted(run_dir.string()));
  return s;
}

// The first line of `text` that is not blank, for one-line error messages.
std::string trimmed(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  return text.substr(start);
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

nlohmann::json submitted_json(const fs::path& run_dir) {
  const fs::path file = slurm_dir(run_dir) / kSubmittedFile;
  std::error_code ec;
  if (!fs::exists(file, ec)) return nlohmann::json{{"arrays", nlohmann::json::array()}};
  nlohmann::json j = parse_json_input(read_input_file(file.string(), kMaxResultFileBytes, "Slurm submission record"),
                                      file.string());
  if (!j.is_object() || !j.contains("arrays") || !j["arrays"].is_array())
    throw InputError(fmt::format("{}: expected an object with an \"arrays\" list", file.string()));
  return j;
}

// The words of `line`, split at white space.
std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

std::vector<SlurmArray> plan_slurm_arrays(const fs::path& run_dir, const std::vector<std::string>& pending_job_names,
                                          const fs::path& warpsim_binary, const SlurmOptions& options,
                                          int max_array_size, int first_number) {
  check_options(options);
  check_run_dir(run_dir);
  if (max_array_size < 1) throw InputError(fmt::format("--max-array-size {}: expected at least 1", max_array_size));
  for (const std::string& name : pending_job_names) check_job_name(name);

  const std::size_t per_task = static_cast<std::size_t>(options.jobs_per_task);
  std::vector<std::vector<std::string>> tasks;
  for (std::size_t i = 0; i < pending_job_names.size(); i += per_task)
    tasks.emplace_back(pending_job_names.begin() + i,
                       pending_job_names.begin() + std::min(pending_job_names.size(), i + per_task));

  std::vector<SlurmArray> arrays;
  const std::size_t per_array = static_cast<std::size_t>(max_array_size);
  for (std::size_t t = 0; t < tasks.size(); t += per_array) {
    SlurmArray a;
    a.number = first_number + static_cast<int>(arrays.size());
    a.tasks.assign(tasks.begin() + t, tasks.begin() + std::min(tasks.size(), t + per_array));
    std::size_t jobs = 0;
    for (const auto& task : a.tasks) {
      for (std::size_t k = 0; k < task.size(); ++k) a.task_list += (k ? " " : "") + task[k];
      a.task_list += "\n";
      jobs += task.size();
    }
    const fs::path list = slurm_dir(run_dir) / fmt::format("tasks-{}.txt", a.number);
    a.script = script_text(run_dir, warpsim_binary, options, a.number, a.tasks.size(), jobs, list);
    arrays.push_back(std::move(a));
  }
  return arrays;
}

ProcessResult run_process(const std::vector<std::string>& argv) {
  WARPSIM_ASSERT(!argv.empty(), "run_process needs a program");
  std::array<int, 2> out_pipe{}, err_pipe{};
  if (::pipe2(out_pipe.data(), O_CLOEXEC) != 0) throw InputError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  if (::pipe2(err_pipe.data(), O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw InputError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error = posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (spawn_error != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw InputError(fmt::format("{} not found ({}): is Slurm's client installed and on PATH?", argv[0],
                                 std::strerror(spawn_error)));
  }
  // Both pipes drained together: a child filling one while we block on the other would never finish.
  ProcessResult r;
  std::array<pollfd, 2> fds{{{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}}};
  std::array<std::string*, 2> sinks{&r.out, &r.err};
  int open_fds = 2;
  char buffer[4096];
  while (open_fds > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (const pollfd& p : fds)
    if (p.fd >= 0) ::close(p.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

int cluster_max_array_size() {
  try {
    const ProcessResult r = run_process({"scontrol", "show", "config"});
    static const std::regex line_re(R"(MaxArraySize\s*=\s*([0-9]+))");
    std::smatch m;
    if (r.exit_code == 0 && std::regex_search(r.out, m, line_re)) {
      const long value = std::stol(m[1].str());
      if (value >= 1 && value <= 4000001) return static_cast<int>(value);  // Slurm's own upper bound
    }
    spdlog::warn("`scontrol show config` gave no MaxArraySize (exit {}: {}); assuming Slurm's default {}", r.exit_code,
                 trimmed(r.err), kDefaultMaxArraySize);
  } catch (const InputError& e) {
    spdlog::warn("cannot ask the cluster for its MaxArraySize ({}); assuming Slurm's default {}", e.what(),
                 kDefaultMaxArraySize);
  }
  return kDefaultMaxArraySize;
}

std::vector<SubmittedArray> submitted_arrays(const fs::path& run_dir) {
  const nlohmann::json j = submitted_json(run_dir);
  const std::string file = (slurm_dir(run_dir) / kSubmittedFile).string();
  std::vector<SubmittedArray> arrays;
  for (const nlohmann::json& a : j["arrays"]) {
    try {
      arrays.push_back({a.at("number").get<int>(), a.at("job_id").get<std::string>(), a.at("task_count").get<int>(),
                        a.at("job_count").get<int>()});
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: an array entry lacks number, job_id, task_count or job_count ({})", file, e.what()));
    }
  }
  return arrays;
}

std::vector<SubmittedArray> submit_to_slurm(const fs::path& run_dir_given, const std::vector<std::string>& pending_job_names,
                                            const fs::path& warpsim_binary, const SlurmOptions& options) {
  check_options(options);
  if (pending_job_names.empty()) return {};
  const fs::path run_dir = fs::absolute(run_dir_given).lexically_normal();
  const fs::path binary = fs::absolute(warpsim_binary).lexically_normal();
  nlohmann::json record = submitted_json(run_dir);
  int first_number = 0;
  for (const nlohmann::json& a : record["arrays"])
    if (a.contains("number") && a["number"].is_number_integer()) first_number = std::max(first_number, a["number"].get<int>() + 1);
  const int max_array_size = options.max_array_size > 0 ? options.max_array_size : cluster_max_array_size();
  const std::vector<SlurmArray> arrays =
      plan_slurm_arrays(run_dir, pending_job_names, binary, options, max_array_size, first_number);

  const fs::path dir = slurm_dir(run_dir);
  std::error_code ec;
  fs::create_directories(dir / "logs", ec);  // Slurm does not create the directory of --output
  if (ec) throw InputError(fmt::format("cannot create {}: {}", (dir / "logs").string(), ec.message()));

  std::vector<SubmittedArray> submitted;
  std::string previous_id;
  for (const SlurmArray& a : arrays) {
    const fs::path script = dir / fmt::format("array-{}.sbatch", a.number);
    const fs::path list = dir / fmt::format("tasks-{}.txt", a.number);
    write_file_atomically(list, a.task_list);
    write_file_atomically(script, a.script);
    std::vector<std::string> argv{"sbatch", "--parsable"};
    if (options.throttle > 0 && !previous_id.empty()) argv.push_back("--dependency=afterany:" + previous_id);
    argv.push_back(script.string());
    const ProcessResult r = run_process(argv);
    // --parsable prints "JOBID" or "JOBID;CLUSTER".
    const std::string id = trimmed(r.out.substr(0, r.out.find(';')));
    static const std::regex id_re("[0-9]+");
    if (r.exit_code != 0 || !std::regex_match(id, id_re))
      throw InputError(fmt::format("`{}` failed (exit {}){}: {}", command_text(argv), r.exit_code,
                                   submitted.empty() ? "" : fmt::format("; {} earlier array(s) were submitted and recorded in {}",
                                                                        submitted.size(), (dir / kSubmittedFile).string()),
                                   trimmed(r.err).empty() ? "sbatch printed '" + trimmed(r.out) + "'" : trimmed(r.err)));
    std::size_t jobs = 0;
    for (const auto& task : a.tasks) jobs += task.size();
    SubmittedArray s{a.number, id, static_cast<int>(a.tasks.size()), static_cast<int>(jobs)};
    record["arrays"].push_back({{"number", s.number},
                                {"job_id", s.job_id},
                                {"task_count", s.task_count},
                                {"job_count", s.job_count},
                                {"script", script.filename().string()},
                                {"tasks", list.filename().string()}});
    write_file_atomically(dir / kSubmittedFile, record.dump(2) + "\n");
    submitted.push_back(s);
    previous_id = id;
  }
  return submitted;
}

std::map<std::string, std::string> slurm_states(const fs::path& run_dir) {
  const std::vector<SubmittedArray> arrays = submitted_arrays(run_dir);
  std::map<std::string, std::string> states;
  if (arrays.empty()) return states;
  // The job names of every task, by "ARRAYID_TASK" as squeue -r prints it.
  std::map<std::string, std::vector<std::string>> task_jobs;
  std::string ids;
  for (const SubmittedArray& a : arrays) {
    const fs::path list = slurm_dir(run_dir) / fmt::format("tasks-{}.txt", a.number);
    std::istringstream lines(read_input_file(list.string(), kMaxResultFileBytes, "Slurm task list"));
    int task = 0;
    for (std::string line; std::getline(lines, line); ++task) task_jobs[fmt::format("{}_{}", a.job_id, task)] = split_words(line);
    ids += (ids.empty() ? "" : ",") + a.job_id;
  }
  const std::vector<std::string> argv{"squeue", "-h", "-r", "-j", ids, "-o", "%i %T"};
  const ProcessResult r = run_process(argv);
  if (r.exit_code != 0) {
    // squeue refuses ids it has forgotten (finished longer than MinJobAge ago): then none of them is queued.
    if (r.err.find("Invalid job id") != std::string::npos) return states;
    throw InputError(fmt::format("`{}` failed (exit {}): {}", command_text(argv), r.exit_code, trimmed(r.err)));
  }
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const std::vector<std::string> words = split_words(line);
    if (words.size() != 2) continue;
    const auto it = task_jobs.find(words[0]);
    if (it == task_jobs.end()) continue;  // e.g. "123_[4-9%2]" would need -r; not ours otherwise
    for (const std::string& job : it->second) states[job] = words[1];
  }
  return states;
}

int cancel_slurm_arrays(const fs::path& run_dir) {
  const std::vector<SubmittedArray> arrays = submitted_arrays(run_dir);
  if (arrays.empty()) return 0;
  std::vector<std::string> argv{"scancel"};
  for (const SubmittedArray& a : arrays) argv.push_back(a.job_id);
  const ProcessResult r = run_process(argv);
  if (r.exit_code != 0) {
    // Arrays that finished long ago are unknown to Slurm: only other complaints are errors.
    std::istringstream lines(r.err);
    for (std::string line; std::getline(lines, line);)
      if (!trimmed(line).empty() && line.find("Invalid job id") == std::string::npos)
        throw InputError(fmt::format("`{}` failed (exit {}): {}", command_text(argv), r.exit_code, trimmed(r.err)));
  }
  return static_cast<int>(arrays.size());
}

void add_slurm_options(po::options_description& desc) {
  const SlurmOptions d;
  desc.add_options()
      ("partition", po::value<std::string>(), "Slurm partition (default: the cluster's default)")
      ("account", po::value<std::string>(), "Slurm account to charge (default: yours)")
      ("time", po::value<std::string>()->default_value(d.time_limit),
       "time limit of each array task, for all the jobs it packs (Slurm format: H:M:S, minutes, D-H:M:S)")
      ("mem", po::value<std::string>()->default_value(d.memory), "memory of each array task (e.g. 4G, 500M)")
      ("jobs-per-task", po::value<int>()->default_value(d.jobs_per_task),
       "sweep jobs run one after the other in each array task (pack short jobs)")
      ("throttle", po::value<int>()->default_value(d.throttle),
       "at most this many array tasks running at once across the sweep (--array=...%N); 0: no limit")
      ("max-array-size", po::value<int>()->default_value(d.max_array_size),
       "split into arrays of at most this many tasks; 0: the cluster's MaxArraySize (scontrol show config)")
      ("signal-seconds", po::value<int>()->default_value(d.signal_seconds_before_end),
       "send SIGTERM this many seconds before the time limit, so the running job is marked unfinished; 0: none")
      ("module", po::value<std::vector<std::string>>(), "`module load NAME` at the top of each task (repeatable)")
      ("sbatch-arg", po::value<std::vector<std::string>>(),
       "one more sbatch option for every array, e.g. --sbatch-arg=--qos=short (repeatable)");
}

SlurmOptions slurm_options_from(const po::variables_map& vm) {
  SlurmOptions o;
  if (vm.count("partition")) o.partition = vm["partition"].as<std::string>();
  if (vm.count("account")) o.account = vm["account"].as<std::string>();
  if (vm.count("time")) o.time_limit = vm["time"].as<std::string>();
  if (vm.count("mem")) o.memory = vm["mem"].as<std::string>();
  if (vm.count("jobs-per-task")) o.jobs_per_task = vm["jobs-per-task"].as<int>();
  if (vm.count("throttle")) o.throttle = vm["throttle"].as<int>();
  if (vm.count("max-array-size")) o.max_array_size = vm["max-array-size"].as<int>();
  if (vm.count("signal-seconds")) o.signal_seconds_before_end = vm["signal-seconds"].as<int>();
  if (vm.count("module")) o.modules = vm["module"].as<std::vector<std::string>>();
  if (vm.count("sbatch-arg")) o.extra_sbatch_args = vm["sbatch-arg"].as<std::vector<std::string>>();
  check_options(o);
  return o;
}

}  // namespace warpsim::sweep
