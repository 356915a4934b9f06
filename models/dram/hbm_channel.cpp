// HBM channel, first cut: a first-come-first-served data bus with the channel's share of the peak bandwidth
// and a fixed access latency. Bank/row timing (tRCD, tRP, tCCD, refresh) arrives with the detailed memory
// issue behind this same DramChannel interface.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "models/gpu/build_context.h"
#include "sim/registry/registry.h"

namespace warpsim {
namespace {

class HbmChannel final : public DramChannel {
 public:
  static Schema schema() {
    Schema s("hbm", "hbm_simple", "HBM channels: FCFS data bus at the channel's share of peak bandwidth plus a fixed access latency");
    s.quantity("capacity", ParamType::Size, std::nullopt, "device memory capacity (informative; traces are not bounds-checked against it)", 1.0);
    s.quantity("bandwidth", ParamType::Bandwidth, std::nullopt, "peak DRAM bandwidth of the whole device", 1e6);
    s.uint("channels", "channels", std::nullopt, "independent channels; addresses interleave across them", 1, 4096);
    s.uint("latency", "cycles", std::nullopt, "HBM-clock cycles a DRAM access adds beyond an L2 miss", 0, 100000);
    s.quantity("access_granularity", ParamType::Size, std::nullopt, "bytes moved per access (a sector)", 1, 4096);
    return s;
  }

  HbmChannel(BuildContext& ctx, const Params& p, unsigned index)
      : DramChannel("gpu.hbm[" + std::to_string(index) + "]", *ctx.hbm_domain),
        in_(path() + ".in", 1, static_cast<std::size_t>(-1)) {
    const double channel_bw = p.real("bandwidth") / p.u32("channels");
    bytes_per_cycle_ = channel_bw / static_cast<double>(domain().frequency_hz());
    latency_ = p.u64("latency");
    granularity_ = p.u32("access_granularity");
    in_.bind(nullptr, this);
    StatGroup g(ctx.stats, path(), "hbm");
    g.add("bytes_read", "bytes", "bytes read from DRAM", bytes_read_)
        .add("bytes_written", "bytes", "bytes written to DRAM", bytes_written_)
        .add("busy_cycles", "cycles", "HBM-clock cycles the data bus was transferring", busy_cycles_)
        .add("requests", "requests", "requests served", requests_);
  }

  Port<MemRequest>& request_port() override { return in_; }
  void attach_slice(unsigned slice, Port<MemRequest>* port) override {
    if (slice >= slices_.size()) slices_.resize(slice + 1, nullptr);
    slices_[slice] = port;
  }

  Cycle tick(Cycle now) override {
    while (in_.ready()) {
      MemRequest req = in_.front();
      in_.pop();
      // Whole access granules on the bus, at the channel's share of peak bandwidth.
      const std::uint64_t granules = (req.bytes + granularity_ - 1) / granularity_;
      const double transfer = static_cast<double>(granules * granularity_) / bytes_per_cycle_;
      bus_free_ = std::max(bus_free_, static_cast<double>(now)) + transfer;
      busy_cycles_ += static_cast<std::uint64_t>(std::ceil(transfer));
      ++requests_;
      if (req.op == MemOp::Read) {
        bytes_read_ += req.bytes;
        const Cycle done = static_cast<Cycle>(std::ceil(bus_free_)) + latency_;
        slices_[req.slice]->send_at(req, domain().time_of(done), domain().now_fs());
      } else {
        bytes_written_ += req.bytes;  // write-back from L2: nobody waits for it
      }
    }
    return kSleep;
  }

  std::string describe_state() const override {
    return in_.occupancy() ? std::to_string(in_.occupancy()) + " requests queued" : std::string{};
  }

 private:
  Port<MemRequest> in_;
  std::vector<Port<MemRequest>*> slices_;
  double bytes_per_cycle_ = 1.0;
  double bus_free_ = 0.0;
  Cycle latency_ = 0;
  std::uint32_t granularity_ = 32;
  std::uint64_t bytes_read_ = 0, bytes_written_ = 0, busy_cycles_ = 0, requests_ = 0;
};

WARPSIM_REGISTER_COMPONENT(DramChannel, HbmChannel, "hbm", "hbm_simple",
                           "HBM channel: FCFS bus with bandwidth share and fixed latency");

}  // namespace
}  // namespace warpsim
