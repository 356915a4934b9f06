// The catalogue of bad input (README.md, "Bad input"): each class of input that once crashed, hung or was
// silently accepted, with its smallest example, run through the real binary. Each must end in exit status 2 and
// the error the README shows; the README's table must list exactly these rows.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <functional>
#include <sstream>

#include "sim/trace/inst.h"  // opcode numbers only, for the hand-crafted traces
#include "test_helpers.h"
#include "tests/common/crafted_trace.h"

using namespace wstest;

namespace {

struct BadInput {
  std::string input_class;  // the README's columns: class; example (the command, then `setup`); error
  std::string setup;        // what the files the command names hold (Markdown), "" when it names none
  std::string error;        // what stderr says after "warpsim: error: "
  std::vector<std::string> args;                  // warpsim's arguments; it runs in the case's directory
  std::function<void(const fs::path&)> make_files;  // writes what the example names into that directory
};

void write_bytes(const fs::path& p, const crafted::Bytes& bytes) {
  write_text(p, std::string(bytes.begin(), bytes.end()));
}

constexpr std::uint8_t op(warpsim::Opcode o) { return static_cast<std::uint8_t>(o); }

// A one-warp kernel file whose warp holds `count` records encoded as `records`, with `edit` applied first.
std::function<void(const fs::path&)> trace_file(const std::string& name, std::uint32_t count, crafted::Bytes records,
                                                std::function<void(crafted::CraftedFile&)> edit = {}) {
  return [=](const fs::path& dir) {
    crafted::CraftedFile f;
    f.ctas.push_back(crafted::cta_payload({{count, records}}));
    if (edit) edit(f);
    write_bytes(dir / name, crafted::build_file(f));
  };
}

std::function<void(const fs::path&)> text_file(const std::string& name, std::string text) {
  return [=](const fs::path& dir) { write_text(dir / name, text); };
}

std::vector<BadInput> catalogue() {
  using warpsim::Opcode;
  const crafted::Bytes one_ffma{op(Opcode::FFMA), 0};
  std::string alias_bomb = "a0: &a0 {x: 1, y: 1}\n";
  for (int i = 1; i <= 30; ++i)
    alias_bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " {x: *a" + std::to_string(i - 1) +
                  ", y: *a" + std::to_string(i - 1) + "}\n";
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "{a: ";
  deep += "1" + std::string(100, '}');
  const std::string not_regular =
      "not a regular file (a FIFO, socket or device); warpsim reads configs and traces from regular files only";
  return {
      {"config that is a device", "",
       "cannot open config file '/dev/zero': " + not_regular, {"run", "--gpu", "/dev/zero"}, {}},
      {"base: that is a device", "my.yaml: `base: /dev/urandom`",
       "my.yaml:1:7: base: cannot open config file '/dev/urandom': " + not_regular, {"run", "--gpu", "my.yaml"},
       text_file("my.yaml", "base: /dev/urandom\n")},
      {"trace that is a FIFO", "after `mkfifo pipe.wst`",
       "cannot open trace file 'pipe.wst': " + not_regular, {"run", "--trace", "pipe.wst"},
       [](const fs::path& dir) { REQUIRE(::mkfifo((dir / "pipe.wst").c_str(), 0600) == 0); }},
      {"config over 16 MiB", "big.yaml: a 17 MiB comment",
       "cannot open config file 'big.yaml': file of 17825794 bytes is larger than the limit of 16777216 bytes",
       {"run", "--gpu", "big.yaml"}, text_file("big.yaml", "# " + std::string(17 << 20, 'x'))},
      {"symbolic-link loop", "after `ln -s loop.yaml loop.yaml`",
       "cannot open config file 'loop.yaml': Too many levels of symbolic links", {"run", "--gpu", "loop.yaml"},
       [](const fs::path& dir) { fs::create_symlink("loop.yaml", dir / "loop.yaml"); }},
      {"trace in a symbolic-link loop", "after `ln -s loop.wst loop.wst`",
       "cannot open trace file 'loop.wst': Too many levels of symbolic links", {"run", "--trace", "loop.wst"},
       [](const fs::path& dir) { fs::create_symlink("loop.wst", dir / "loop.wst"); }},
      {"empty --gpu", "", "--gpu: empty; expected the name of a shipped config", {"run", "--gpu", ""}, {}},
      {"YAML alias bomb", "bomb.yaml: `a1: &a1 {x: *a0, y: *a0}` and so on to a30",
       "bomb.yaml:1:13: more than 100000 YAML values (nested aliases?); a config holds at most that many",
       {"run", "--gpu", "bomb.yaml"}, text_file("bomb.yaml", alias_bomb)},
      {"deep nesting", "deep.yaml: `{a: {a: ...` 100 deep",
       "deep.yaml:1:261: YAML nested deeper than 64 levels", {"run", "--gpu", "deep.yaml"},
       text_file("deep.yaml", deep)},
      {"NUL byte", "nul.yaml: `sm: {count: 4\\0}`", "nul.yaml:1:14: NUL byte (not a text file?)",
       {"run", "--gpu", "nul.yaml"}, text_file("nul.yaml", std::string("sm: {count: 4\0}\n", 17))},
      {"name not UTF-8", "name.yaml: `gpu: {name: caf\\xe9}`", "name.yaml:1:16: not UTF-8 (byte 0xe9)",
       {"run", "--gpu", "name.yaml"}, text_file("name.yaml", "gpu: {name: caf\xe9}\n")},
      {"key given dotted and nested", "twice.yaml: `sm.count: 1`, then `sm: {count: 2}`",
       "twice.yaml:2:6: sm.count: given twice (also at twice.yaml:1:1)", {"run", "--gpu", "twice.yaml"},
       text_file("twice.yaml", "sm.count: 1\nsm: {count: 2}\n")},
      {"second YAML document", "two.yaml: `sm: {count: 2}`, `---`, `sm: {count: 3}`",
       "two.yaml:3:1: a second YAML document (after ---); a config is one document", {"run", "--gpu", "two.yaml"},
       text_file("two.yaml", "sm: {count: 2}\n---\nsm: {count: 3}\n")},
      {"architecture no synthesizer has", "arch.yaml: `base: h100_sxm`, then `gpu: {arch: sm_95}`",
       "arch.yaml:2:13: gpu.arch: the GEMM synthesizer generates code for sm_80, sm_90 or sm_100, not 'sm_95'",
       {"synth", "gemm", "--gpu", "arch.yaml", "--m", "64", "--n", "64", "--k", "64", "--out", "g.wst"},
       text_file("arch.yaml", "base: h100_sxm\ngpu: {arch: sm_95}\n")},
      {"data type the GPU's tensor cores lack", "",
       "synth gemm key 'dtype': fp8 has no tensor-core MMA on NVIDIA A100-SXM4-80GB (sm_80, "
       "sm.tensor.flops_per_cycle.fp8 = 0)",
       {"synth", "gemm", "--gpu", "a100_sxm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "fp8"}, {}},
      {"fp4 on a GPU without fp4 tensor cores", "",
       "synth gemm key 'dtype': fp4 has no tensor-core MMA on NVIDIA H100 80GB HBM3 (sm_90, "
       "sm.tensor.flops_per_cycle.fp4 = 0)",
       {"synth", "gemm", "--gpu", "h100_sxm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "fp4"}, {}},
      {"fp4 rows that are not whole scale blocks", "",
       "GEMM synthesizer: fp4 GEMM needs k a multiple of 32, not 48 (16-byte rows of packed e2m1 for TMA, whole "
       "16-element scale blocks)",
       {"synth", "gemm", "--gpu", "b200", "--m", "64", "--n", "64", "--k", "48", "--dtype", "fp4"}, {}},
      {"grid product overflows", "grid.wst: a kernel of grid 2996173443x1119412321x11 (1 CTA modulo 2^64)",
       "trace file 'grid.wst': kernel 0 ('crafted'): invalid kernel info: grid 2996173443x1119412321x11 has more "
       "than 2^64 - 1 CTAs",
       {"run", "--trace", "grid.wst"},
       trace_file("grid.wst", 1, one_ffma, [](crafted::CraftedFile& f) { f.grid = {2996173443u, 1119412321u, 11}; })},
      {"access past 2^64", "top.wst: an LDG of 4 bytes per lane at 0xfffffffffffffffe",
       "trace file 'top.wst': kernel 0 ('crafted'), CTA 0, warp 0, instruction 0 (byte 12 of the decompressed CTA "
       "block): invalid instruction: LDG lane 0: access of 4 bytes at base 0xfffffffffffffffe + 0 runs past the end "
       "of the 64-bit address space",
       {"run", "--trace", "top.wst"},
       trace_file("top.wst", 1, {op(Opcode::LDG), 0x20, 1 | (1 << 3), 4, 3})},  // base: zigzag(-2) = 3
      {"record after EXIT", "exit.wst: a warp of EXIT, FFMA",
       "trace file 'exit.wst': kernel 0 ('crafted'), CTA 0, warp 0, instruction 1 (byte 14 of the decompressed CTA "
       "block): instruction after the warp's EXIT (EXIT ends a warp; nothing after it would run)",
       {"run", "--trace", "exit.wst"}, trace_file("exit.wst", 2, {op(Opcode::EXIT), 0, op(Opcode::FFMA), 0})},
      {"kernel name not UTF-8", "name.wst: a kernel named caf\\xe9",
       "trace file 'name.wst': kernel 0 ('caf\\xe9'): invalid kernel info: kernel name: not UTF-8 (byte 0xe9) at "
       "byte 3", {"run", "--trace", "name.wst"},
       trace_file("name.wst", 1, one_ffma, [](crafted::CraftedFile& f) { f.name = "caf\xe9"; })},
      {"trace without kernels", "empty.wst: a well-formed file with no kernels",
       "trace file 'empty.wst' holds no kernels: nothing to simulate", {"run", "--trace", "empty.wst"},
       [](const fs::path& dir) {
         crafted::CraftedFile f;
         f.has_kernel = false;
         write_bytes(dir / "empty.wst", crafted::build_file(f));
       }},
  };
}

// The rows of the README's "Bad input" table, without its header.
std::vector<std::string> readme_rows() {
  const std::string readme = read_text(source_dir() / "README.md");
  const std::size_t start = readme.find("\n## Bad input\n");
  REQUIRE(start != std::string::npos);
  std::istringstream section(readme.substr(start, readme.find("\n## ", start + 1) - start));
  std::vector<std::string> rows;
  for (std::string line; std::getline(section, line);)
    if (line.rfind("| ", 0) == 0) rows.push_back(line);
  if (!rows.empty()) rows.erase(rows.begin());  // the header; the |---| line does not start with "| "
  return rows;
}

std::string readme_row(const BadInput& c) {
  std::string command = "warpsim";
  for (const std::string& arg : c.args) command += " " + (arg.empty() ? "''" : arg);
  return "| " + c.input_class + " | `" + command + "`" + (c.setup.empty() ? "" : ", " + c.setup) + " | `" + c.error +
         "` |";
}

}  // namespace

TEST_CASE("bad input: every catalogued example exits 2 with its one-line error", "[cli][bad-input]") {
  for (const BadInput& c : catalogue()) {
    TempDir dir;
    if (c.make_files) c.make_files(dir.path());
    const CmdResult r = run_warpsim(c.args, dir.path().string());
    INFO(c.input_class << "\n" << describe(c.args, r));
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "warpsim: error: " + c.error));
    CHECK(count_lines_containing(r.err, "error:") == 1);
    CHECK_FALSE(contains(r.err, "internal error"));
  }
}

TEST_CASE("bad input: the README's catalogue is this one", "[cli][bad-input][readme]") {
  std::string expected;
  for (const BadInput& c : catalogue()) expected += readme_row(c) + "\n";
  std::string actual;
  for (const std::string& row : readme_rows()) actual += row + "\n";
  if (actual != expected) {
    // The rows to paste, unwrapped (Catch wraps long messages).
    const fs::path rows = fs::absolute("bad_input_readme_rows.md");
    write_text(rows, expected);
    FAIL("README.md, section \"Bad input\", should list the rows written to " << rows.string() << ":\n" << expected);
  }
}
