// HBM channel "hbm_simple": a first-come-first-served data bus with the channel's share of the peak bandwidth
// and a fixed access latency. Bank/row timing (tRCD, tRP, tCCD, refresh) belongs to a banked implementation of
// the same slot.
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
    Schema s("hbm", "hbm_simple", "HBM channels: FCFS data bus at the channel's share of peak bandwidth plus a fixed access latency");
    s.uint("latency", "cycles", std::nullopt, "HBM-clock cycles a DRAM access adds beyond an L2 miss", 0, 100000);
    return s;
  }

  // The queue is unbounded: this model has no request queue limit (the slices' MSHRs bound the reads).
  HbmChannel(BuildContext& ctx, const Params& p, unsigned index)
      : DramChannel(ctx, index, Port<MemRequest>::kUnbounded) {
    latency_ = p.u64("latency");
    StatGroup(ctx.stats, path(), "hbm")
        .add("busy_cycles", "cycles", "HBM-clock cycles the data bus was transferring", busy_cycles_);
  }

  Cycle tick(Cycle now) override {
    while (has_request()) {
      const MemRequest req = take_request();
      const double transfer = transfer_cycles(req.bytes);
      bus_free_ = std::max(bus_free_, static_cast<double>(now)) + transfer;
      busy_cycles_ += static_cast<std::uint64_t>(std::ceil(transfer));
      if (req.op == MemOp::Read) respond(req, static_cast<Cycle>(std::ceil(bus_free_)) + latency_);
      // A write-back from L2: nobody waits for it.
    }
    return kSleep;
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
