#include "app/validate/plots.h"

#include <spawn.h>
#include <sys/wait.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "app/gpu_configs.h"
#include "sim/core/error.h"

extern char** environ;

namespace fs = std::filesystem;

namespace warpsim {
namespace {

constexpr const char* kScript = "validation/plot_validation.py";

std::vector<fs::path> script_candidates() {
  if (const char* env = std::getenv("WARPSIM_TOOLS_DIR"); env && *env) return {fs::path(env) / kScript};
  std::vector<fs::path> out;
  if (const std::string share = installed_share_dir(); !share.empty()) out.push_back(fs::path(share) / "tools" / kScript);
  out.push_back(fs::path(WARPSIM_SOURCE_DIR) / "tools" / kScript);
  return out;
}

// Runs python3 with `args`, its output going where ours goes. The exit status, or -1 when python3 cannot start.
int run_python(const std::vector<std::string>& args, int& spawn_error) {
  std::vector<std::string> argv{"python3"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::fflush(nullptr);
  pid_t pid = 0;
  spawn_error = posix_spawnp(&pid, "python3", nullptr, nullptr, cargv.data(), environ);
  if (spawn_error != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string check_plotting() {
  std::string script;
  std::vector<std::string> tried;
  for (const fs::path& candidate : script_candidates()) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) {
      script = candidate.string();
      break;
    }
    tried.push_back(candidate.string());
  }
  if (script.empty())
    throw InputError(fmt::format("--plots: cannot find the plot script (looked for {})", fmt::join(tried, ", ")));
  int spawn_error = 0;
  const int status = run_python({script, "--check"}, spawn_error);
  if (status == -1)
    throw InputError(fmt::format("--plots needs python3, which cannot be started: {} (apt install python3 python3-matplotlib)",
                                 std::strerror(spawn_error)));
  if (status != 0)
    throw InputError(fmt::format("--plots needs python3 with matplotlib ({} --check exited with status {}; "
                                 "apt install python3-matplotlib)", script, status));
  return script;
}

void draw_validation_plots(const std::string& script, const std::string& json_file, const std::string& dir) {
  int spawn_error = 0;
  const int status = run_python({script, json_file, "--out", dir}, spawn_error);
  if (status != 0)
    throw InputError(fmt::format("--plots: {} failed (exit status {}) drawing into '{}'", script,
                                 status == -1 ? std::strerror(spawn_error) : std::to_string(status), dir));
}

}  // namespace warpsim
