// L2 slice: sectored, set-associative, write-back with write-allocate (sector writes need no fetch).
// Requests arrive from the crossbar; a hit answers after `hit_latency`; misses merge per line in MSHRs and
// fetch only the missing sectors from the DRAM channel the address map names. The slice's data port moves
// `bandwidth / (slices * l2 clock)` bytes per cycle, so aggregate L2 bandwidth is a config figure. A DRAM
// channel whose queue is full pushes back: requests for it wait here, in order, until it has room.
// With l2.partitions > 1 the slices split into equal partitions (consecutive indices) and a slice also keeps clean
// copies of lines homed in another partition for the SMs of its own (models/noc/hierarchical.cpp routes their
// reads here): a copy miss asks the home slice over the partition link instead of DRAM, and the answer fills the
// copy and goes on to the SMs through this slice's pipeline (the home slice sends it without its own, see
// respond()), so a far hit costs a near hit plus the link's round trip. Writes and atomics to such lines pass
// through to the home slice (the point of coherence), invalidating the copy. The home slice remembers which
// partitions it gave a line's copy to (for the lines it holds: it is inclusive of them) and sends those an
// invalidation over the fabric when the line is written or atomically updated (by any SM: a copy must not hit
// stale data after a write from the home's own partition) and when it evicts the line. All fabric traffic thus starts in an
// L2 slice: the link is reserved from one clock domain only, whatever order the domains run in. Copies share the slice's
// capacity with the lines homed here, so one SM's reads see half the L2 at near-hit latency (the plateaus of
// a100_80.lat.l2.gb / a100_80.lat.l2far.gb).
#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <deque>

#include "models/mem/sector_cache.h"
#include "models/noc/l2_partitions.h"
#include "sim/core/flat_map.h"
#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"

namespace warpsim {
namespace {

class SectoredL2Slice final : public L2Slice {
 public:
  static Schema schema() {
    Schema s("l2", "sectored", "L2 cache slices: sectored set-associative write-back cache with MSHRs");
    s.uint("assoc", "ways", std::nullopt, "associativity", 1, 1024);
    s.uint("hit_latency", "cycles", std::nullopt, "L2-clock cycles a hit spends in the slice", 1, 100000);
    s.uint("mshrs_per_slice", "lines", std::nullopt, "outstanding missed lines per slice", 1, 1 << 20);
    s.uint("partitions", "partitions", 1u, "L2 partitions; slices split into equal groups, each line homed in one, the others keep copies for their SMs", 1, 64);
    return s;
  }

  static std::uint64_t estimate_bytes(const Params& p, const Config&) {
    return SectorCache::footprint_bytes(p.u64("size") / p.u32("slices"), p.u32("line_size"));
  }

  SectoredL2Slice(BuildContext& ctx, const Params& p, unsigned index)
      : L2Slice(ctx, index),
        noc_(ctx.get<Interconnect>("noc")),
        address_map_(ctx.get<AddressMap>("address_map")),
        dram_(ctx.all<DramChannel>("hbm")),
        backlog_(dram_.size()),
        // The crossbar times its deliveries by port reservations and the SMs' MSHRs bound what is in flight.
        in_(path() + ".in", 1, Port<MemRequest>::kUnbounded),
        // At most mshrs_per_slice lines are outstanding, each answered at most once per sector.
        dram_in_(path() + ".dram_in", 1, Port<MemRequest>::kUnbounded),
        // Its own port: a port delivers in the order messages were sent, and DRAM answers are sent hundreds of
        // cycles ahead of their arrival, SM requests tens: the fabric's must not wait behind them. Bounded by the
        // MSHRs of the slices that send to it.
        fabric_in_(path() + ".fabric_in", 1, Port<MemRequest>::kUnbounded) {
    const std::uint32_t slices = p.u32("slices");
    const std::uint32_t line = p.u32("line_size"), sector = p.u32("sector_size");
    if (line % sector != 0 || line / sector > 32) p.fail("line_size", "must be a multiple of sector_size, at most 32 sectors");
    // Sets indexed by the address map's slice hash over the slice count: a footprint of any size fills every
    // slice's sets evenly (a 36 MiB chase fits a 40 MiB L2, as measured: a100_80.lat.l2far.gb's plateau).
    cache_ = SectorCache(p.u64("size") / slices, line, sector, p.u32("assoc"), slices);
    if (!cache_.enabled()) p.fail("size", "too small for one set of `assoc` lines per slice");
    cache_.key_sets_by([this, line, slices](std::uint64_t a) { return address_map_.slice_set_key(a, line, slices); });
    hit_latency_ = p.u64("hit_latency");
    bytes_per_cycle_ = p.real("bandwidth") / slices / static_cast<double>(domain().frequency_hz());
    mshr_limit_ = p.u32("mshrs_per_slice");
    if (p.u32("partitions") > slices) p.fail("partitions", "more partitions than slices (l2.slices)");
    partitions_ = L2Partitions{slices, p.u32("partitions")};
    in_.bind(nullptr, this);
    dram_in_.bind(nullptr, this);
    fabric_in_.bind(nullptr, this);
    in_.add_probes(ctx.probes);
    StatGroup(ctx.stats, path(), "l2")
        .add("dram_backpressure_waits", "requests", "DRAM requests that found their channel's queue full and waited in the slice", backpressure_waits_)
        .add("copy_invalidations", "lines", "copies of far-homed lines dropped because their home slice's line was written or evicted", copy_invalidations_);
  }

  Port<MemRequest>& request_port() override { return in_; }
  Port<MemRequest>& dram_response_port() override { return dram_in_; }
  Port<MemRequest>& fabric_port() override { return fabric_in_; }

  Cycle tick(Cycle now) override {
    if (backlogged_) drain_backlog();
    while (dram_in_.ready()) {
      fill(dram_in_.front(), now);
      dram_in_.pop();
    }
    // The L2 fabric: answers to this slice's copy misses, and other partitions' slices asking for lines homed here.
    // Answers are taken at once, whatever the MSHRs: they are what frees them (queued behind a request that waits
    // for an MSHR, they would deadlock a slice whose MSHRs are all copy misses). Requests wait in their own queue.
    while (fabric_in_.ready()) {
      const MemRequest& m = fabric_in_.front();
      if (m.copy_slice != index()) {
        fabric_requests_.push_back(m);
      } else if (m.op == MemOp::Invalidate) {  // the home slice's line was written or evicted: drop the copy
        cache_.invalidate(m.line_addr, m.sector_mask);
        ++copy_invalidations_;
      } else if (m.op == MemOp::Read) {
        fill(m, now);
      } else {  // the home slice's acknowledgement of a write or atomic: on to the SM
        MemRequest ack = m;
        ack.copy_slice = MemRequest::kNoSlice;
        ack.slice = static_cast<std::uint16_t>(index());
        noc_.send_response(ack, domain().time_of(now));
      }
      fabric_in_.pop();
    }
    while (!fabric_requests_.empty()) {
      if (mshrs_.size() >= mshr_limit_ || backlogged_ >= mshr_limit_) break;  // as for the SMs' requests below
      access(fabric_requests_.front(), now);
      fabric_requests_.pop_front();
    }
    while (in_.ready()) {
      if (mshrs_.size() >= mshr_limit_) break;  // woken again when a fill frees an MSHR
      // Requests waiting for full DRAM queues (misses and write-backs alike) hold miss-handling entries: with
      // mshrs_per_slice of them waiting, no new request is taken until one leaves (woken by
      // Port::wait_for_space), so a DRAM that cannot keep up with write-backs pushes back on the SMs.
      if (backlogged_ >= mshr_limit_) break;
      access(in_.front(), now);
      in_.pop();
    }
    counters_.dirty_bytes = cache_.dirty_sectors() * cache_.sector_bytes();  // every cache change happens in a tick
    return (in_.ready() || !fabric_requests_.empty()) && mshrs_.size() < mshr_limit_ && backlogged_ < mshr_limit_ ? now + 1 : kSleep;
  }

  std::string describe_state() const override {
    if (mshrs_.empty() && !in_.occupancy() && !backlogged_ && fabric_requests_.empty() && !fabric_in_.occupancy()) return {};
    return std::to_string(mshrs_.size()) + " lines missing, " + std::to_string(in_.occupancy()) + " requests queued, " +
           std::to_string(fabric_requests_.size() + fabric_in_.occupancy()) + " from the L2 fabric, " +
           std::to_string(backlogged_) + " waiting for a full DRAM queue";
  }

 private:
  struct Waiter {
    MemRequest req;
    std::uint32_t missing;  // sectors it still waits for (cleared fill by fill; the cache is not re-read)
  };
  struct Mshr {
    std::uint32_t requested = 0;  // sectors asked from DRAM
    EvictPriority priority = EvictPriority::Normal;  // the latest missing access's: the line's when it is filled
    boost::container::small_vector<Waiter, 4> waiting;  // reads to answer on fill
  };

  std::uint32_t sectors(const MemRequest& r) const { return static_cast<std::uint32_t>(__builtin_popcount(r.sector_mask)); }

  // Reserves the data port for `bytes`; returns the cycle the transfer ends.
  double use_data_port(Cycle now, std::uint32_t bytes) {
    data_free_ = std::max(data_free_, static_cast<double>(now)) + bytes / bytes_per_cycle_;
    counters_.bytes_served += bytes;
    return data_free_;
  }

  // The data leave after this slice's tag and data pipeline (hit_latency), except towards a copy slice: the home
  // slice sends a line over the fabric as soon as its data port has read it, and the copy slice's pipeline takes
  // the hit latency once, on the way to the SM (so a far hit costs a near hit plus the link's round trip, and
  // every answer of a slice to the SMs leaves hit_latency after its data port: in the order it is sent).
  void respond(const MemRequest& req, Cycle now) {
    if (req.op == MemOp::Atomic)
      writeback(cache_.fill(req.line_addr, req.sector_mask, /*dirty=*/true, req.priority), now);
    const bool to_copy_slice = req.copy_slice != MemRequest::kNoSlice && req.op == MemOp::Read;
    const double done = use_data_port(now, req.bytes) + (to_copy_slice ? 0.0 : static_cast<double>(hit_latency_));
    noc_.send_response(req, domain().time_of(static_cast<Cycle>(std::ceil(done))));
  }

  // Reads and atomics (a read-modify-write done here, answered with the old data) look the line up; writes
  // allocate it dirty and are acknowledged.
  void access(const MemRequest& req, Cycle now) {
    // A write or atomic to a line homed in another partition goes on to its home (the point of coherence); the
    // copy here, if any, is stale from now on.
    if (req.op != MemOp::Read && is_copy_lookup(req)) {
      cache_.invalidate(req.line_addr, req.sector_mask);
      MemRequest to_home = req;
      to_home.copy_slice = static_cast<std::uint16_t>(index());
      to_home.slice = static_cast<std::uint16_t>(address_map_.slice_of(req.line_addr));
      noc_.send_request(to_home, domain().time_of(now));
      return;
    }
    if (req.op != MemOp::Read) invalidate_copies(req.line_addr, req.copy_slice);
    if (req.op == MemOp::Write) {
      counters_.write_sectors += sectors(req);
      notify_access(req, req.sector_mask, now);
      const double written = use_data_port(now, req.bytes) + static_cast<double>(hit_latency_);
      writeback(cache_.fill(req.line_addr, req.sector_mask, /*dirty=*/true, req.priority), now);
      noc_.send_response(req, domain().time_of(static_cast<Cycle>(std::ceil(written))));  // the ack
      return;
    }
    if (req.op == MemOp::Read && req.copy_slice != MemRequest::kNoSlice)  // a copy slice fetches the line: it keeps a copy
      copies_.insert(req.line_addr) |= std::uint64_t{1} << partitions_.of(req.copy_slice);
    counters_.read_sectors += sectors(req);  // atomics too: they read the line
    if (req.op == MemOp::Atomic) counters_.atomic_sectors += sectors(req);
    const std::uint32_t hit = cache_.lookup(req.line_addr, req.sector_mask, req.priority);
    const std::uint32_t missing = req.sector_mask & ~hit;
    if (!missing) {
      count_read_hits(req, hit, 0, now);
      respond(req, now);
      return;
    }
    Mshr& m = mshrs_.insert(req.line_addr);
    m.priority = req.priority;
    count_read_hits(req, hit, missing & m.requested, now);  // sectors an earlier miss already asked DRAM for
    m.waiting.push_back(Waiter{req, missing});
    const std::uint32_t to_fetch = missing & ~m.requested;
    if (to_fetch) {
      m.requested |= to_fetch;
      MemRequest fetch = req;
      fetch.op = MemOp::Read;
      fetch.sector_mask = to_fetch;
      fetch.bytes = static_cast<std::uint32_t>(__builtin_popcount(to_fetch)) * cache_.sector_bytes();
      if (is_copy_lookup(req)) {  // ask the line's home slice, in the other partition
        fetch.copy_slice = static_cast<std::uint16_t>(index());
        fetch.slice = static_cast<std::uint16_t>(address_map_.slice_of(req.line_addr));
        noc_.send_request(fetch, domain().time_of(now));
        return;
      }
      fetch.slice = static_cast<std::uint16_t>(index());
      counters_.dram_read_bytes += fetch.bytes;
      send_to_dram(fetch);
    }
  }

  void count_read_hits(const MemRequest& req, std::uint32_t hit, std::uint32_t in_flight, Cycle now) {
    counters_.read_hit_sectors += static_cast<std::uint32_t>(__builtin_popcount(hit | in_flight));
    counters_.read_inflight_hit_sectors += static_cast<std::uint32_t>(__builtin_popcount(in_flight));
    notify_access(req, hit | in_flight, now);
  }

  // A read that arrived here for a line homed in another partition (its copy), not a home slice's request.
  bool is_copy_lookup(const MemRequest& req) const {
    return partitions_.partitions > 1 && req.copy_slice == MemRequest::kNoSlice &&
           partitions_.of(address_map_.slice_of(req.line_addr)) != partitions_.of(index());
  }

  void fill(const MemRequest& resp, Cycle now) {
    Mshr* mshr = mshrs_.find(resp.line_addr);
    if (!mshr) return;
    writeback(cache_.fill(resp.line_addr, resp.sector_mask, false, mshr->priority), now);
    Mshr& m = *mshr;
    // Answer every waiting read whose sectors have all arrived.
    auto& w = m.waiting;
    // In arrival order; those still missing sectors keep theirs (no temporary buffer, as a stable partition takes).
    std::size_t kept = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i].missing &= ~resp.sector_mask;
      if (w[i].missing == 0) respond(w[i].req, now);
      else if (kept++ != i) w[kept - 1] = w[i];
    }
    w.erase(w.begin() + static_cast<std::ptrdiff_t>(kept), w.end());
    m.requested &= ~resp.sector_mask;
    if (w.empty()) {
      mshrs_.erase(resp.line_addr);
      if (in_.ready() || !fabric_requests_.empty()) wake_next();
    }
  }

  // Tells every partition that holds a copy of the line (but `except`, a copy slice that dropped its copy itself)
  // to drop it, and forgets them.
  void invalidate_copies(std::uint64_t line_addr, std::uint16_t except) {
    std::uint64_t* holders = copies_.find(line_addr);
    if (!holders) return;
    const std::uint64_t mask = *holders;
    copies_.erase(line_addr);
    for (unsigned part = 0; part < partitions_.partitions; ++part) {
      if (!(mask >> part & 1)) continue;
      const unsigned copy = partitions_.copy_slice(index(), part);
      if (copy == except) continue;
      MemRequest inv;
      inv.line_addr = line_addr;
      inv.sector_mask = (std::uint32_t{1} << (cache_.line_bytes() / cache_.sector_bytes())) - 1;
      inv.op = MemOp::Invalidate;
      inv.slice = static_cast<std::uint16_t>(index());
      inv.copy_slice = static_cast<std::uint16_t>(copy);
      noc_.send_response(inv, domain().now_fs());
    }
  }

  void writeback(const SectorCache::Eviction& ev, Cycle) {
    if (ev.valid) invalidate_copies(ev.line_addr, MemRequest::kNoSlice);  // inclusive of the copies it gave out
    if (!ev.valid || !ev.dirty_mask) return;
    MemRequest wb;
    wb.line_addr = ev.line_addr;
    wb.sector_mask = ev.dirty_mask;
    wb.bytes = static_cast<std::uint32_t>(__builtin_popcount(ev.dirty_mask)) * cache_.sector_bytes();
    wb.op = MemOp::Write;
    wb.slice = static_cast<std::uint16_t>(index());
    counters_.dram_write_bytes += wb.bytes;
    send_to_dram(wb);
  }

  // Sends now if the channel's queue has room and nothing for it is waiting; else waits in this slice, in order.
  void send_to_dram(const MemRequest& req) {
    const unsigned ch = address_map_.dram_location(req.line_addr).channel;
    Port<MemRequest>& port = dram_[ch]->request_port();
    std::deque<MemRequest>& waiting = backlog_[ch];
    if (waiting.empty() && port.can_send()) {
      port.send_at(req, domain().now_fs(), domain().now_fs());
      return;
    }
    waiting.push_back(req);
    ++backlogged_;
    ++backpressure_waits_;
    port.wait_for_space(this);
  }

  void drain_backlog() {
    for (std::size_t ch = 0; ch < backlog_.size(); ++ch) {
      std::deque<MemRequest>& waiting = backlog_[ch];
      Port<MemRequest>& port = dram_[ch]->request_port();
      while (!waiting.empty() && port.can_send()) {
        port.send_at(waiting.front(), domain().now_fs(), domain().now_fs());
        waiting.pop_front();
        --backlogged_;
      }
      if (!waiting.empty()) port.wait_for_space(this);
    }
  }

  Interconnect& noc_;
  const AddressMap& address_map_;
  const std::vector<DramChannel*>& dram_;
  std::vector<std::deque<MemRequest>> backlog_;  // per DRAM channel: requests waiting for room in its queue
  std::size_t backlogged_ = 0;
  std::uint64_t backpressure_waits_ = 0;
  Port<MemRequest> in_, dram_in_, fabric_in_;
  std::deque<MemRequest> fabric_requests_;  // other partitions' requests for lines homed here, waiting for an MSHR
  SectorCache cache_;
  Cycle hit_latency_ = 1;
  double bytes_per_cycle_ = 1.0, data_free_ = 0.0;
  std::size_t mshr_limit_ = 1;
  L2Partitions partitions_;
  FlatMap64<Mshr> mshrs_;  // by line address
  FlatMap64<std::uint64_t> copies_;  // by line address, of lines this home slice holds: partitions with a copy
  std::uint64_t copy_invalidations_ = 0;
};

WARPSIM_REGISTER_COMPONENT(L2Slice, SectoredL2Slice, "l2", "sectored",
                           "sectored write-back L2 slice with MSHR merging");

}  // namespace
}  // namespace warpsim
