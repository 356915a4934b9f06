// Config loading: inheritance, overrides, validation messages, resolved YAML; Params and Registry.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/unit/temp_dir.h"
#include "sim/config/config.h"
#include "sim/config/input_file.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"

using namespace warpsim;
namespace fs = std::filesystem;

namespace {

using warpsim::test::TempDir;

// --- a small registry of made-up components, independent of the real models ---------------------------------------

Schema gpu_schema() {
  Schema s("gpu", "gpu", "the whole GPU");
  s.string("name", std::string("H100"), "model name")
      .choice("arch", {"ampere", "hopper", "blackwell"}, std::string("hopper"), "architecture generation");
  return s;
}

Schema clocks_schema() {
  Schema s("clocks", "clocks", "clock domains");
  s.quantity("core", ParamType::Frequency, std::string("1.98GHz"), "SM clock", 100e6, 5e9)
      .quantity("memory", ParamType::Frequency, std::string("1593MHz"), "HBM clock");
  return s;
}

Schema sm_schema() {
  Schema s("sm", "sm", "streaming multiprocessor");
  s.uint("count", "SMs", 132, "number of SMs", 1, 1024)
      .uint("pipes.fp32.latency", "cycles", 4, "FP32 pipeline latency", 1, 64)
      .uint("pipes.fp32.width", "lanes", 32, "FP32 lanes")
      .uint("pipes.tensor.latency", "cycles", 16, "tensor pipeline latency", 1, 256)
      .real("issue_efficiency", "", 0.9, "fraction of issue slots used", 0.0, 1.0)
      .boolean("dual_issue", false, "two instructions per cycle");
  return s;
}

Schema l1_schema() {
  Schema s("l1", "l1", "L1 data cache");
  s.uint("size_KiB", "KiB", 256, "capacity", 1, 1024)
      .quantity("line", ParamType::Size, std::string("128B"), "line size", 32, 1024)
      .choice("policy", {"lru", "fifo", "random"}, std::string("lru"), "replacement policy");
  return s;
}

Schema hbm3_schema() {
  Schema s("hbm", "hbm3", "HBM3 timing model");
  s.quantity("bandwidth", ParamType::Bandwidth, std::string("3.35TB/s"), "peak bandwidth", 1e9, 100e12)
      .uint("stacks", "stacks", 5, "HBM stacks", 1, 8);
  return s;
}

Schema ideal_memory_schema() {
  Schema s("hbm", "ideal", "fixed-latency memory");
  s.real("latency_ns", "ns", std::nullopt, "access latency");
  return s;
}

// Parameters every `hbm` implementation shares (the slot's contract).
Schema dram_shared_schema() {
  Schema s("hbm", "", "device memory");
  s.uint("channels", "channels", 8, "independent channels", 1, 4096);
  return s;
}

Registry test_registry() {
  Registry reg;
  reg.add(ComponentType{"gpu", "gpu", "the whole GPU", &gpu_schema, {}});
  reg.add(ComponentType{"clocks", "clocks", "clock domains", &clocks_schema, {}});
  reg.add(ComponentType{"sm", "sm", "streaming multiprocessor", &sm_schema, {}});
  reg.add(ComponentType{"l1", "l1", "L1 data cache", &l1_schema, {}});
  reg.add(ComponentType{"hbm", "hbm3", "HBM3", &hbm3_schema, {}});
  reg.add(ComponentType{"hbm", "ideal", "fixed latency", &ideal_memory_schema, {}});
  reg.declare_slot(SlotDeclaration{"hbm", "hbm3", "device memory", nullptr});
  return reg;
}

// The same sections, with the default registered last and parameters every `hbm` implementation shares.
Registry slot_registry() {
  Registry reg;
  reg.add(ComponentType{"gpu", "gpu", "the whole GPU", &gpu_schema, {}});
  reg.add(ComponentType{"hbm", "ideal", "fixed latency", &ideal_memory_schema, {}});
  reg.add(ComponentType{"hbm", "hbm3", "HBM3", &hbm3_schema, {}});
  reg.declare_slot(SlotDeclaration{"hbm", "hbm3", "device memory", &dram_shared_schema});
  return reg;
}

// A fresh directory for config files, removed afterwards.
// The ConfigError message of parsing `yaml` (named cfg.yaml); fails the test when it parses.
std::string parse_error(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  const Registry reg = test_registry();
  try {
    Config::parse(yaml, "cfg.yaml", overrides, reg);
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("no ConfigError for:\n" << yaml);
  return "";
}

std::string load_error(const std::string& path, const std::vector<std::string>& overrides = {}) {
  const Registry reg = test_registry();
  try {
    Config::load(path, overrides, reg);
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("no ConfigError for " << path);
  return "";
}

}  // namespace

// --- defaults, values, units ---------------------------------------------------------------------------------------

TEST_CASE("an empty config gives every registered section with its defaults", "[config]") {
  const Registry reg = test_registry();
  const Config c = Config::parse("", "empty.yaml", {}, reg);
  CHECK(c.files() == std::vector<std::string>{"empty.yaml"});
  REQUIRE(c.sections().size() == 5);
  for (const char* s : {"gpu", "clocks", "sm", "l1", "hbm"}) CHECK(c.has_section(s));
  CHECK(c.section("sm").u64("count") == 132);
  CHECK(c.section("sm").value("count").where.str() == "default");
  CHECK(c.section("sm").u32("pipes.fp32.latency") == 4);
  CHECK(c.section("sm").real("issue_efficiency") == 0.9);
  CHECK(c.section("sm").boolean("dual_issue") == false);
  CHECK(c.section("clocks").real("core") == Approx(1.98e9).epsilon(1e-15));
  CHECK(c.section("clocks").real("memory") == 1593e6);
  CHECK(c.section("l1").u64("line") == 128);
  CHECK(c.section("l1").str("policy") == "lru");
  CHECK(c.section("gpu").str("name") == "H100");
  CHECK(c.section("hbm").impl() == "hbm3");
  CHECK(c.section("hbm").section() == "hbm");
  CHECK(c.section("hbm").real("bandwidth") == Approx(3.35e12).epsilon(1e-15));
  CHECK(c.section("gpu").impl() == "gpu");
}

TEST_CASE("values are parsed by type, with units, from nested or dotted keys", "[config]") {
  const Registry reg = test_registry();
  const Config c = Config::parse(
      "gpu:\n"
      "  name: GH100 SXM5\n"
      "  arch: blackwell\n"
      "clocks:\n"
      "  core: 1410MHz\n"
      "sm:\n"
      "  count: 108\n"
      "  pipes:\n"
      "    fp32:\n"
      "      latency: 6\n"
      "  pipes.tensor.latency: 32\n"
      "  dual_issue: true\n"
      "  issue_efficiency: 0.75\n"
      "l1:\n"
      "  line: 64 B\n"
      "  policy: fifo\n"
      "hbm:\n"
      "  bandwidth: 2.04TB/s\n",
      "cfg.yaml", {}, reg);
  const Params& sm = c.section("sm");
  CHECK(c.section("gpu").str("name") == "GH100 SXM5");
  CHECK(c.section("gpu").str("arch") == "blackwell");
  CHECK(c.section("clocks").real("core") == 1410e6);
  CHECK(c.section("clocks").value("core").text == "1410MHz");
  CHECK(sm.u64("count") == 108);
  CHECK(sm.u64("pipes.fp32.latency") == 6);
  CHECK(sm.value("pipes.fp32.latency").where.str() == "cfg.yaml:10:16");
  CHECK(sm.u64("pipes.fp32.width") == 32);  // sibling of a set value keeps its default
  CHECK(sm.u64("pipes.tensor.latency") == 32);
  CHECK(sm.value("pipes.tensor.latency").where.str() == "cfg.yaml:11:25");
  CHECK(sm.boolean("dual_issue"));
  CHECK(sm.real("issue_efficiency") == 0.75);
  CHECK(c.section("l1").u64("line") == 64);
  CHECK(c.section("l1").str("policy") == "fifo");
  CHECK(c.section("hbm").real("bandwidth") == Approx(2.04e12).epsilon(1e-15));
}

// --- inheritance and overrides -------------------------------------------------------------------------------------

TEST_CASE("base files are inherited two levels deep, nearer files winning", "[config]") {
  TempDir dir;
  dir.write("sub/grand.yaml",
            "sm:\n"
            "  count: 100\n"
            "  pipes:\n"
            "    fp32:\n"
            "      latency: 6\n"
            "clocks:\n"
            "  core: 1.5GHz\n");
  dir.write("sub/mid.yaml",
            "base: grand.yaml\n"  // relative to sub/
            "sm:\n"
            "  count: 110\n"
            "clocks:\n"
            "  memory: 2GHz\n");
  const std::string top = dir.write("top.yaml",
                                    "base: sub/mid.yaml\n"
                                    "sm:\n"
                                    "  count: 120\n");
  const Registry reg = test_registry();
  const Config c = Config::load(top, {}, reg);

  CHECK(c.files() == std::vector<std::string>{top, dir.path("sub/mid.yaml"), dir.path("sub/grand.yaml")});
  const Params& sm = c.section("sm");
  CHECK(sm.u64("count") == 120);
  CHECK(sm.value("count").where.str() == top + ":3:10");
  CHECK(sm.u64("pipes.fp32.latency") == 6);
  CHECK(sm.value("pipes.fp32.latency").where.str() == dir.path("sub/grand.yaml") + ":5:16");
  CHECK(sm.value("pipes.fp32.width").where.str() == "default");
  CHECK(c.section("clocks").real("core") == 1.5e9);
  CHECK(c.section("clocks").value("core").where.str() == dir.path("sub/grand.yaml") + ":7:9");
  CHECK(c.section("clocks").real("memory") == 2e9);
  CHECK(c.section("clocks").value("memory").where.str() == dir.path("sub/mid.yaml") + ":5:11");

  SECTION("--set overrides every file, the last one winning") {
    const Config o =
        Config::load(top, {"sm.count=144", "clocks.core=1.2 GHz", "sm.pipes.fp32.latency=9", "sm.count=150"}, reg);
    CHECK(o.section("sm").u64("count") == 150);
    CHECK(o.section("sm").value("count").where.str() == "command line (--set sm.count=150)");
    CHECK(o.section("sm").u64("pipes.fp32.latency") == 9);
    CHECK(o.section("clocks").real("core") == 1.2e9);
    CHECK(o.section("clocks").real("memory") == 2e9);  // untouched: still from mid.yaml
  }
}

TEST_CASE("overrides take any parameter, and name themselves in errors", "[config]") {
  const Registry reg = test_registry();
  const Config c = Config::parse("", "cfg.yaml", {"hbm.bandwidth=6.7TB/s", "gpu.name=\"B200: 192GB\""}, reg);
  CHECK(c.section("hbm").real("bandwidth") == Approx(6.7e12).epsilon(1e-15));
  CHECK(c.section("gpu").str("name") == "B200: 192GB");

  CHECK(parse_error("", {"sm.count"}) ==
        "command line (--set sm.count): expected SECTION.KEY=VALUE, e.g. --set sm.count=144");
  CHECK(parse_error("", {"=4"}) == "command line (--set =4): expected SECTION.KEY=VALUE, e.g. --set sm.count=144");
  CHECK(parse_error("", {"sm.count=twelve"}) ==
        "command line (--set sm.count=twelve): sm.count: expected unsigned integer in [1, 1024], got \"twelve\"");
  CHECK(parse_error("", {"sm.cuont=4"}) ==
        "command line (--set sm.cuont=4): sm.cuont: unknown parameter; did you mean 'count'?");
}

TEST_CASE("switching impl in a derived file or override drops the old implementation's parameters", "[config]") {
  TempDir dir;
  dir.write("base.yaml",
            "hbm:\n"
            "  bandwidth: 2TB/s\n"
            "  stacks: 4\n");
  const std::string child = dir.write("child.yaml",
                                      "base: base.yaml\n"
                                      "hbm:\n"
                                      "  impl: ideal\n"
                                      "  latency_ns: 80\n");
  const Registry reg = test_registry();
  const Config c = Config::load(child, {}, reg);
  CHECK(c.section("hbm").impl() == "ideal");
  CHECK(c.section("hbm").real("latency_ns") == 80.0);
  CHECK_FALSE(c.section("hbm").has("bandwidth"));

  // Overrides are combined before they are applied, so their order does not matter.
  const std::string base = dir.path("base.yaml");
  for (const auto& overrides : {std::vector<std::string>{"hbm.impl=ideal", "hbm.latency_ns=90"},
                                std::vector<std::string>{"hbm.latency_ns=90", "hbm.impl=ideal"}}) {
    const Config o = Config::load(base, overrides, reg);
    CHECK(o.section("hbm").impl() == "ideal");
    CHECK(o.section("hbm").real("latency_ns") == 90.0);
  }

  // Naming the default implementation explicitly is no switch: inherited parameters stay.
  const std::string same = dir.write("same.yaml", "base: base.yaml\nhbm:\n  impl: hbm3\n");
  CHECK(Config::load(same, {}, reg).section("hbm").u64("stacks") == 4);
}

// --- validation messages -------------------------------------------------------------------------------------------

TEST_CASE("unknown keys are reported with a suggestion", "[config][errors]") {
  CHECK(parse_error("sm:\n  cuont: 4\n") == "cfg.yaml:2:3: sm.cuont: unknown parameter; did you mean 'count'?");
  CHECK(parse_error("l1:\n  size_kib: 4\n") ==
        "cfg.yaml:2:3: l1.size_kib: unknown parameter; did you mean 'size_KiB'?");
  CHECK(parse_error("sm:\n  pipes:\n    fp33:\n      latency: 5\n") ==
        "cfg.yaml:3:5: sm.pipes.fp33: unknown parameter; did you mean 'pipes.fp32'?");
  // Right key, wrong section.
  CHECK(parse_error("gpu:\n  count: 4\n") ==
        "cfg.yaml:2:3: gpu.count: unknown parameter; `count` is a parameter of section sm");
  // Right key, other implementation.
  CHECK(parse_error("hbm:\n  latency_ns: 4\n") ==
        "cfg.yaml:2:3: hbm.latency_ns: unknown parameter; `latency_ns` is a parameter of implementation 'ideal' "
        "of section hbm (select it with `impl:`), not of 'hbm3'");
  // Nothing close: list what there is.
  CHECK(parse_error("l1:\n  associativity: 4\n") ==
        "cfg.yaml:2:3: l1.associativity: unknown parameter; parameters of l1: size_KiB, line, policy");
}

TEST_CASE("unknown sections are reported with a suggestion", "[config][errors]") {
  CHECK(parse_error("sn:\n  count: 4\n") == "cfg.yaml:1:1: sn: unknown section; did you mean 'sm'?");
  CHECK(parse_error("sm:\n  count: 4\ncount: 5\n") ==
        "cfg.yaml:3:1: count: unknown section; `count` is a parameter of section sm");
  CHECK(parse_error("dram:\n  x: 1\n") == "cfg.yaml:1:1: dram: unknown section; sections: gpu, clocks, sm, l1, hbm");
}

TEST_CASE("wrong types name the exact line and column", "[config][errors]") {
  CHECK(parse_error("sm:\n  count: twelve\n") ==
        "cfg.yaml:2:10: sm.count: expected unsigned integer in [1, 1024], got \"twelve\"");
  CHECK(parse_error("sm:\n  count: 1.5\n") ==
        "cfg.yaml:2:10: sm.count: expected unsigned integer in [1, 1024], got \"1.5\"");
  CHECK(parse_error("sm:\n  dual_issue: yes\n") == "cfg.yaml:2:15: sm.dual_issue: expected true or false, got \"yes\"");
  CHECK(parse_error("clocks:\n  core: 1.98\n") ==
        "cfg.yaml:2:9: clocks.core: expected a frequency with a unit, e.g. 1.98GHz, got \"1.98\"");
  CHECK(parse_error("l1:\n  policy: lur\n") ==
        "cfg.yaml:2:11: l1.policy: expected one of 'lru', 'fifo', 'random', got \"lur\"; did you mean 'lru'?");
  CHECK(parse_error("sm:\n  count:\n") ==
        "cfg.yaml:2:3: sm.count: expected unsigned integer in [1, 1024], got nothing");
}

TEST_CASE("values out of range are rejected, quantities shown with units", "[config][errors]") {
  CHECK(parse_error("sm:\n  count: 2000\n") ==
        "cfg.yaml:2:10: sm.count: expected unsigned integer in [1, 1024], got 2000");
  CHECK(parse_error("sm:\n  count: 0\n") == "cfg.yaml:2:10: sm.count: expected unsigned integer in [1, 1024], got 0");
  CHECK(parse_error("sm:\n  issue_efficiency: 1.5\n") ==
        "cfg.yaml:2:21: sm.issue_efficiency: expected real number in [0, 1], got 1.5");
  CHECK(parse_error("clocks:\n  core: 10GHz\n") ==
        "cfg.yaml:2:9: clocks.core: expected a frequency in [100MHz, 5GHz], got 10GHz");
  CHECK(parse_error("l1:\n  line: 16B\n") == "cfg.yaml:2:9: l1.line: expected a size in [32B, 1KiB], got 16B");
  CHECK(parse_error("hbm:\n  impl: ideal\n  latency_ns: -1\n") ==
        "cfg.yaml:3:15: hbm.latency_ns: expected real number >= 0, got -1");
}

TEST_CASE("maps and scalars must be where the schema puts them", "[config][errors]") {
  CHECK(parse_error("sm:\n  count:\n    a: 1\n") ==
        "cfg.yaml:3:5: sm.count: expected unsigned integer in [1, 1024], got a map");
  CHECK(parse_error("sm:\n  count: [1, 2]\n") ==
        "cfg.yaml:2:10: sm.count: expected unsigned integer in [1, 1024], got a list");
  CHECK(parse_error("sm:\n  pipes: 4\n") ==
        "cfg.yaml:2:10: sm.pipes: expected a map (of fp32.latency, fp32.width, tensor.latency), got \"4\"");
  CHECK(parse_error("sm: 3\n") == "cfg.yaml:1:5: sm: expected a map of the section's parameters, got \"3\"");
  CHECK(parse_error("- sm\n") == "cfg.yaml:1:1: expected a map of sections (e.g. `sm:`) at the top level, got a list");
}

TEST_CASE("a required parameter without a value names section, key and file", "[config][errors]") {
  CHECK(parse_error("hbm:\n  impl: ideal\n") ==
        "cfg.yaml: hbm.latency_ns: required parameter is not set (real number >= 0); set it under `hbm:` in "
        "cfg.yaml or with --set hbm.latency_ns=VALUE");
}

TEST_CASE("impl selects the implementation and its schema", "[config]") {
  const Registry reg = test_registry();
  const Config c = Config::parse("hbm:\n  impl: ideal\n  latency_ns: 120\n", "cfg.yaml", {}, reg);
  const Params& hbm = c.section("hbm");
  CHECK(hbm.impl() == "ideal");
  CHECK(hbm.real("latency_ns") == 120.0);
  CHECK_FALSE(hbm.has("stacks"));
  CHECK(hbm.values().size() == 1);

  CHECK(parse_error("hbm:\n  impl: ideal\n  latency_ns: 120\n  stacks: 4\n") ==
        "cfg.yaml:4:3: hbm.stacks: unknown parameter; `stacks` is a parameter of implementation 'hbm3' of section "
        "hbm (select it with `impl:`), not of 'ideal'");
  CHECK(parse_error("hbm:\n  impl: hbm4\n") ==
        "cfg.yaml:2:9: hbm.impl: unknown implementation 'hbm4' of section hbm; did you mean 'hbm3'? "
        "(implementations: hbm3, ideal)");
}

TEST_CASE("file problems: missing files, syntax errors, cycles", "[config][errors]") {
  TempDir dir;
  SECTION("missing file") {
    CHECK(load_error(dir.path("nope.yaml")) ==
          "cannot open config file '" + dir.path("nope.yaml") + "': No such file or directory");
  }
  SECTION("missing base names the including line") {
    const std::string top = dir.write("top.yaml", "base: nope.yaml\n");
    CHECK(load_error(top) == top + ":1:7: base: cannot open config file '" + dir.path("nope.yaml") +
                                 "': No such file or directory");
  }
  SECTION("YAML syntax error") {
    const std::string bad = dir.write("bad.yaml", "sm:\n  count: 4\n   bad: 5\n");
    CHECK(load_error(bad) == bad + ":3:7: YAML syntax error: illegal map value");
  }
  SECTION("syntax error in a base file") {
    dir.write("bad.yaml", "sm: {count: 4\n");
    const std::string top = dir.write("top.yaml", "base: bad.yaml\n");
    CHECK(load_error(top) == dir.path("bad.yaml") + ":2:1: YAML syntax error: end of map flow not found");
  }
  SECTION("base cycle") {
    const std::string a = dir.write("a.yaml", "base: b.yaml\n");
    dir.write("b.yaml", "base: a.yaml\n");
    CHECK(load_error(a) == dir.path("b.yaml") + ":1:7: base: inheritance cycle: " + a + " -> " +
                               dir.path("b.yaml") + " -> " + a);
  }
  SECTION("a file that is its own base") {
    const std::string self = dir.write("self.yaml", "base: ./self.yaml\n");
    CHECK(load_error(self) == self + ":1:7: base: inheritance cycle: " + self + " -> " + self);
  }
  SECTION("a key twice in one mapping") {
    CHECK(parse_error("sm:\n  count: 4\n  count: 5\n") ==
          "cfg.yaml:3:3: sm.count: key given twice in the same mapping (first at cfg.yaml:2:3)");
  }
}

// --- resolved YAML -------------------------------------------------------------------------------------------------

TEST_CASE("resolved_yaml lists every value with its source and loads back to the same config", "[config]") {
  TempDir dir;
  dir.write("base.yaml",
            "sm:\n"
            "  pipes:\n"
            "    fp32:\n"
            "      latency: 6\n");
  const std::string top = dir.write("top.yaml",
                                    "base: base.yaml\n"
                                    "gpu:\n"
                                    "  name: 'H100 SXM5: 80GB # test'\n"
                                    "  arch: ampere\n"
                                    "clocks:\n"
                                    "  core: 1.755 GHz\n"
                                    "l1:\n"
                                    "  line: 64B\n"
                                    "  policy: random\n");
  const Registry reg = test_registry();
  const Config c = Config::load(top, {"sm.count=150", "sm.dual_issue=true", "hbm.impl=ideal", "hbm.latency_ns=95.5"},
                                reg);
  const std::string yaml = c.resolved_yaml();
  INFO(yaml);

  CHECK(yaml.rfind("# warpsim resolved configuration (generated)\n# from: " + top + ", " + dir.path("base.yaml") +
                       "\n",
                   0) == 0);
  CHECK(yaml.find("sm:\n  count: 150  # command line (--set sm.count=150)\n  pipes:\n    fp32:\n      latency: 6  # " +
                  dir.path("base.yaml") + ":4:16\n      width: 32  # default\n    tensor:\n      latency: 16  # "
                  "default\n  issue_efficiency: 0.9  # default\n") != std::string::npos);
  CHECK(yaml.find("  core: 1.755 GHz  # " + top + ":6:9\n") != std::string::npos);
  CHECK(yaml.find("hbm:\n  impl: ideal  # command line (--set hbm.impl=ideal)\n  latency_ns: 95.5  #") !=
        std::string::npos);
  CHECK(yaml.find("sm:\n  impl") == std::string::npos);  // a single implementation is not named

  const Config back = Config::parse(yaml, "resolved.yaml", {}, reg);
  REQUIRE(back.sections().size() == c.sections().size());
  for (const auto& [name, params] : c.sections()) {
    const Params& other = back.section(name);
    CHECK(other.impl() == params.impl());
    REQUIRE(other.values().size() == params.values().size());
    for (const auto& [key, value] : params.values()) {
      INFO(name << "." << key);
      const ParamValue& v = other.value(key);
      CHECK(v.type == value.type);
      CHECK(v.number == value.number);
      CHECK(v.flag == value.flag);
      CHECK(v.text == value.text);
    }
  }
  CHECK(back.section("gpu").str("name") == "H100 SXM5: 80GB # test");
  // Defaults round-trip as defaults' text, and a section with one implementation and defaults only too.
  const Config defaults = Config::parse("", "empty.yaml", {}, reg);
  const Config defaults_back = Config::parse(defaults.resolved_yaml(), "resolved.yaml", {}, reg);
  CHECK(defaults_back.section("hbm").impl() == "hbm3");
  CHECK(defaults_back.section("clocks").value("core").text == "1.98GHz");
}

// --- Params and Registry -------------------------------------------------------------------------------------------

TEST_CASE("Params::fail names where the value came from", "[config][params]") {
  Params p("l1", "l1");
  ParamValue size;
  size.type = ParamType::Size;
  size.number = 1000;
  size.text = "1000B";
  size.where = SourceLoc{"configs/a.yaml", 3, 9, ""};
  p.set("size", size);
  ParamValue line = size;
  line.where = SourceLoc::command_line("l1.line=96B");
  p.set("line", line);
  ParamValue ways = size;
  ways.type = ParamType::UInt;
  ways.where = SourceLoc::schema_default();
  p.set("ways", ways);

  CHECK_THROWS_AS(p.fail("size", "x"), ConfigError);
  CHECK_THROWS_WITH(p.fail("size", "not a multiple of the line size (128B)"),
                    "configs/a.yaml:3:9: l1.size: not a multiple of the line size (128B)");
  CHECK_THROWS_WITH(p.fail("line", "not a power of two"),
                    "command line (--set l1.line=96B): l1.line: not a power of two");
  CHECK_THROWS_WITH(p.fail("ways", "too many"), "default: l1.ways: too many");
  CHECK(p.u64("size") == 1000);  // sizes are whole bytes and read as integers too
  CHECK(p.u32("ways") == 1000);
  CHECK(p.real("size") == 1000.0);
}

TEST_CASE("SourceLoc::str", "[config][params]") {
  CHECK(SourceLoc{"configs/h100_sxm.yaml", 12, 9, ""}.str() == "configs/h100_sxm.yaml:12:9");
  CHECK(SourceLoc::schema_default().str() == "default");
  CHECK(SourceLoc::schema_default().is_default());
  CHECK(SourceLoc::command_line("sm.count=144").str() == "command line (--set sm.count=144)");
  CHECK_FALSE(SourceLoc::command_line("sm.count=144").is_default());
}

TEST_CASE("Registry finds implementations - a slot's declaration names its default", "[registry]") {
  const Registry reg = test_registry();
  CHECK(reg.sections() == std::vector<std::string>{"gpu", "clocks", "sm", "l1", "hbm"});
  REQUIRE(reg.find("hbm") != nullptr);
  CHECK(reg.find("hbm")->impl == "hbm3");
  REQUIRE(reg.find("hbm", "ideal") != nullptr);
  CHECK(reg.find("hbm", "ideal")->description == "fixed latency");
  CHECK(reg.find("hbm", "hbm4") == nullptr);
  CHECK(reg.find("dram") == nullptr);
  const auto impls = reg.implementations("hbm");
  REQUIRE(impls.size() == 2);
  CHECK(impls[0]->impl == "hbm3");
  CHECK(impls[1]->impl == "ideal");
  CHECK(reg.implementations("dram").empty());
  CHECK(reg.find("sm")->schema().find("count")->max == 1024.0);
  // Registered last, still the default: the declaration decides.
  const Registry slots = slot_registry();
  CHECK(slots.find("hbm")->impl == "hbm3");
  // Every implementation gets the slot's shared parameters first, then its own.
  const Schema ideal = slots.schema(*slots.find("hbm", "ideal"));
  REQUIRE(ideal.params().size() == 2);
  CHECK(ideal.params()[0].name == "channels");
  CHECK(ideal.params()[1].name == "latency_ns");
  CHECK(ideal.impl() == "ideal");
}

TEST_CASE("A config selects an implementation and validates the slot's shared parameters", "[registry]") {
  const Registry reg = slot_registry();
  const Config ideal = Config::parse("hbm: {impl: ideal, latency_ns: 100, channels: 3}\n", "cfg.yaml", {}, reg);
  CHECK(ideal.section("hbm").impl() == "ideal");
  CHECK(ideal.section("hbm").u32("channels") == 3);
  const Config def = Config::parse("hbm: {bandwidth: 1TB/s}\n", "cfg.yaml", {}, reg);
  CHECK(def.section("hbm").impl() == "hbm3");
  CHECK(def.section("hbm").u32("channels") == 8);  // the shared default
}

TEST_CASE("Switching implementation in a derived config keeps the slot's shared parameters", "[registry]") {
  const Registry reg = slot_registry();
  TempDir dir;
  dir.write("base.yaml", "hbm:\n  channels: 5\n  bandwidth: 2TB/s\n");
  const std::string top = dir.write("top.yaml", "base: base.yaml\nhbm:\n  impl: ideal\n  latency_ns: 90\n");
  const Config c = Config::load(top, {}, reg);
  CHECK(c.section("hbm").impl() == "ideal");
  CHECK(c.section("hbm").u32("channels") == 5);  // shared: carried over
  CHECK(c.section("hbm").real("latency_ns") == 90.0);
  // hbm3's own `bandwidth` was dropped with the switch: naming it for `ideal` is an error, not a silent default.
  const std::string bad = dir.write("bad.yaml", "base: base.yaml\nhbm:\n  impl: ideal\n  latency_ns: 90\n  bandwidth: 1TB/s\n");
  CHECK_THROWS_AS(Config::load(bad, {}, reg), ConfigError);
}

// --- issue 6: hostile or careless input ends in one clear ConfigError -------------------------------------------

TEST_CASE("nested YAML aliases are bounded, not expanded without end", "[config][errors][limits]") {
  // 2^30 values once expanded: converting took minutes and gigabytes before the limit.
  std::string bomb = "a0: &a0 {x: 1, y: 1}\n";
  for (int i = 1; i <= 30; ++i)
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " {x: *a" + std::to_string(i - 1) + ", y: *a" +
            std::to_string(i - 1) + "}\n";
  CHECK_THAT(parse_error(bomb), Catch::Contains("cfg.yaml:") && Catch::Contains("more than 100000 YAML values"));
}

TEST_CASE("deep nesting and bytes that are not text are named as such", "[config][errors][limits]") {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "{a: ";
  CHECK_THAT(parse_error(deep + "1" + std::string(100, '}') + "\n"),
             Catch::Contains("cfg.yaml:1:") && Catch::Contains("YAML nested deeper than 64 levels"));
  CHECK_THAT(parse_error(std::string(5000, '[')), Catch::Contains("YAML nested deeper than"));
  CHECK(parse_error(std::string("sm:\n  count: 4\0\n", 16)) == "cfg.yaml:2:11: NUL byte (not a text file?)");
  CHECK(parse_error("gpu:\n  name: caf\xe9\n") == "cfg.yaml:2:12: not UTF-8 (byte 0xe9)");
  CHECK_THAT(parse_error("", {"gpu.name=caf\xe9"}),
             Catch::Contains("command line (--set gpu.name=caf") && Catch::Contains("not UTF-8 (byte 0xe9)"));
}

TEST_CASE("one document sets each value once", "[config][errors]") {
  CHECK(parse_error("sm.count: 1\nsm:\n  count: 2\n") ==
        "cfg.yaml:3:3: sm.count: given twice (also at cfg.yaml:1:1)");
  CHECK(parse_error("sm:\n  count: 2\nsm.count: 1\n") ==
        "cfg.yaml:3:1: sm.count: given twice (also at cfg.yaml:2:3)");
  CHECK_THAT(parse_error("sm: {count: 2}\n---\nsm: {count: 3}\n"),
             Catch::Contains("cfg.yaml:3:1: a second YAML document (after ---)"));
  CHECK_THAT(parse_error("", {"sm.count=4\n---\nsm: {count: 5}"}),
             Catch::Contains("command line (--set sm.count=4") && Catch::Contains("a second YAML document"));
  // Different keys of one section, dotted and nested, still merge.
  const Registry reg = test_registry();
  const Config c = Config::parse("sm.count: 3\nsm:\n  dual_issue: true\n", "cfg.yaml", {}, reg);
  CHECK(c.section("sm").u64("count") == 3);
  CHECK(c.section("sm").boolean("dual_issue"));
}

TEST_CASE("config files must be regular files within the size limit", "[config][errors][limits]") {
  TempDir dir;
  const std::string fifo = dir.path("pipe.yaml");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(load_error(fifo), Catch::Contains("cannot open config file '" + fifo + "': not a regular file"));
  CHECK_THAT(load_error("/dev/zero"), Catch::Contains("cannot open config file '/dev/zero': not a regular file"));
  const std::string top = dir.write("top.yaml", "base: ./pipe.yaml\n");
  CHECK_THAT(load_error(top), Catch::Contains(top + ":1:7: base: cannot open config file") &&
                                  Catch::Contains("not a regular file"));

  const std::string big = dir.path("big.yaml");
  { std::ofstream(big) << "# " << std::string(16 << 20, 'x') << "\n"; }
  CHECK_THAT(load_error(big), Catch::Contains("larger than the limit of 16777216 bytes"));

  const std::string loop = dir.path("loop.yaml");
  fs::create_symlink("loop.yaml", loop);
  CHECK(load_error(loop) == "cannot open config file '" + loop + "': Too many levels of symbolic links");
}

// The one bounded reader behind configs, reference files, --map files, Nsight Compute exports and result files.
TEST_CASE("read_input_file names the kind of file, the path and the problem", "[config][errors][limits]") {
  TempDir dir;
  const auto error_of = [](const std::string& path, std::uint64_t limit) {
    try {
      read_input_file(path, limit, "reference file");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string ten = dir.write("ten.yaml", "0123456789");
  CHECK(read_input_file(ten, 10, "reference file") == "0123456789");  // exactly the limit is allowed
  CHECK(error_of(ten, 9) == "cannot open reference file '" + ten + "': file of 10 bytes is larger than the limit of 9 bytes");
  CHECK(error_of(dir.path("absent.yaml"), 10) ==
        "cannot open reference file '" + dir.path("absent.yaml") + "': No such file or directory");
  CHECK(error_of(dir.path(""), 10).rfind("cannot open reference file '" + dir.path("") + "': is a directory", 0) == 0);
  CHECK_THAT(error_of("/dev/zero", 10), Catch::StartsWith("cannot open reference file '/dev/zero': not a regular file"));
  CHECK(read_input_file(dir.write("empty.yaml", ""), 10, "reference file").empty());
}

// Found by fuzz_config: yaml-cpp's LoadAll looped forever, allocating, on a stream starting with ','.
TEST_CASE("a YAML stream starting with a comma is a syntax error, not a hang", "[config]") {
  CHECK(parse_error(",tensor.flops_percycle.0}\n") == "cfg.yaml:1:1: YAML syntax error: unexpected text at the start of the document");
  CHECK(parse_error(" ,a\n").find("YAML syntax error") != std::string::npos);
  CHECK(parse_error("gpu: {name: a}\n---\nsm: {count: 3}\n").find("a second YAML document") != std::string::npos);
}
