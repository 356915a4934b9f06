// L2 slice: sectored, set-associative, write-back with write-allocate (sector writes need no fetch).
// Requests arrive from the crossbar; a hit answers after `hit_latency`; misses merge per line in MSHRs and
// fetch only the missing sectors from the HBM channel that owns the address. The slice's data port moves
// `bandwidth / (slices * l2 clock)` bytes per cycle, so aggregate L2 bandwidth is a config figure.
#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "models/gpu/build_context.h"
#include "models/mem/sector_cache.h"
#include "sim/core/flat_map.h"
#include "sim/registry/registry.h"

namespace warpsim {
namespace {

class SectoredL2Slice final : public L2Slice {
 public:
  static Schema schema() {
    Schema s("l2", "sectored", "L2 cache slices: sectored set-associative write-back cache with MSHRs");
    s.quantity("size", ParamType::Size, std::nullopt, "total L2 capacity over all slices", 1024, 4ull << 30);
    s.uint("slices", "slices", std::nullopt, "number of L2 slices; lines are hashed across them", 1, 4096);
    s.quantity("line_size", ParamType::Size, std::nullopt, "cache line size", 32, 4096);
    s.quantity("sector_size", ParamType::Size, std::nullopt, "sector size (unit of fills and of DRAM traffic)", 8, 4096);
    s.uint("assoc", "ways", std::nullopt, "associativity", 1, 1024);
    s.uint("hit_latency", "cycles", std::nullopt, "L2-clock cycles a hit spends in the slice", 1, 100000);
    s.quantity("bandwidth", ParamType::Bandwidth, std::nullopt, "aggregate L2 bandwidth over all slices", 1e6);
    s.uint("mshrs_per_slice", "lines", std::nullopt, "outstanding missed lines per slice", 1, 1 << 20);
    return s;
  }

  SectoredL2Slice(BuildContext& ctx, const Params& p, unsigned index)
      : L2Slice("gpu.l2[" + std::to_string(index) + "]", *ctx.l2_domain),
        index_(index),
        ctx_(ctx),
        in_(path() + ".in", 1, static_cast<std::size_t>(-1)),
        dram_in_(path() + ".dram_in", 1, static_cast<std::size_t>(-1)) {
    const std::uint32_t slices = p.u32("slices");
    const std::uint32_t line = p.u32("line_size"), sector = p.u32("sector_size");
    if (line % sector != 0 || line / sector > 32) p.fail("line_size", "must be a multiple of sector_size, at most 32 sectors");
    cache_ = SectorCache(p.u64("size") / slices, line, sector, p.u32("assoc"), 1);
    if (!cache_.enabled()) p.fail("size", "too small for one set of `assoc` lines per slice");
    hit_latency_ = p.u64("hit_latency");
    bytes_per_cycle_ = p.real("bandwidth") / slices / static_cast<double>(domain().frequency_hz());
    mshr_limit_ = p.u32("mshrs_per_slice");
    in_.bind(nullptr, this);
    dram_in_.bind(nullptr, this);
    StatGroup g(ctx.stats, path(), "l2");
    g.add("read_sectors", "sectors", "sectors read by SMs", read_sectors_)
        .add("read_hit_sectors", "sectors", "read sectors that hit", read_hit_sectors_)
        .add("write_sectors", "sectors", "sectors written by SMs", write_sectors_)
        .add("bytes_served", "bytes", "bytes moved through the slice data port", bytes_served_)
        .add("dram_read_bytes", "bytes", "bytes fetched from DRAM", dram_read_bytes_)
        .add("dram_write_bytes", "bytes", "dirty bytes written back to DRAM", dram_write_bytes_);
  }

  Port<MemRequest>& request_port() override { return in_; }
  Port<MemRequest>& dram_response_port() override { return dram_in_; }

  Cycle tick(Cycle now) override {
    while (dram_in_.ready()) {
      fill(dram_in_.front(), now);
      dram_in_.pop();
    }
    while (in_.ready()) {
      if (mshrs_.size() >= mshr_limit_) break;  // woken again when a fill frees an MSHR
      access(in_.front(), now);
      in_.pop();
    }
    return in_.ready() && mshrs_.size() < mshr_limit_ ? now + 1 : kSleep;
  }

  std::string describe_state() const override {
    if (mshrs_.empty() && !in_.occupancy()) return {};
    return std::to_string(mshrs_.size()) + " lines missing, " + std::to_string(in_.occupancy()) + " requests queued";
  }

 private:
  struct Waiter {
    MemRequest req;
    std::uint32_t missing;  // sectors it still waits for (cleared fill by fill; the cache is not re-read)
  };
  struct Mshr {
    std::uint32_t requested = 0;  // sectors asked from DRAM
    boost::container::small_vector<Waiter, 2> waiting;  // reads to answer on fill
  };

  std::uint32_t sectors(const MemRequest& r) const { return static_cast<std::uint32_t>(__builtin_popcount(r.sector_mask)); }

  // Reserves the data port for `bytes`; returns the cycle the transfer ends.
  double use_data_port(Cycle now, std::uint32_t bytes) {
    data_free_ = std::max(data_free_, static_cast<double>(now)) + bytes / bytes_per_cycle_;
    bytes_served_ += bytes;
    return data_free_;
  }

  void respond(const MemRequest& req, Cycle now) {
    if (req.op == MemOp::Atomic) writeback(cache_.fill(req.line_addr, req.sector_mask, /*dirty=*/true), now);
    const double done = use_data_port(now, req.bytes) + static_cast<double>(hit_latency_);
    ctx_.noc->send_response(req, domain().time_of(static_cast<Cycle>(std::ceil(done))));
  }

  // Reads and atomics (a read-modify-write done here, answered with the old data) look the line up; writes
  // allocate it dirty and are acknowledged.
  void access(const MemRequest& req, Cycle now) {
    if (req.op == MemOp::Write) {
      write_sectors_ += sectors(req);
      const double written = use_data_port(now, req.bytes) + static_cast<double>(hit_latency_);
      writeback(cache_.fill(req.line_addr, req.sector_mask, /*dirty=*/true), now);
      ctx_.noc->send_response(req, domain().time_of(static_cast<Cycle>(std::ceil(written))));  // the ack
      return;
    }
    read_sectors_ += sectors(req);
    const std::uint32_t hit = cache_.lookup(req.line_addr, req.sector_mask);
    read_hit_sectors_ += static_cast<std::uint32_t>(__builtin_popcount(hit));
    const std::uint32_t missing = req.sector_mask & ~hit;
    if (!missing) {
      respond(req, now);
      return;
    }
    Mshr& m = mshrs_.insert(req.line_addr);
    m.waiting.push_back(Waiter{req, missing});
    const std::uint32_t to_fetch = missing & ~m.requested;
    if (to_fetch) {
      m.requested |= to_fetch;
      MemRequest fetch = req;
      fetch.op = MemOp::Read;
      fetch.sector_mask = to_fetch;
      fetch.bytes = static_cast<std::uint32_t>(__builtin_popcount(to_fetch)) * cache_.sector_bytes();
      fetch.slice = static_cast<std::uint16_t>(index_);
      dram_read_bytes_ += fetch.bytes;
      dram_for(req.line_addr)->request_port().send_at(fetch, domain().now_fs(), domain().now_fs());
    }
  }

  void fill(const MemRequest& resp, Cycle now) {
    Mshr* mshr = mshrs_.find(resp.line_addr);
    if (!mshr) return;
    writeback(cache_.fill(resp.line_addr, resp.sector_mask, false), now);
    Mshr& m = *mshr;
    // Answer every waiting read whose sectors have all arrived.
    auto& w = m.waiting;
    for (Waiter& x : w) x.missing &= ~resp.sector_mask;
    auto done = std::stable_partition(w.begin(), w.end(), [](const Waiter& x) { return x.missing != 0; });
    for (auto x = done; x != w.end(); ++x) respond(x->req, now);
    w.erase(done, w.end());
    m.requested &= ~resp.sector_mask;
    if (w.empty()) {
      mshrs_.erase(resp.line_addr);
      if (in_.ready()) wake_next();
    }
  }

  void writeback(const SectorCache::Eviction& ev, Cycle) {
    if (!ev.valid || !ev.dirty_mask) return;
    MemRequest wb;
    wb.line_addr = ev.line_addr;
    wb.sector_mask = ev.dirty_mask;
    wb.bytes = static_cast<std::uint32_t>(__builtin_popcount(ev.dirty_mask)) * cache_.sector_bytes();
    wb.op = MemOp::Write;
    wb.slice = static_cast<std::uint16_t>(index_);
    dram_write_bytes_ += wb.bytes;
    dram_for(ev.line_addr)->request_port().send_at(wb, domain().now_fs(), domain().now_fs());
  }

  DramChannel* dram_for(std::uint64_t line_addr) const {
    return ctx_.dram[hash_interleave(line_addr, cache_.line_bytes(), static_cast<unsigned>(ctx_.dram.size()))];
  }

  unsigned index_;
  BuildContext& ctx_;
  Port<MemRequest> in_, dram_in_;
  SectorCache cache_;
  Cycle hit_latency_ = 1;
  double bytes_per_cycle_ = 1.0, data_free_ = 0.0;
  std::size_t mshr_limit_ = 1;
  FlatMap64<Mshr> mshrs_;  // by line address
  std::uint64_t read_sectors_ = 0, read_hit_sectors_ = 0, write_sectors_ = 0, bytes_served_ = 0,
                dram_read_bytes_ = 0, dram_write_bytes_ = 0;
};

WARPSIM_REGISTER_COMPONENT(L2Slice, SectoredL2Slice, "l2", "sectored",
                           "sectored write-back L2 slice with MSHR merging");

}  // namespace
}  // namespace warpsim
