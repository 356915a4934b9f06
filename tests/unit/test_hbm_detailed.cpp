// The detailed HBM channel (models/dram/hbm_detailed.cpp) driven alone: one A100 pseudo-channel fed request
// patterns through its bounded port, with the expected times worked out from the configured timings (JEDEC
// rounding: cycles = ceil(ns x clock)), not from the model's code.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/probe.h"
#include "sim/core/simulation.h"
#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"
#include "sim/stats/stats.h"

namespace warpsim {
namespace {

// Sends its requests into the channel's port as fast as the port takes them.
class Feeder final : public Component {
 public:
  Feeder(ClockDomain& d, Port<MemRequest>& port, std::vector<MemRequest> reqs)
      : Component("feeder", d), port_(port), reqs_(std::move(reqs)) {
    wake_at(0);
  }
  Cycle tick(Cycle) override {
    while (next_ < reqs_.size() && port_.can_send()) port_.send_at(reqs_[next_++], domain().now_fs(), domain().now_fs());
    if (next_ < reqs_.size()) port_.wait_for_space(this);
    return kSleep;
  }

 private:
  Port<MemRequest>& port_;
  std::vector<MemRequest> reqs_;
  std::size_t next_ = 0;
};

// Takes the read responses, remembering the cycle of the last one.
class Sink final : public Component {
 public:
  explicit Sink(ClockDomain& d) : Component("sink", d), in_("sink.in", 1, Port<MemRequest>::kUnbounded) {
    in_.bind(nullptr, this);
  }
  Cycle tick(Cycle now) override {
    while (in_.ready()) {
      ++responses;
      last = now;
      in_.pop();
    }
    return kSleep;
  }
  Port<MemRequest> in_;
  std::uint64_t responses = 0;
  Cycle last = 0;
};

std::string config_path(const std::string& gpu) { return std::string(WARPSIM_SOURCE_DIR) + "/configs/" + gpu + ".yaml"; }
std::string a100_path() { return config_path("a100_sxm"); }

// One pseudo-channel at its own share of the GPU's bandwidth (hbm.channels=1, hbm.bandwidth = bandwidth /
// channels); by default A100's: 2039/80 GB/s.
struct Channel {
  explicit Channel(std::vector<std::string> overrides, const std::string& gpu = "a100_sxm") {
    const Config full = Config::load(config_path(gpu), {}, Registry::instance());
    const Params& full_hbm = full.section("hbm");
    const double share = full_hbm.real("bandwidth") / full_hbm.u32("channels");
    std::vector<std::string> ov = {"hbm.channels=1", "hbm.bandwidth=" + std::to_string(share / 1e9) + "GB/s", "l2.slices=1"};
    ov.insert(ov.end(), overrides.begin(), overrides.end());
    cfg = std::make_unique<Config>(Config::load(config_path(gpu), ov, Registry::instance()));
    const Params& hbm = cfg->section("hbm");
    hz = cfg->section("clocks").real("hbm");
    sim.add_domain("hbm", hz);
    ctx = std::make_unique<BuildContext>(*cfg, sim, stats, probes);
    map = Registry::instance().create<AddressMap>("address_map", cfg->section("address_map"), *ctx, 0);
    ctx->publish<AddressMap>("address_map", {map.get()});
    channel = Registry::instance().create<DramChannel>("hbm", hbm, *ctx, 0);
    sink = std::make_unique<Sink>(ctx->domain("hbm"));
    channel->attach_slice(0, &sink->in_);
    line = cfg->section("l2").u32("line_size");
    sector = hbm.u32("access_granularity");
    groups = hbm.u32("bank_groups");
    banks = hbm.u32("banks_per_group");
    lines_per_row = hbm.u64("row_size") / line;
  }
  // HBM cycles of a timing parameter, as JEDEC rounds: ceil(t / tCK).
  std::uint64_t cycles(const std::string& key) const {
    return static_cast<std::uint64_t>(std::ceil(cfg->section("hbm").real("timing." + key) * 1e-9 * hz - 0.05));
  }
  // The request for the channel's n-th line. The address map places the line whose hash fold(line) = n there
  // (one channel: the quotient is the hash itself), so the address is the hash's inverse, found from the top
  // bits down (fold XORs each bit with higher ones only: x = n ^ (x >> 7) ^ (x >> 13) ^ (x >> 19) settles).
  MemRequest request(std::uint64_t n, MemOp op = MemOp::Read, std::uint32_t sectors = 0) const {
    std::uint64_t x = n;
    for (int i = 0; i < 64; ++i) x = n ^ (x >> 7) ^ (x >> 13) ^ (x >> 19);
    if (sectors == 0) sectors = line / sector;  // the whole line
    MemRequest r;
    r.line_addr = x * line;
    r.sector_mask = (1u << sectors) - 1;
    r.bytes = sectors * sector;
    r.op = op;
    return r;
  }
  // Runs the requests to the end; returns the HBM cycle of the last read's data at the L2.
  Cycle run(std::vector<MemRequest> reqs) {
    Feeder feeder(ctx->domain("hbm"), channel->request_port(), std::move(reqs));
    const StatSnapshot from = stats.snapshot();
    sim.run([] { return false; });
    to = stats.snapshot();
    from_ = from;
    return sink->last;
  }
  std::uint64_t stat(const std::string& name) const { return stats.sum("hbm", name, from_, to); }

  Simulation sim;
  StatsRegistry stats;
  ProbeRegistry probes;
  std::unique_ptr<Config> cfg;
  std::unique_ptr<BuildContext> ctx;
  std::unique_ptr<AddressMap> map;
  std::unique_ptr<DramChannel> channel;
  std::unique_ptr<Sink> sink;
  double hz = 0;
  std::uint32_t line = 0, sector = 0, groups = 0, banks = 0;
  std::uint64_t lines_per_row = 0;
  StatSnapshot from_, to;
};

const std::string kNoRefresh = "hbm.timing.tREFI=1000000";  // 1 ms: no refresh within these runs

TEST_CASE("hbm_detailed: a row-hit stream over the bank groups runs at the data bus's peak", "[hbm]") {
  Channel c({kNoRefresh});
  const std::uint64_t n = 4096;
  std::vector<MemRequest> reqs;
  for (std::uint64_t i = 0; i < n; ++i) reqs.push_back(c.request(i));
  const Cycle last = c.run(reqs);
  // Bus time: every 32 B sector is one BL4 burst of two HBM clocks (64-bit pseudo-channel, double data rate).
  const double bus_cycles = static_cast<double>(n * c.line / c.sector) * 4 / 2.0;
  const double fixed = static_cast<double>(c.cfg->section("hbm").u64("latency"));
  CHECK(c.sink->responses == n);
  CHECK(last >= bus_cycles);
  CHECK(last - fixed < bus_cycles * 1.03);  // first ACT and tRCD + tCL once, then back-to-back bursts
  // Consecutive lines of a channel stay in one row of each bank group's bank: one ACT per row per group; the
  // first opening of each of the channel's banks is a miss, later ones close the previous row (conflicts).
  const std::uint64_t openings = n / c.lines_per_row, bank_count = c.groups * c.banks;
  CHECK(c.stat("row_hits") == n - openings);
  CHECK(c.stat("row_misses") == bank_count);
  CHECK(c.stat("row_conflicts") == openings - bank_count);
}

TEST_CASE("hbm_detailed: requests to one bank in different rows pay a row cycle (tRAS + tRP) each", "[hbm]") {
  Channel c({kNoRefresh});
  // Lines a whole row set apart, in rows that are multiples of groups x banks: the XOR hash maps them all
  // to bank group 0, bank 0 (see xor_fold_address_map.cpp).
  const std::uint64_t row_set = c.groups * c.lines_per_row * c.banks;
  const std::uint64_t n = 200;
  std::vector<MemRequest> reqs;
  for (std::uint64_t i = 0; i < n; ++i) reqs.push_back(c.request(i * c.groups * c.banks * row_set));
  for (const MemRequest& r : reqs) {
    const DramLocation loc = c.map->dram_location(r.line_addr);
    REQUIRE(loc.bank_group == 0);
    REQUIRE(loc.bank == 0);
  }
  const Cycle last = c.run(reqs);
  // Per request: ACT, then RD x4 (tRCD, tCCD_L apart), PRE no earlier than tRAS after ACT nor tRTP after the
  // last RD, and the next ACT tRP later.
  const std::uint64_t bursts = c.line / c.sector;
  const std::uint64_t open = std::max(c.cycles("tRAS"), c.cycles("tRCD") + (bursts - 1) * c.cycles("tCCD_L") + c.cycles("tRTP"));
  const double row_cycle = static_cast<double>(open + c.cycles("tRP"));
  const double per_request = static_cast<double>(last) / n;
  CHECK(per_request > row_cycle * 0.97);
  CHECK(per_request < row_cycle * 1.03 + static_cast<double>(c.cfg->section("hbm").u64("latency")) / n);
  CHECK(c.stat("row_conflicts") == n - 1);
  CHECK(c.stat("row_misses") == 1);
}

TEST_CASE("hbm_detailed: closed-page policy precharges after every request, so nothing hits", "[hbm]") {
  Channel c({kNoRefresh, "hbm.page_policy=closed"});
  const std::uint64_t n = 2048;
  std::vector<MemRequest> reqs;
  for (std::uint64_t i = 0; i < n; ++i) reqs.push_back(c.request(i));
  c.run(reqs);
  CHECK(c.stat("row_hits") == 0);
  CHECK(c.stat("row_conflicts") == 0);
  CHECK(c.stat("row_misses") == n);
}

TEST_CASE("hbm_detailed: all-bank refresh takes about tRFC of every tREFI from a streaming channel", "[hbm]") {
  const std::uint64_t n = 32768;
  std::vector<Cycle> times;
  double refresh_share = 0;
  for (const std::string& refi : {std::string("1000000"), std::string("3900")}) {
    Channel c({"hbm.timing.tREFI=" + refi, "hbm.refresh=all_bank"});
    std::vector<MemRequest> reqs;
    for (std::uint64_t i = 0; i < n; ++i) reqs.push_back(c.request(i));
    times.push_back(c.run(reqs));
    refresh_share = static_cast<double>(c.cycles("tRFC")) / static_cast<double>(c.cycles("tREFI"));
    if (refi == "3900") CHECK(c.stat("refreshes") >= times.back() / c.cycles("tREFI") - 1);
  }
  const double lost = 1.0 - static_cast<double>(times[0]) / static_cast<double>(times[1]);
  // tRFC / tREFI, plus a little for closing and reopening the rows around each refresh (tRP, tRCD).
  CHECK(lost > refresh_share);
  CHECK(lost < refresh_share + 0.03);
}

TEST_CASE("hbm_detailed: writes wait for the high watermark, then drain to the low one", "[hbm]") {
  Channel c({kNoRefresh});
  const Params& hbm = c.cfg->section("hbm");
  const std::uint64_t high = hbm.u64("write_high_watermark"), low = hbm.u64("write_low_watermark");
  // Reads and writes alternate, reads to one region and writes to another: the write queue fills while
  // reads go first, a drain starts each time it reaches the high watermark and stops at the low one.
  const std::uint64_t pairs = 400;
  std::vector<MemRequest> reqs;
  for (std::uint64_t i = 0; i < pairs; ++i) {
    reqs.push_back(c.request(i));
    reqs.push_back(c.request((1u << 20) + i, MemOp::Write));
  }
  c.run(reqs);
  const std::uint64_t drains = c.stat("write_drains");
  // The first drain at `high` queued writes, each later one after high - low more; the writes left when the
  // reads run out drain without a watermark.
  const std::uint64_t expected = (pairs - high) / (high - low) + 1;
  CHECK(drains >= expected - 1);
  CHECK(drains <= expected + 1);
  // Each drain turns the bus around twice (to writes and back).
  CHECK(c.stat("turnarounds") >= 2 * drains - 1);
  CHECK(c.stat("turnarounds") <= 2 * drains + 2);
  CHECK(c.sink->responses == pairs);
}

TEST_CASE("hbm_detailed: queue depths, watermarks and timing names are checked", "[hbm]") {
  CHECK_THROWS_WITH(Channel({"hbm.write_low_watermark=30"}), Catch::Contains("hbm.write_low_watermark") && Catch::Contains("below write_high_watermark"));
  CHECK_THROWS_WITH(Channel({"hbm.write_high_watermark=40"}), Catch::Contains("must not exceed write_queue_depth"));
  CHECK_THROWS_WITH(Channel({"hbm.latency=10"}), Catch::Contains("hbm.latency") && Catch::Contains("tRCD + tCL + burst"));
  CHECK_THROWS_WITH(Channel({"hbm.bank_groups=6"}), Catch::Contains("hbm.bank_groups") && Catch::Contains("power of two"));
  CHECK_THROWS_WITH(Channel({"hbm.stack_ids=3"}), Catch::Contains("hbm.stack_ids") && Catch::Contains("divide hbm.bank_groups"));
}

TEST_CASE("xor_fold gives every line its own DRAM location, also for a channel count that is not a power of two", "[hbm]") {
  // H100's 160 and A100's 80 pseudo-channels: lines a channel owns must fill its banks, rows and columns without
  // two lines landing on one location (which line / channels did for 18.6% of H100's lines).
  for (const unsigned channels : {160u, 80u, 192u}) {
    Simulation sim;
    StatsRegistry stats;
    ProbeRegistry probes;
    const Config cfg = Config::load(a100_path(), {"hbm.channels=" + std::to_string(channels)}, Registry::instance());
    BuildContext ctx(cfg, sim, stats, probes);
    const auto map = Registry::instance().create<AddressMap>("address_map", cfg.section("address_map"), ctx, 0);
    const std::uint64_t line = cfg.section("l2").u32("line_size");
    std::set<std::tuple<unsigned, unsigned, unsigned, std::uint64_t, std::uint32_t>> seen;
    const std::uint64_t lines = 64ull * channels * 64;  // 64 row sets' worth per channel
    for (std::uint64_t i = 0; i < lines; ++i) {
      const DramLocation loc = map->dram_location(i * line);
      seen.insert({loc.channel, loc.bank_group, loc.bank, loc.row, loc.column});
    }
    CHECK(seen.size() == lines);
  }
}

// `count` requests, each to a row its bank has not had before, rotating over the bank groups `groups` (every
// bank of each in turn): every request needs an ACT, and no two ACTs in a row share a bank group.
std::vector<MemRequest> new_row_requests(const Channel& c, std::vector<unsigned> groups, std::size_t count,
                                         MemOp op = MemOp::Read, std::uint32_t sectors = 0) {
  std::map<std::pair<unsigned, unsigned>, std::vector<std::uint64_t>> rows_of_bank;  // (group, bank) -> channel lines
  std::map<std::pair<unsigned, unsigned>, std::set<std::uint64_t>> seen;
  const std::size_t per_bank = count / (groups.size() * c.banks) + 1;
  for (std::uint64_t n = 0; n < per_bank * c.groups * c.banks * c.lines_per_row * 4; ++n) {
    const DramLocation loc = c.map->dram_location(c.request(n).line_addr);
    if (seen[{loc.bank_group, loc.bank}].insert(loc.row).second) rows_of_bank[{loc.bank_group, loc.bank}].push_back(n);
  }
  std::vector<MemRequest> reqs;
  for (std::size_t i = 0; reqs.size() < count; ++i) {
    const unsigned group = groups[i % groups.size()], bank = static_cast<unsigned>(i / groups.size()) % c.banks;
    const std::size_t nth = i / (groups.size() * c.banks);
    const auto& lines = rows_of_bank[{group, bank}];
    REQUIRE(nth < lines.size());
    reqs.push_back(c.request(lines[nth], op, sectors));
  }
  return reqs;
}

TEST_CASE("hbm_detailed: tFAW and tRRD_S hold per stack ID: activates spread over two dies run twice as often", "[hbm]") {
  // H100's HBM3 pseudo-channel: a 128 B line is four BL8 bursts (16 HBM clocks of data), and tFAW (30 ns = 79
  // clocks at 2.619 GHz) allows four ACTs per window, one per ~19.6 clocks: line-sized row misses in one die are
  // activate-bound. With the bank groups split over two stack IDs, each die has its own window: the data bus binds.
  const std::size_t n = 2000;
  std::vector<double> per_request;
  double faw_quarter = 0, bus = 0;
  for (const std::string stacks : {"1", "2"}) {
    Channel c({kNoRefresh, "hbm.stack_ids=" + stacks}, "h100_sxm");
    std::vector<unsigned> groups(c.groups);
    for (unsigned g = 0; g < c.groups; ++g) groups[g] = (g % 2) * (c.groups / 2) + g / 2;  // alternate the halves
    const Cycle last = c.run(new_row_requests(c, groups, n));
    CHECK(c.stat("row_hits") == 0);
    per_request.push_back(static_cast<double>(last) / n);
    faw_quarter = static_cast<double>(c.cycles("tFAW")) / 4;
    bus = static_cast<double>(c.line / c.sector) * c.cfg->section("hbm").u32("burst_length") / 2.0;
  }
  REQUIRE(faw_quarter > bus * 1.1);  // the premise: one window is slower than the bus
  CHECK(per_request[0] > faw_quarter * 0.98);
  CHECK(per_request[0] < faw_quarter * 1.05);
  CHECK(per_request[1] > bus * 0.98);
  CHECK(per_request[1] < bus * 1.05);
}

}  // namespace
}  // namespace warpsim
