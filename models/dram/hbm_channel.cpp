// HBM channel "hbm_simple": a first-come-first-served data bus with the channel's share of the peak bandwidth
// and a fixed access latency (hbm.latency), for fast studies. Requests wait in one bounded queue
// (hbm.read_queue_depth + hbm.write_queue_depth) and take the bus one at a time, so a channel that cannot keep up
// pushes back on the L2 slices, reads and write-backs alike. Bank and row timing, refresh and read/write
// turnaround are hbm_detailed's.
#include <algorithm>
#include <cmath>
#include <string>

#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"

namespace warpsim {
namespace {

class HbmChannel final : public DramChannel {
 public:
  static Schema schema() {
    // Its latency and queue depths are the slot's shared hbm.latency, hbm.read_queue_depth, hbm.write_queue_depth.
    return Schema("hbm", "hbm_simple", "HBM channels: FCFS data bus at the channel's share of peak bandwidth plus a fixed access latency");
  }

  HbmChannel(BuildContext& ctx, const Params& p, unsigned index)
      : DramChannel(ctx, index, p.u32("read_queue_depth") + p.u32("write_queue_depth")) {
    latency_ = p.u64("latency");
    StatGroup(ctx.stats, path(), "hbm")
        .add("busy_cycles", "cycles", "HBM-clock cycles the data bus was transferring", busy_cycles_);
  }

  Cycle tick(Cycle now) override {
    // The bus takes the next request in the cycle it finishes the previous one's transfer; the rest wait queued.
    while (has_request() && bus_free_ < static_cast<double>(now + 1)) {
      const MemRequest req = take_request();
      const double transfer = transfer_cycles(req.bytes);
      bus_free_ = std::max(bus_free_, static_cast<double>(now)) + transfer;
      busy_cycles_ += static_cast<std::uint64_t>(std::ceil(transfer));
      if (req.op == MemOp::Read) respond(req, static_cast<Cycle>(std::ceil(bus_free_)) + latency_);
      // A write-back from L2: nobody waits for it.
    }
    if (!has_request()) return kSleep;
    return std::max(now + 1, static_cast<Cycle>(std::floor(bus_free_)));
  }

  std::string describe_state() const override {
    return queued_requests() ? std::to_string(queued_requests()) + " requests queued" : std::string{};
  }

 private:
  double bus_free_ = 0.0;
  Cycle latency_ = 0;
  std::uint64_t busy_cycles_ = 0;
};

WARPSIM_REGISTER_COMPONENT(DramChannel, HbmChannel, "hbm", "hbm_simple",
                           "HBM channel: FCFS bus with bandwidth share and fixed latency");

}  // namespace
}  // namespace warpsim
