// Hopper's Tensor Memory Accelerator (implementation `tma` of slot `async_copy`, one per SM, at the seam beside
// the LSU: sim/slots/async_copy.h). It takes UTMALDG (cp.async.bulk.tensor / cp.async.bulk global -> shared):
// one thread hands it a box of `rows` rows of `row_bytes` at a row pitch; after a setup latency the unit walks the
// box into line requests at its own issue rate (bytes per cycle) with at most `max_outstanding` lines in flight,
// sends them through the interconnect to L2 (bypassing L1, as TMA does), and when the last line has landed in
// shared memory it completes the instruction and adds the box's bytes to the mbarrier the copy names
// (complete_tx::bytes), which wakes the warps waiting on that mbarrier's phase.
// Throughput: the request generator works on one copy at a time and is held `copy_cycles` per copy besides its
// bytes at the issue rate (measured: one SM's 4 KiB copies move 15.2 B/clk whatever the bytes in flight), off the
// copy's own latency path (the next copy waits, this one does not).
// Multicast (cp.async.bulk.tensor .multicast::cluster, WarpInst::cluster_cta_mask()): the lines are read from L2
// once and written into the shared memory of every CTA of the issuing CTA's cluster in the mask; each
// destination's mbarrier of the same id gets the box's bytes (the other CTAs' through the cluster directory).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "models/sm/memory/coalescer.h"
#include "sim/core/ring_queue.h"
#include "sim/registry/registry.h"
#include "sim/slots/async_copy.h"
#include "sim/slots/build_context.h"
#include "sim/slots/cluster.h"
#include "sim/slots/memory.h"
#include "sim/slots/sm.h"

namespace warpsim {
namespace {

class TmaEngine final : public AsyncCopyEngine {
 public:
  static Schema schema() {
    Schema s("async_copy", "tma", "Tensor Memory Accelerator: box copies global -> shared, completed on mbarriers");
    s.uint("issue_bytes_per_cycle", "B/cycle", 0,
           "bytes of line requests the unit generates per SM cycle (0 = this GPU has no TMA: UTMALDG is an error)", 0, 4096);
    s.uint("max_outstanding", "lines", 0, "line requests of the unit in flight to L2 at once", 0, 65536);
    s.uint("copy_cycles", "cycles", 0,
           "cycles the request generator spends per copy besides its bytes at issue_bytes_per_cycle (descriptor and "
           "box bookkeeping); the next copy's lines wait for it, the copy's own do not", 0, 100000);
    s.uint("latency", "cycles", 0,
           "cycles from the UTMALDG's issue to its first line request (descriptor, address generation), on top of "
           "the L2 round trip and the L1TEX data path into shared memory", 0, 100000);
    return s;
  }

  static std::uint64_t estimate_bytes(const Params&, const Config&) { return sizeof(TmaEngine); }

  TmaEngine(BuildContext& ctx, const Params& p, unsigned index)
      : ctx_(ctx),
        sm_(index),
        domain_(ctx.domain("sm")),
        noc_(ctx.get<Interconnect>("noc")),
        address_map_(ctx.get<AddressMap>("address_map")),
        bytes_per_cycle_(static_cast<double>(p.u64("issue_bytes_per_cycle"))),
        max_outstanding_(p.u32("max_outstanding")),
        latency_(p.u64("latency")),
        copy_cycles_(static_cast<double>(p.u64("copy_cycles"))) {
    const Params& l1 = ctx.config.section("l1");
    line_bytes_ = l1.u32("line_size");
    sector_bytes_ = l1.u32("sector_size");
    l1_latency_ = l1.u64("hit_latency");
    const Params& smem = ctx.config.section("smem");
    smem_row_bytes_ = smem.u32("banks") * smem.u32("bank_bytes");
    StatGroup g(ctx.stats, "sm[" + std::to_string(index) + "].tma", "tma");
    g.add("copies", "copies", "UTMALDG box copies completed", copies_)
        .add("bytes", "bytes", "bytes the TMA unit copied into shared memory", bytes_)
        .add("requests", "requests", "line requests the TMA unit sent to L2", requests_)
        .add("smem_wavefronts", "wavefronts",
             "shared-memory wavefronts of the copies' writes: each box row in pieces of one bank row (smem.banks x "
             "smem.bank_bytes), conflict-free as a swizzled box is (the trace carries no swizzle mode); counted, not "
             "charged to the LSU's shared-memory data path", smem_wavefronts_)
        .add("multicast_copies", "copies", "UTMALDG copies multicast to more than one CTA of a cluster", multicast_copies_)
        .add("multicast_bytes_saved", "bytes",
             "bytes written into other CTAs' shared memory by multicast copies: L2 reads the cluster did not make",
             multicast_bytes_saved_)
        .add("busy_cycles", "cycles", "cycles the unit had at least one copy in progress", busy_cycles_)
        .add("issue_cycles", "cycles",
             "cycles of the unit's request generation (bytes / issue_bytes_per_cycle + copy_cycles per copy)",
             issue_cycles_);
    const double hz = static_cast<double>(domain_.frequency_hz());
    g.utilization("utilization", "issue_cycles", hz, "request-generation cycles of the TMA unit against SM cycles");
  }

  bool handles(const WarpInst& in) const override { return in.op == Opcode::UTMALDG; }

  void start(const WarpInst& in, std::uint32_t record, std::uint32_t warp_slot, Cycle now,
             AsyncCopyCompletions& done) override {
    done_ = &done;
    if (in.active_mask == 0) {  // predicated off: nothing copied, no transaction bytes
      done.copy_done(record, now + 1);
      return;
    }
    const std::uint64_t box_bytes = std::uint64_t{in.aux} * static_cast<std::uint64_t>(in.group_stride);
    if (bytes_per_cycle_ <= 0 || max_outstanding_ == 0) {
      ctx_.fail("a UTMALDG (TMA copy) was issued, but this GPU's async_copy.issue_bytes_per_cycle or "
                "async_copy.max_outstanding is 0: it has no TMA unit");
      done.copy_done(record, now + 1);
      return;
    }
    std::uint32_t slot = 0;
    while (slot < copies_in_flight_.size() && copies_in_flight_[slot].active) ++slot;
    if (slot == copies_in_flight_.size()) copies_in_flight_.emplace_back();
    Copy& c = copies_in_flight_[slot];
    c = Copy{};
    c.active = true;
    c.record = record;
    c.warp = warp_slot;
    c.mbarrier = in.group;
    c.bytes = static_cast<std::uint32_t>(box_bytes);
    c.cluster_mask = in.cluster_cta_mask();
    if (c.cluster_mask) c.cta = done.cta_of(warp_slot);
    c.smem_wavefronts = in.aux * ((static_cast<std::uint64_t>(in.group_stride) + smem_row_bytes_ - 1) / smem_row_bytes_);
    // The box's rows, each cut into line-aligned pieces with the sectors they touch.
    for (std::uint32_t r = 0; r < in.aux; ++r) {
      std::uint64_t addr = in.base + std::uint64_t{r} * static_cast<std::uint64_t>(in.stride);
      std::uint64_t left = static_cast<std::uint64_t>(in.group_stride);
      while (left) {
        const std::uint64_t line = addr / line_bytes_ * line_bytes_;
        const std::uint64_t end = std::min<std::uint64_t>(line + line_bytes_, addr + left);
        std::uint32_t mask = 0;
        for (std::uint64_t s = (addr - line) / sector_bytes_; s * sector_bytes_ < end - line; ++s) mask |= 1u << s;
        pending_.push_back(Line{line, mask, slot, now + latency_, false});
        ++c.lines_left;
        left -= end - addr;
        addr = end;
      }
    }
    pending_.back().last_of_copy = true;
    if (active_copies_++ == 0) busy_since_ = now;
    pump(now);
  }

  bool receive_response(const MemRequest& resp, Cycle now) override {
    if (!(resp.id & kTag)) return false;
    Copy& c = copies_in_flight_[resp.id & ~kTag];
    // A line held back by the max_outstanding limit is generated from now on at the earliest.
    if (outstanding_-- == max_outstanding_ && !pending_.empty()) next_issue_ = std::max(next_issue_, static_cast<double>(now));
    if (--c.lines_left == 0) {
      // The data passes the L1TEX data path into shared memory, as an L1-bypassing cp.async line does.
      const Cycle at = now + l1_latency_;
      bytes_ += c.bytes;
      smem_wavefronts_ += c.smem_wavefronts;
      ++copies_;
      if (c.cluster_mask)
        deliver_multicast(c, at);
      else
        done_->transaction_bytes(c.warp, c.mbarrier, c.bytes, at);
      done_->copy_done(c.record, at);
      c.active = false;
      if (--active_copies_ == 0) busy_cycles_ += at - busy_since_;
    }
    pump(now);
    return true;
  }

  Cycle next_event() const override {
    if (pending_.empty() || outstanding_ >= max_outstanding_) return kSleep;  // a response calls pump()
    return static_cast<Cycle>(std::ceil(send_time(pending_.front())));
  }

  void advance(Cycle now) override { pump(now); }

 private:
  static constexpr std::uint32_t kTag = 0x80000000u;  // request ids of the unit (the LSU's are record numbers)
  struct Copy {
    bool active = false;
    std::uint32_t record = 0, warp = 0, mbarrier = 0, bytes = 0, lines_left = 0;
    std::uint32_t cluster_mask = 0;  // multicast: destination ranks in the issuing CTA's cluster (0: own CTA)
    std::uint64_t cta = 0;           // multicast: the issuing CTA's id
    std::uint64_t smem_wavefronts = 0;
  };
  struct Line {
    std::uint64_t addr;
    std::uint32_t sectors, copy;
    Cycle ready;  // its copy's issue + setup latency
    bool last_of_copy;  // the generator then spends copy_cycles before the next copy's lines
  };

  static std::string fmt_hex(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%x", v);
    return buf;
  }

  // A multicast copy's data lands in the shared memory of every CTA in its mask at `at`; each CTA's mbarrier
  // of the copy's id gets the box's bytes. The data crosses to the other SMs inside the GPC (the cluster's CTAs
  // share it), a path with no latency or bandwidth of its own in this model.
  void deliver_multicast(const Copy& c, Cycle at) {
    if (!clusters_) clusters_ = &ctx_.get<ClusterDirectory>("clusters");
    const KernelInfo& k = clusters_->kernel();
    if (c.cluster_mask >> k.cluster.count()) {
      ctx_.fail("kernel '" + k.name + "', CTA " + std::to_string(c.cta) + ": a multicast UTMALDG's CTA mask 0x" +
                fmt_hex(c.cluster_mask) + " names ranks beyond its cluster of " + std::to_string(k.cluster.count()) +
                " CTAs");
      return;
    }
    std::uint32_t destinations = 0;
    for (std::uint32_t rank = 0; rank < k.cluster.count(); ++rank) {
      if (!(c.cluster_mask >> rank & 1u)) continue;
      const std::uint64_t peer = cluster_peer(k, c.cta, rank);
      ++destinations;
      if (peer == c.cta) {
        done_->transaction_bytes(c.warp, c.mbarrier, c.bytes, at);
        continue;
      }
      StreamingMultiprocessor* sm = clusters_->sm_of_cta(peer);
      if (!sm) {
        ctx_.fail("kernel '" + k.name + "', CTA " + std::to_string(c.cta) + ": a multicast UTMALDG names CTA " +
                  std::to_string(peer) + " of its cluster, which is not running");
        return;
      }
      sm->cluster_transaction_bytes(peer, c.mbarrier, c.bytes, at);
      multicast_bytes_saved_ += c.bytes;
    }
    if (destinations > 1) ++multicast_copies_;
  }

  // When the unit generates line `l` if nothing else holds it: after the previous line at the issue rate and
  // after its copy's setup (copies overlap their setup with the lines of earlier ones).
  double send_time(const Line& l) const { return std::max(next_issue_, static_cast<double>(l.ready)); }

  // Sends, in order, the line requests due by `now` while fewer than max_outstanding are in flight; the rest
  // wait for next_event() (their send time) or for a response (a free slot). A request is sent at its own
  // cycle, not ahead of it: a future stamp would reserve the SM's NoC port before the LSU's requests.
  void pump(Cycle now) {
    while (!pending_.empty() && outstanding_ < max_outstanding_) {
      const Line l = pending_.front();
      const double t = send_time(l);
      if (static_cast<Cycle>(std::ceil(t)) > now) break;
      pending_.pop_front();
      const std::uint32_t bytes = static_cast<std::uint32_t>(__builtin_popcount(l.sectors)) * sector_bytes_;
      const double busy = bytes / bytes_per_cycle_ + (l.last_of_copy ? copy_cycles_ : 0.0);
      next_issue_ = t + busy;
      issue_time_ += busy;
      issue_cycles_ = static_cast<std::uint64_t>(issue_time_);
      MemRequest req;
      req.line_addr = l.addr;
      req.sector_mask = l.sectors;
      req.bytes = bytes;
      req.op = MemOp::Read;
      req.sm = static_cast<std::uint16_t>(sm_);
      req.id = kTag | l.copy;
      req.slice = static_cast<std::uint16_t>(address_map_.slice_of(l.addr));
      ++outstanding_;
      ++requests_;
      noc_.send_request(req, domain_.time_of(now));  // t <= now: sent at the cycle it is due (woken then)
    }
  }

  BuildContext& ctx_;
  unsigned sm_;
  ClockDomain& domain_;
  Interconnect& noc_;
  const AddressMap& address_map_;
  double bytes_per_cycle_;
  std::uint32_t max_outstanding_;
  Cycle latency_;
  double copy_cycles_;
  const ClusterDirectory* clusters_ = nullptr;  // looked up at the first multicast (built after the SMs)
  std::uint32_t line_bytes_ = 128, sector_bytes_ = 32;
  Cycle l1_latency_ = 0;
  std::uint64_t smem_row_bytes_ = 0, smem_wavefronts_ = 0;
  AsyncCopyCompletions* done_ = nullptr;
  std::vector<Copy> copies_in_flight_;
  RingQueue<Line> pending_;
  std::uint32_t outstanding_ = 0, active_copies_ = 0;
  double next_issue_ = 0, issue_time_ = 0;
  Cycle busy_since_ = 0;
  std::uint64_t copies_ = 0, bytes_ = 0, requests_ = 0, busy_cycles_ = 0, issue_cycles_ = 0;
  std::uint64_t multicast_copies_ = 0, multicast_bytes_saved_ = 0;
};

WARPSIM_REGISTER_COMPONENT(AsyncCopyEngine, TmaEngine, "async_copy", "tma",
                           "Hopper TMA unit per SM: UTMALDG box copies into shared memory, completed on mbarriers");

}  // namespace
}  // namespace warpsim
