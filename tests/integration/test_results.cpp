// Results a reader can trust (issue 6): malformed stats.json or paths given to `compare` end in exit 2 naming
// the file and the field, never a crash or an internal error.
#include <catch2/catch.hpp>

#include "test_helpers.h"

using namespace wstest;

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
  CHECK(contains(fifo.err, "not a regular file"));
}
