// SM <-> L2 crossbar. Each SM port and each L2-slice port is a link of `port_bandwidth` bytes per L2 cycle in
// each direction; a message reserves its source port, then the destination port, and arrives `latency`
// cycles after leaving the source. Contention therefore shows up as queueing delay at the busiest ports,
// without a per-cycle loop over every port.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"

namespace warpsim {
namespace {

class Crossbar final : public Interconnect {
 public:
  static Schema schema() {
    Schema s("noc", "crossbar", "SM-to-L2 crossbar: per-port bandwidth reservations plus a fixed traversal latency");
    s.uint("latency", "cycles", std::nullopt, "L2-clock cycles for one traversal SM -> L2 slice (and back)", 1, 10000);
    s.uint("port_bandwidth", "B/cycle", std::nullopt, "bytes per L2-clock cycle of each SM port and each slice port, per direction", 1, 4096);
    s.uint("control_bytes", "bytes", std::nullopt, "bytes of a request header (a read request carries only this)", 0, 256);
    return s;
  }

  // Ports are counted per direction: "to_l2" (requests and store data, SM -> slice) and "to_sm" (read data and
  // acknowledgements, slice -> SM). Utilisation of a port in a direction is its bytes against port_bandwidth per
  // L2 cycle; the busiest port (the `max` of the metric in stats.json) is what limits the traffic.
  Crossbar(BuildContext& ctx, const Params& p, unsigned)
      : domain_(ctx.domain("l2")),
        latency_(p.u64("latency")),
        port_bw_(p.u32("port_bandwidth")),
        control_bytes_(p.u32("control_bytes")) {
    const unsigned sms = ctx.config.section("sm").u32("count"), slices = ctx.config.section("l2").u32("slices");
    const Params& l2 = ctx.config.section("l2");
    if (l2.has("partitions") && l2.u32("partitions") > 1)
      l2.fail("partitions", "the crossbar (noc.impl crossbar) has no link between L2 partitions: use noc.impl hierarchical, or l2.partitions 1");
    sm_ports_.resize(sms);
    slice_ports_.resize(slices);
    const double port_peak = static_cast<double>(port_bw_) * static_cast<double>(domain_.frequency_hz());
    auto register_port = [&](Endpoint& e, const std::string& kind, unsigned i) {
      StatGroup g(ctx.stats, kind + "[" + std::to_string(i) + "]", kind);
      g.add("to_l2_bytes", "bytes", "bytes through the port towards L2 (request headers and store data)", e.to_l2_bytes)
          .add("to_sm_bytes", "bytes", "bytes through the port towards the SMs (read data and acknowledgements)", e.to_sm_bytes)
          .utilization("to_l2_utilization", "to_l2_bytes", port_peak, "port busy towards L2 (noc.port_bandwidth per L2 cycle)")
          .utilization("to_sm_utilization", "to_sm_bytes", port_peak, "port busy towards the SMs (noc.port_bandwidth per L2 cycle)");
    };
    for (unsigned i = 0; i < sms; ++i) register_port(sm_ports_[i], "noc.sm_port", i);
    for (unsigned i = 0; i < slices; ++i) register_port(slice_ports_[i], "noc.slice_port", i);
  }

  void attach_sm(unsigned sm, Port<MemRequest>* port) override { sm_ports_.at(sm).port = port; }
  void attach_slice(unsigned slice, Port<MemRequest>* port) override { slice_ports_.at(slice).port = port; }

  void send_request(MemRequest req, TimeFs now) override {
    const std::uint32_t bytes = control_bytes_ + (req.op == MemOp::Read ? 0 : req.bytes);
    Endpoint& src = sm_ports_[req.sm];
    Endpoint& dst = slice_ports_[req.slice];
    src.to_l2_bytes += bytes;
    dst.to_l2_bytes += bytes;
    const double arrive = traverse(now, bytes, src.out_free, dst.in_free);
    dst.port->send_at(req, domain_.time_of(static_cast<Cycle>(std::ceil(arrive))), now);
  }
  void send_response(MemRequest req, TimeFs now) override {
    const std::uint32_t bytes = req.op == MemOp::Read ? req.bytes : control_bytes_;  // a write ack carries no data
    Endpoint& src = slice_ports_[req.slice];
    Endpoint& dst = sm_ports_[req.sm];
    src.to_sm_bytes += bytes;
    dst.to_sm_bytes += bytes;
    const double arrive = traverse(now, bytes, src.out_free, dst.in_free);
    dst.port->send_at(req, domain_.time_of(static_cast<Cycle>(std::ceil(arrive))), now);
  }

 private:
  // Returns the L2-domain cycle (fractional) at which the message has fully arrived.
  double traverse(TimeFs now, std::uint32_t bytes, double& src_free, double& dst_free) const {
    const double start = static_cast<double>(domain_.cycle_at_or_after(now));
    const double serialise = static_cast<double>(std::max<std::uint32_t>(bytes, 1)) / port_bw_;
    const double leave = std::max(start, src_free) + serialise;
    src_free = leave;
    const double arrive = std::max(leave + static_cast<double>(latency_), dst_free + serialise);
    dst_free = arrive;
    return arrive;
  }

  ClockDomain& domain_;
  Cycle latency_;
  std::uint32_t port_bw_, control_bytes_;
  // An SM or slice port: where messages for it go, until when (L2 cycles) each direction is reserved, and the
  // bytes it carried each way. Sized once: the stats registry holds pointers to the counters.
  struct Endpoint {
    Port<MemRequest>* port = nullptr;
    double out_free = 0.0, in_free = 0.0;
    std::uint64_t to_l2_bytes = 0, to_sm_bytes = 0;
  };
  std::vector<Endpoint> sm_ports_, slice_ports_;
};

WARPSIM_REGISTER_COMPONENT(Interconnect, Crossbar, "noc", "crossbar",
                           "crossbar with per-port bandwidth reservations and fixed latency");

}  // namespace
}  // namespace warpsim
