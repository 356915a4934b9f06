// Helpers for the integration tests, which drive the real `warpsim` executable (WARPSIM_BINARY) in a
// subprocess and read what it wrote:
//   - run_warpsim(): run it, capturing stdout, stderr and the exit status;
//   - TempDir: a scratch directory removed afterwards; read_text/write_text; ScopedEnv: an environment variable
//     set for a scope (the Slurm backend's tests use these too);
//   - json::raw/number/string/without_member: a tiny purpose-built reader for stats.json, independent of the JSON
//     library the simulator writes with: it walks the text structurally (strings, objects, arrays) to find one
//     value by a path such as "kernels[0].utilization.tensor";
//   - read_flat_yaml() + parse_si(): the simple, indentation-nested YAML that `warpsim config` and
//     config.resolved.yaml print, flattened to dotted keys, and its unit suffixes (GHz, TB/s, KiB, ...).
// None of this calls simulator code: the tests derive their expectations independently.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace wstest {

namespace fs = std::filesystem;

inline std::string warpsim_binary() { return WARPSIM_BINARY; }
// The source tree: WARPSIM_SHARED_DIR is defined as "<source>/../shared".
inline fs::path source_dir() { return fs::path(WARPSIM_SHARED_DIR).parent_path().parent_path(); }
// A shipped GPU config by name, as an absolute path.
inline std::string shipped_config(const std::string& name) {
  return fs::absolute(source_dir() / "configs" / (name + ".yaml")).lexically_normal().string();
}

inline std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("test helper: cannot read " + p.string());
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Writes `text` to `p`, creating its parent directories; `executable`: mode 0755 (a stand-in program).
inline void write_text(const fs::path& p, const std::string& text, bool executable = false) {
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  f << text;
  f.close();
  if (!f) throw std::runtime_error("test helper: cannot write " + p.string());
  if (executable)
    fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);
}

// Sets an environment variable for the scope, restoring (or removing) it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it when the object goes away.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/warpsim-it-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) throw std::runtime_error("test helper: mkdtemp failed for " + templ);
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

struct CmdResult {
  int exit_code = -1;  // the exit status, or 128 + signal number when the process was killed
  std::string out, err;
  double wall_s = 0.0;
};

// Runs argv[0] (a path) with the arguments, stdout and stderr each redirected to a file, and waits for it.
// `cwd`: the directory it runs in ("" = this process's).
inline CmdResult run_command(const std::vector<std::string>& argv, const std::string& cwd = "") {
  TempDir capture;
  const std::string out_path = capture / "stdout", err_path = capture / "stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("test helper: cannot start " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("test helper: waitpid failed");
  }
  CmdResult r;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  return r;
}

// `warpsim ARGS...`
inline CmdResult run_warpsim(const std::vector<std::string>& args, const std::string& cwd = "") {
  std::vector<std::string> argv{warpsim_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, cwd);
}

// The whole command line and its output, for INFO() when a check fails.
inline std::string describe(const std::vector<std::string>& args, const CmdResult& r) {
  std::string s = "warpsim";
  for (const auto& a : args) s += " " + a;
  return s + "\n  exit " + std::to_string(r.exit_code) + ", " + std::to_string(r.wall_s) + " s\n  stdout: " + r.out +
         "\n  stderr: " + r.err;
}

// Lines of `text` that contain `needle`.
inline int count_lines_containing(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line))
    if (line.find(needle) != std::string::npos) ++n;
  return n;
}

inline bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// ---- stats.json ------------------------------------------------------------------------------------------------
namespace json {

inline std::size_t skip_ws(const std::string& s, std::size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

// i at the opening quote; returns the index just past the closing quote.
inline std::size_t skip_string(const std::string& s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == '"') return i + 1;
  }
  throw std::runtime_error("json: unterminated string");
}

// i at the first character of a value; returns the index just past it.
inline std::size_t skip_value(const std::string& s, std::size_t i) {
  i = skip_ws(s, i);
  if (i >= s.size()) throw std::runtime_error("json: value expected at end of text");
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        i = skip_string(s, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    throw std::runtime_error("json: unbalanced brackets");
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !std::isspace(static_cast<unsigned char>(s[i])))
    ++i;  // number, true, false, null
  return i;
}

struct Span {
  std::size_t begin = 0, end = 0;  // [begin, end) of a value's text
};

// The member `key` of the object starting at `obj` ('{'); also reports where its "key": starts.
inline std::optional<Span> member(const std::string& s, std::size_t obj, const std::string& key,
                                  std::size_t* key_begin = nullptr) {
  std::size_t i = skip_ws(s, obj);
  if (i >= s.size() || s[i] != '{') return std::nullopt;
  i = skip_ws(s, i + 1);
  while (i < s.size() && s[i] != '}') {
    if (s[i] != '"') throw std::runtime_error("json: member name expected");
    const std::size_t kb = i, ke = skip_string(s, i);
    const std::string name = s.substr(kb + 1, ke - kb - 2);
    i = skip_ws(s, ke);
    if (i >= s.size() || s[i] != ':') throw std::runtime_error("json: ':' expected after \"" + name + "\"");
    const std::size_t vb = skip_ws(s, i + 1), ve = skip_value(s, vb);
    if (name == key) {
      if (key_begin) *key_begin = kb;
      return Span{vb, ve};
    }
    i = skip_ws(s, ve);
    if (i < s.size() && s[i] == ',') i = skip_ws(s, i + 1);
  }
  return std::nullopt;
}

inline std::optional<Span> element(const std::string& s, std::size_t arr, std::size_t index) {
  std::size_t i = skip_ws(s, arr);
  if (i >= s.size() || s[i] != '[') return std::nullopt;
  i = skip_ws(s, i + 1);
  for (std::size_t n = 0; i < s.size() && s[i] != ']'; ++n) {
    const std::size_t ve = skip_value(s, i);
    if (n == index) return Span{i, ve};
    i = skip_ws(s, ve);
    if (i < s.size() && s[i] == ',') i = skip_ws(s, i + 1);
  }
  return std::nullopt;
}

// The value at `path` ("a.b[2].c", a member whose name has dots as ["x.y"]; "" is the whole document).
inline std::optional<Span> find(const std::string& s, const std::string& path) {
  Span cur{skip_ws(s, 0), skip_value(s, 0)};
  std::size_t p = 0;
  while (p < path.size()) {
    if (path[p] == '.') ++p;
    if (path.compare(p, 2, "[\"") == 0) {  // ["a.b"]: a member whose name has dots (stats counters)
      const std::size_t close = path.find("\"]", p + 2);
      auto m = member(s, cur.begin, path.substr(p + 2, close - p - 2));
      if (!m) return std::nullopt;
      cur = *m;
      p = close + 2;
      continue;
    }
    if (path[p] == '[') {
      const std::size_t close = path.find(']', p);
      const std::size_t index = std::stoul(path.substr(p + 1, close - p - 1));
      auto e = element(s, cur.begin, index);
      if (!e) return std::nullopt;
      cur = *e;
      p = close + 1;
      continue;
    }
    const std::size_t stop = path.find_first_of(".[", p);
    const std::string key = path.substr(p, stop == std::string::npos ? std::string::npos : stop - p);
    auto m = member(s, cur.begin, key);
    if (!m) return std::nullopt;
    cur = *m;
    p = stop == std::string::npos ? path.size() : stop;
  }
  return cur;
}

// The text of the value at `path`, exactly as written.
inline std::optional<std::string> raw(const std::string& s, const std::string& path) {
  auto sp = find(s, path);
  if (!sp) return std::nullopt;
  return s.substr(sp->begin, sp->end - sp->begin);
}

inline bool has(const std::string& s, const std::string& path) { return find(s, path).has_value(); }

// A number at `path`; nullopt when it is missing, null or not a number.
inline std::optional<double> number(const std::string& s, const std::string& path) {
  auto r = raw(s, path);
  if (!r || r->empty()) return std::nullopt;
  const char c = (*r)[0];
  if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '-')) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(r->c_str(), &end);
  if (end != r->c_str() + r->size()) return std::nullopt;
  return v;
}

// A string at `path` (escapes other than \" and \\ are kept as written).
inline std::optional<std::string> string(const std::string& s, const std::string& path) {
  auto r = raw(s, path);
  if (!r || r->size() < 2 || (*r)[0] != '"') return std::nullopt;
  std::string o;
  for (std::size_t i = 1; i + 1 < r->size(); ++i) {
    if ((*r)[i] == '\\' && i + 2 < r->size() && ((*r)[i + 1] == '"' || (*r)[i + 1] == '\\')) ++i;
    o += (*r)[i];
  }
  return o;
}

// The document with the top-level member `key` (and its separating comma) cut out.
inline std::string without_member(const std::string& s, const std::string& key) {
  std::size_t kb = 0;
  auto m = member(s, skip_ws(s, 0), key, &kb);
  if (!m) return s;
  std::size_t end = skip_ws(s, m->end);
  if (end < s.size() && s[end] == ',') return s.substr(0, kb) + s.substr(skip_ws(s, end + 1));
  // Last member: drop the comma before it instead.
  std::size_t before = kb;
  while (before > 0 && std::isspace(static_cast<unsigned char>(s[before - 1]))) --before;
  if (before > 0 && s[before - 1] == ',') --before;
  return s.substr(0, before) + s.substr(m->end);
}

}  // namespace json

// ---- YAML as printed by `warpsim config` / config.resolved.yaml ----------------------------------------------------
// Block-style mappings only ("key: value  # comment", nesting by indentation): enough for the resolved config.
inline std::map<std::string, std::string> read_flat_yaml(const std::string& text) {
  std::map<std::string, std::string> out;
  std::vector<std::pair<std::size_t, std::string>> stack;  // (indent, key) of the enclosing mappings
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t hash = line.find(" #");
    if (hash != std::string::npos) line.erase(hash);
    if (!line.empty() && line[0] == '#') continue;
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    const std::size_t colon = line.find(':', indent);
    if (colon == std::string::npos) continue;
    std::string key = line.substr(indent, colon - indent);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
    while (!stack.empty() && stack.back().first >= indent) stack.pop_back();
    std::string dotted;
    for (const auto& [i, k] : stack) dotted += k + ".";
    dotted += key;
    if (value.empty()) stack.emplace_back(indent, key);
    else out[dotted] = value;
  }
  return out;
}

// "1.83GHz" -> 1.83e9, "3.352TB/s" -> 3.352e12 (bytes/s), "256KiB" -> 262144, "132" -> 132.
inline double parse_si(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) throw std::runtime_error("parse_si: no number in '" + text + "'");
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  static const std::map<std::string, double> units = {
      {"", 1},         {"Hz", 1},        {"kHz", 1e3},     {"MHz", 1e6},     {"GHz", 1e9},
      {"B/s", 1},      {"KB/s", 1e3},    {"MB/s", 1e6},    {"GB/s", 1e9},    {"TB/s", 1e12},
      {"B", 1},        {"KB", 1e3},      {"MB", 1e6},      {"GB", 1e9},      {"KiB", 1024.0},
      {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  const auto it = units.find(unit);
  if (it == units.end()) throw std::runtime_error("parse_si: unknown unit in '" + text + "'");
  return v * it->second;
}

// A numeric config value by dotted key from read_flat_yaml()'s map.
inline double config_number(const std::map<std::string, std::string>& cfg, const std::string& key) {
  const auto it = cfg.find(key);
  if (it == cfg.end()) throw std::runtime_error("config has no key '" + key + "'");
  return parse_si(it->second);
}

// The number at `path` of a stats.json text (json::number's paths), failing the test where there is none. Only for
// test files, which include Catch before this header.
inline double stats_number(const std::string& stats, const std::string& path) {
  const auto v = json::number(stats, path);
  if (!v) FAIL("stats.json has no number at " << path);
  return *v;
}

// A synthesizer run end to end (`warpsim run --synth KIND`): the metrics it printed ("KIND: NAME = VALUE UNIT"),
// its printed text, stats.json and the run's resolved config. Only for test files, which include Catch before
// this header.
struct SynthRun {
  std::map<std::string, double> metrics;
  std::string out, stats;
  std::map<std::string, std::string> config;
  double metric(const std::string& name) const {
    const auto it = metrics.find(name);
    if (it == metrics.end()) FAIL("metric '" << name << "' not printed\n" << out);
    return it->second;
  }
  double cfg(const std::string& key) const { return config_number(config, key); }
  std::string text(const std::string& path) const {  // a string of stats.json
    const auto v = json::string(stats, path);
    if (!v) FAIL("stats.json has no string at " << path);
    return *v;
  }
};

inline SynthRun run_synth(const std::string& gpu, const std::string& kind, const std::vector<std::string>& keys,
                          const std::vector<std::string>& sets = {}) {
  TempDir dir;
  std::vector<std::string> args = {"run", "--gpu", gpu, "--synth", kind, "--out", dir / "out", "--no-progress"};
  for (const std::string& k : keys) args.insert(args.end(), {"--synth-key", k});
  for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
  const CmdResult r = run_warpsim(args);
  INFO(describe(args, r));
  REQUIRE(r.exit_code == 0);
  SynthRun out;
  out.out = r.out;
  const std::regex line("^" + kind + ": (\\w+) = ([-+0-9.eE]+) ");
  std::istringstream text(r.out);
  for (std::string l; std::getline(text, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) out.metrics[m[1]] = std::stod(m[2]);
  }
  out.stats = read_text(dir.path() / "out" / "stats.json");
  out.config = read_flat_yaml(read_text(dir.path() / "out" / "config.resolved.yaml"));
  return out;
}

}  // namespace wstest

// Runs warpsim with the arguments (a braced list) in directory `cwd` ("" = here), INFO-ing the command and its
// output for any failing check that follows: `RUN_WARPSIM(r, {"run", "--gpu", "a100_sxm"}); CHECK(r.status == 0);`
#define RUN_WARPSIM_IN(result, cwd, ...)                                        \
  const std::vector<std::string> result##_args = __VA_ARGS__;                   \
  const ::wstest::CmdResult result = ::wstest::run_warpsim(result##_args, cwd); \
  INFO(::wstest::describe(result##_args, result))
#define RUN_WARPSIM(result, ...) RUN_WARPSIM_IN(result, "", __VA_ARGS__)
