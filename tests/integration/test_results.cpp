// Results a reader can trust (issue 6): run.json commits the files of a run, `compare` accepts only complete
// sets, write errors end in one error naming the file with no partial file left, and malformed stats.json or
// paths given to `compare` end in exit 2 naming the file and the field, never a crash or an internal error.
// (tests/kill_runs.py kills runs at random points and checks that compare never accepts a mix.)
#include <catch2/catch.hpp>

#include "test_helpers.h"

using namespace wstest;

namespace {

CmdResult run_small_gemm(const fs::path& out) {
  return run_warpsim({"run", "--gemm", "128x128x128", "--out", out.string(), "-q", "--no-progress"});
}

// warpsim under `ulimit -f blocks` (1 KiB blocks).
CmdResult run_with_file_size_limit(int blocks, const std::vector<std::string>& args) {
  std::string line = "ulimit -f " + std::to_string(blocks) + "; exec '" + warpsim_binary() + "'";
  for (const auto& a : args) line += " '" + a + "'";
  return run_command({"/bin/bash", "-c", line});
}

std::vector<std::string> partial_files(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(".warpsim-partial-", 0) == 0) names.push_back(e.path().filename().string());
  return names;
}

}  // namespace

TEST_CASE("run.json lists every file of the run with its size and hash, and is what compare trusts", "[results]") {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  const CmdResult r = run_small_gemm(out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string manifest = read_text(out / "run.json");
  for (int i = 0; i < 4; ++i) {
    const std::string name = json::string(manifest, "files[" + std::to_string(i) + "].name").value_or("?");
    INFO(name);
    CHECK(json::number(manifest, "files[" + std::to_string(i) + "].bytes").value_or(-1) ==
          static_cast<double>(fs::file_size(out / name)));
    CHECK(json::string(manifest, "files[" + std::to_string(i) + "].fnv1a64").value_or("").size() == 16);
  }
  CHECK_FALSE(json::has(manifest, "files[4]"));
  CHECK(contains(json::string(manifest, "warpsim_version").value_or(""), "warpsim"));
  CHECK(json::string(manifest, "command_line[1]").value_or("") == "run");
  CHECK(run_warpsim({"compare", out.string(), out.string()}).exit_code == 0);

  SECTION("a file changed after the run makes the set incomplete") {
    write_text(out / "stats.csv", read_text(out / "stats.csv") + "x");
    const CmdResult c = run_warpsim({"compare", out.string(), out.string()});
    CHECK(c.exit_code == 2);
    CHECK(contains(c.err, "incomplete run"));
    CHECK(contains(c.err, "stats.csv"));
    // Its stats.json given alone is checked against the same run.json.
    CHECK(run_warpsim({"compare", (out / "stats.json").string(), out.string()}).exit_code == 2);
  }
  SECTION("a run.json that does not list stats.json does not vouch for it") {
    const std::string manifest_text = read_text(out / "run.json");
    write_text(out / "run.json", manifest_text.substr(0, manifest_text.find("\"files\"")) + "\"files\": []}\n");
    const CmdResult c = run_warpsim({"compare", out.string(), out.string()});
    CHECK(c.exit_code == 2);
    CHECK(contains(c.err, "run.json does not list stats.json"));
  }
  SECTION("without run.json the directory is refused; a bare stats.json is read with a warning") {
    fs::remove(out / "run.json");
    const CmdResult c = run_warpsim({"compare", out.string(), out.string()});
    CHECK(c.exit_code == 2);
    CHECK(contains(c.err, "incomplete run: '" + out.string() + "': no run.json (killed or still running?)"));
    const CmdResult bare = run_warpsim({"compare", (out / "stats.json").string(), (out / "stats.json").string()});
    CHECK(bare.exit_code == 0);
    CHECK(contains(bare.err, "cannot be verified"));
  }
}

TEST_CASE("a file-size limit while writing gives exit 2 naming the file, no partial file, and withdraws the old set",
          "[results]") {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  REQUIRE(run_small_gemm(out).exit_code == 0);
  const std::string old_stats = read_text(out / "stats.json");
  // A rerun into the same directory, with room for no result file (stats.json is tens of KB).
  const CmdResult r = run_with_file_size_limit(4, {"run", "--gemm", "128x128x128", "--out", out.string(), "-q", "--no-progress"});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "error: cannot write '" + (out / "stats.json").string() + "': File too large"));
  CHECK(read_text(out / "stats.json") == old_stats);  // not a partial new one
  CHECK(partial_files(out).empty());
  CHECK_FALSE(fs::exists(out / "run.json"));  // the old files no longer form a complete set
  CHECK(contains(run_warpsim({"compare", out.string(), out.string()}).err, "incomplete run"));
}

TEST_CASE("compare: a malformed stats.json is exit 2 naming the file and the field", "[results][compare]") {
  TempDir dir;
  const std::string good = R"({"gpu": "g", "kernels": [{"name": "k", "time_us": 1.5}], "total_time_us": 1.5})";
  const std::string file = dir / "stats.json";
  const std::pair<std::string, std::string> cases[] = {
      {std::string(100000, '[') + std::string(100000, ']'), "nested deeper than 64"},
      {R"({"gpu": "g", "kernels": [{"name": "k", "time_us": "fast"}]})", "kernels[0].time_us must be a number"},
      {R"({"gpu": "g", "kernels": [1]})", "kernels[0] must be an object"},
      {R"({"gpu": "g", "kernels": {"name": "k"}})", "kernels must be an array"},
      {R"({"gpu": "g", "kernels": [], "total_time_us": "x"})", "total_time_us must be a number"},
      {R"({"gpu": "g", "kernels": [{"name": "k", "time_us": 1, "grid": 4}]})", "kernels[0].grid must be a string"},
      {R"({"gpu": "g", "kernels": [{"name": "k", "time_us": 1, "utilization": [1]}]})", "kernels[0].utilization must be an object"},
      {R"({"gpu": "g", "kernels": [{"name": "k", "time_us": 1, "utilization": {"l2": "hi"}}]})",
       "kernels[0].utilization.l2 must be a number"},
      {R"({"kernels": []})", "gpu is missing"},
      {R"([1, 2])", "the document must be an object"},
      {R"({"gpu": )", "parse error"},
  };
  for (const auto& [text, message] : cases) {
    write_text(file, text);
    const CmdResult r = run_warpsim({"compare", file, file});
    INFO(text.substr(0, 100) << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, file));
    CHECK(contains(r.err, message));
  }
  write_text(file, good);
  CHECK(run_warpsim({"compare", file, file}).exit_code == 0);
}

TEST_CASE("compare: a symlink loop or a directory entry that is not a file is exit 2, not an internal error",
          "[results][compare]") {
  TempDir dir;
  fs::create_symlink(dir / "b", dir / "a");
  fs::create_symlink(dir / "a", dir / "b");
  const CmdResult loop = run_warpsim({"compare", dir / "a", dir / "a"});
  INFO(loop.err);
  CHECK(loop.exit_code == 2);
  CHECK(contains(loop.err, dir / "a"));
  CHECK(contains(loop.err, "symbolic links"));
  const CmdResult fifo = run_warpsim({"compare", "/dev/zero", "/dev/zero"});
  INFO(fifo.err);
  CHECK(fifo.exit_code == 2);
  CHECK(contains(fifo.err, "cannot open result file '/dev/zero': not a regular file"));
  // A run.json that is not a file: the manifest reader names it.
  fs::create_directories(fs::path(dir / "run") / "run.json");
  const CmdResult manifest = run_warpsim({"compare", dir / "run", dir / "run"});
  INFO(manifest.err);
  CHECK(manifest.exit_code == 2);
  CHECK(contains(manifest.err, "cannot open run manifest '" + (dir / "run") + "/run.json': is a directory"));
}
