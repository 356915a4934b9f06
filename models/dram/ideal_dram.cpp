// DRAM channel "ideal": every access takes a fixed latency and bandwidth is unlimited. An upper bound for
// "what if memory were free" experiments, and the README's worked example of adding a component.
#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"

namespace warpsim {
namespace {

class IdealDram final : public DramChannel {
 public:
  // The slot already declares what every DRAM model shares (bandwidth, channels, latency, ...); add only your own.
  static Schema schema() { return Schema("hbm", "ideal", "DRAM with a fixed access latency and unlimited bandwidth"); }

  IdealDram(BuildContext& ctx, const Params& p, unsigned index)
      : DramChannel(ctx, index, Port<MemRequest>::kUnbounded),  // no queue: nothing to push back with
        latency_(p.u64("latency")) {
    StatGroup(ctx.stats, path(), "hbm").add("reads", "requests", "read requests answered", reads_);
  }

  Cycle tick(Cycle now) override {
    while (has_request()) {
      const MemRequest req = take_request();  // counts hbm.bytes_read / bytes_written for you
      if (req.op != MemOp::Read) continue;    // a write-back: nobody waits for it
      ++reads_;
      respond(req, now + latency_);
    }
    return kSleep;  // woken by the next request
  }

 private:
  Cycle latency_;
  std::uint64_t reads_ = 0;
};

WARPSIM_REGISTER_COMPONENT(DramChannel, IdealDram, "hbm", "ideal", "fixed latency, unlimited bandwidth");

}  // namespace
}  // namespace warpsim
