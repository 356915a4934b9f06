// Units, number formatting, "did you mean" and schema declarations.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/config/schema.h"

using namespace warpsim;

namespace {

// The parsed value; fails the test when the text is rejected.
double parsed(const std::string& text, ParamType type) {
  double value = -1.0;
  std::string error;
  INFO(text << " -> " << error);
  const bool ok = parse_quantity(text, type, value, error);
  INFO("error: " << error);
  REQUIRE(ok);
  return value;
}

// The error message; fails the test when the text is accepted.
std::string rejected(const std::string& text, ParamType type) {
  double value = -1.0;
  std::string error;
  const bool ok = parse_quantity(text, type, value, error);
  INFO(text << " was accepted as " << value);
  REQUIRE_FALSE(ok);
  REQUIRE_FALSE(error.empty());
  return error;
}

}  // namespace

TEST_CASE("frequencies take Hz, kHz, MHz and GHz", "[config][units]") {
  CHECK(parsed("1.98GHz", ParamType::Frequency) == Approx(1.98e9).epsilon(1e-15));
  CHECK(parsed("1410MHz", ParamType::Frequency) == 1410e6);
  CHECK(parsed("1.98 GHz", ParamType::Frequency) == Approx(1.98e9).epsilon(1e-15));
  CHECK(parsed("500kHz", ParamType::Frequency) == 500e3);
  CHECK(parsed("100Hz", ParamType::Frequency) == 100.0);
  CHECK(parsed("2e3MHz", ParamType::Frequency) == 2e9);
  CHECK(parsed("0GHz", ParamType::Frequency) == 0.0);
}

TEST_CASE("bandwidths take decimal and binary units per second", "[config][units]") {
  CHECK(parsed("10B/s", ParamType::Bandwidth) == 10.0);
  CHECK(parsed("2KB/s", ParamType::Bandwidth) == 2e3);
  CHECK(parsed("1.5MB/s", ParamType::Bandwidth) == 1.5e6);
  CHECK(parsed("900GB/s", ParamType::Bandwidth) == 900e9);
  CHECK(parsed("3.35TB/s", ParamType::Bandwidth) == Approx(3.35e12).epsilon(1e-15));
  CHECK(parsed("1KiB/s", ParamType::Bandwidth) == 1024.0);
  CHECK(parsed("1MiB/s", ParamType::Bandwidth) == 1048576.0);
  CHECK(parsed("2GiB/s", ParamType::Bandwidth) == 2147483648.0);
  CHECK(parsed("1TiB/s", ParamType::Bandwidth) == 1099511627776.0);
}

TEST_CASE("sizes take binary KiB..TiB and decimal KB..TB", "[config][units]") {
  CHECK(parsed("128B", ParamType::Size) == 128.0);
  CHECK(parsed("228KiB", ParamType::Size) == 233472.0);
  CHECK(parsed("50MiB", ParamType::Size) == 52428800.0);
  CHECK(parsed("80GiB", ParamType::Size) == 85899345920.0);
  CHECK(parsed("1TiB", ParamType::Size) == 1099511627776.0);
  CHECK(parsed("1KB", ParamType::Size) == 1000.0);
  CHECK(parsed("40MB", ParamType::Size) == 40e6);
  CHECK(parsed("1GB", ParamType::Size) == 1e9);
  CHECK(parsed("2TB", ParamType::Size) == 2e12);
  CHECK(parsed("1.5KiB", ParamType::Size) == 1536.0);
  CHECK(parsed("1.1KB", ParamType::Size) == 1100.0);  // exactly: rounding noise of 1.1 * 1000 removed
  CHECK(parsed(" 64 KiB ", ParamType::Size) == 65536.0);
}

TEST_CASE("quantities need a known unit and a non-negative number", "[config][units]") {
  CHECK(rejected("1.98", ParamType::Frequency) == "expected a frequency with a unit, e.g. 1.98GHz, got \"1.98\"");
  CHECK(rejected("4096", ParamType::Size) == "expected a size with a unit, e.g. 50MiB, got \"4096\"");
  CHECK(rejected("900", ParamType::Bandwidth) == "expected a bandwidth with a unit, e.g. 3.35TB/s, got \"900\"");
  CHECK(rejected("-1GHz", ParamType::Frequency) == "expected a frequency >= 0, got \"-1GHz\"");
  CHECK(rejected("1.98ghz", ParamType::Frequency) ==
        "expected a frequency with a unit (Hz, kHz, MHz, GHz), got \"1.98ghz\"; did you mean 'GHz'?");
  CHECK(rejected("fast", ParamType::Frequency) == "expected a frequency with a unit, e.g. 1.98GHz, got \"fast\"");
  CHECK(rejected("", ParamType::Size) == "expected a size with a unit, e.g. 50MiB, got \"\"");
  CHECK(rejected("0.5B", ParamType::Size) == "expected a whole number of bytes, got \"0.5B\"");
  rejected("1GHz", ParamType::Bandwidth);
  rejected("1GB", ParamType::Bandwidth);  // a size, not a bandwidth
  rejected("1GB/s", ParamType::Size);
  rejected("1e400GHz", ParamType::Frequency);
  rejected("GHz", ParamType::Frequency);
  rejected("1..5GHz", ParamType::Frequency);
  rejected("0x10KiB", ParamType::Size);
}

TEST_CASE("unsigned integers are digits only", "[config][units]") {
  CHECK(parsed("132", ParamType::UInt) == 132.0);
  CHECK(parsed("0", ParamType::UInt) == 0.0);
  CHECK(parsed("18446744073709551615", ParamType::UInt) == 18446744073709551615.0);
  CHECK(rejected("1.5", ParamType::UInt) == "expected an unsigned integer, got \"1.5\"");
  rejected("-3", ParamType::UInt);
  rejected("twelve", ParamType::UInt);
  rejected("1e3", ParamType::UInt);
  rejected("", ParamType::UInt);
  rejected("+4", ParamType::UInt);
  CHECK(rejected("18446744073709551616", ParamType::UInt) ==
        "expected an unsigned integer below 2^64, got \"18446744073709551616\"");
}

TEST_CASE("real numbers take signs, fractions and exponents", "[config][units]") {
  CHECK(parsed("0.5", ParamType::Real) == 0.5);
  CHECK(parsed("-2.5", ParamType::Real) == -2.5);
  CHECK(parsed("1e-3", ParamType::Real) == 0.001);
  CHECK(parsed(".25", ParamType::Real) == 0.25);
  CHECK(parsed("3", ParamType::Real) == 3.0);
  CHECK(parsed("+7E2", ParamType::Real) == 700.0);
  CHECK(rejected("abc", ParamType::Real) == "expected a real number, got \"abc\"");
  rejected("1.5x", ParamType::Real);
  rejected("inf", ParamType::Real);
  rejected("nan", ParamType::Real);
  rejected("", ParamType::Real);
  rejected("1e999", ParamType::Real);
}

TEST_CASE("quantities print in their most readable unit", "[config][units]") {
  CHECK(format_quantity(1.98e9, ParamType::Frequency) == "1.98GHz");
  CHECK(format_quantity(1.5e8, ParamType::Frequency) == "150MHz");
  CHECK(format_quantity(262144, ParamType::Size) == "256KiB");
  CHECK(format_quantity(1572864, ParamType::Size) == "1.5MiB");
  CHECK(format_quantity(1e9, ParamType::Size) == "1GB");
  CHECK(format_quantity(100, ParamType::Size) == "100B");
  CHECK(format_quantity(0, ParamType::Size) == "0B");
  CHECK(format_quantity(3.35e12, ParamType::Bandwidth) == "3.35TB/s");
  CHECK(format_quantity(1024, ParamType::UInt) == "1024");
}

TEST_CASE("numbers print compactly and read back exactly", "[config][units]") {
  CHECK(format_number(132) == "132");
  CHECK(format_number(0.5) == "0.5");
  CHECK(format_number(0.1) == "0.1");
  CHECK(format_number(-2.25) == "-2.25");
  CHECK(format_number(4294967295.0) == "4294967295");
  CHECK(format_number(1e20) == "1e+20");
  CHECK(format_number(1.0 / 3.0) == "0.3333333333333333");
}

TEST_CASE("did_you_mean suggests close names only", "[config][units]") {
  const std::vector<std::string> keys = {"count", "latency", "size_KiB"};
  CHECK(did_you_mean("cuont", keys) == "count");     // transposition
  CHECK(did_you_mean("latncy", keys) == "latency");  // deletion
  CHECK(did_you_mean("size_kib", keys) == "size_KiB");
  CHECK(did_you_mean("LATENCY", keys) == "latency");  // case is ignored: 7 edits otherwise
  CHECK(did_you_mean("bandwidth", keys) == "");
  CHECK(did_you_mean("l3", {"l1", "l2"}) == "l1");  // equally close: the first
  // Nine letters allow three edits.
  CHECK(did_you_mean("abcdefghi", {"abcxyzghi"}) == "abcxyzghi");
  CHECK(did_you_mean("abcdefghi", {"abxxyzghi"}) == "");
  CHECK(did_you_mean("x", {}) == "");
}

TEST_CASE("durations take s, ms, us and ns", "[config][units]") {
  CHECK(parsed("10us", ParamType::Duration) == Approx(1e-5).epsilon(1e-15));
  CHECK(parsed("25ms", ParamType::Duration) == Approx(0.025).epsilon(1e-15));
  CHECK(parsed("1s", ParamType::Duration) == 1.0);
  CHECK(parsed("500ns", ParamType::Duration) == Approx(5e-7).epsilon(1e-15));
  CHECK(rejected("10", ParamType::Duration) == "expected a duration with a unit, e.g. 10us, got \"10\"");
  rejected("10min", ParamType::Duration);
  CHECK(format_quantity(2.5e-5, ParamType::Duration) == "25us");
}

TEST_CASE("a quantity in a unit below the base unit reads as the double nearest its decimal value", "[config][units]") {
  // The expected values are the compiler's reading of the decimal literals. Multiplying by 1e-6 (which is not
  // exact in binary) gave 9.999999999999999e-06 for 10us, and 10fJ, 3ns, 500ns and 30uJ were each one bit off.
  CHECK(parsed("10us", ParamType::Duration) == 1e-5);
  CHECK(parsed("100us", ParamType::Duration) == 1e-4);
  CHECK(parsed("500ns", ParamType::Duration) == 5e-7);
  CHECK(parsed("3ns", ParamType::Duration) == 3e-9);
  CHECK(parsed("10fJ", ParamType::Energy) == 1e-14);
  CHECK(parsed("30uJ", ParamType::Energy) == 3e-5);
  CHECK(parsed("1mW", ParamType::Power) == 1e-3);
  CHECK(format_quantity(1e-5, ParamType::Duration) == "10us");
  CHECK(format_quantity(3e-12, ParamType::Energy) == "3pJ");
  CHECK(format_quantity(1e-3, ParamType::Power) == "1mW");
}

TEST_CASE("param_type_name names every type", "[config][units]") {
  CHECK(std::string(param_type_name(ParamType::UInt)) == "uint");
  CHECK(std::string(param_type_name(ParamType::Real)) == "real");
  CHECK(std::string(param_type_name(ParamType::Bool)) == "bool");
  CHECK(std::string(param_type_name(ParamType::String)) == "string");
  CHECK(std::string(param_type_name(ParamType::Choice)) == "choice");
  CHECK(std::string(param_type_name(ParamType::Frequency)) == "frequency");
  CHECK(std::string(param_type_name(ParamType::Bandwidth)) == "bandwidth");
  CHECK(std::string(param_type_name(ParamType::Size)) == "size");
  CHECK(std::string(param_type_name(ParamType::Duration)) == "duration");
}

TEST_CASE("schema builders record defaults as YAML text", "[config][units]") {
  Schema s("sm", "sm", "streaming multiprocessor");
  s.uint("count", "SMs", 132, "number of SMs", 1, 1024)
      .real("efficiency", "", 0.5, "issue efficiency", 0.0, 1.0)
      .boolean("dual_issue", true, "two instructions per cycle")
      .string("name", std::string("H100"), "model")
      .choice("policy", {"lru", "fifo"}, std::string("fifo"), "replacement")
      .quantity("clock", ParamType::Frequency, std::string("1.98GHz"), "SM clock")
      .uint("warps", "warps", std::nullopt, "required: no default");
  REQUIRE(s.params().size() == 7);
  CHECK(s.section() == "sm");
  CHECK(*s.find("count")->default_text == "132");
  CHECK(s.find("count")->min == 1.0);
  CHECK(s.find("count")->max == 1024.0);
  CHECK(*s.find("efficiency")->default_text == "0.5");
  CHECK(*s.find("dual_issue")->default_text == "true");
  CHECK(*s.find("name")->default_text == "H100");
  CHECK(*s.find("policy")->default_text == "fifo");
  CHECK(s.find("policy")->choices == std::vector<std::string>{"lru", "fifo"});
  CHECK(*s.find("clock")->default_text == "1.98GHz");
  CHECK(s.find("clock")->unit == "Hz");
  CHECK(s.find("clock")->type == ParamType::Frequency);
  CHECK(s.find("warps")->required());
  CHECK_FALSE(s.find("count")->required());
  CHECK(s.find("nope") == nullptr);
}
