// SM <-> L2 crossbar. Each SM port and each L2-slice port is a link of `port_bandwidth` bytes per L2 cycle in
// each direction; a message reserves its source port, then the destination port, and arrives `latency`
// cycles after leaving the source. Contention therefore shows up as queueing delay at the busiest ports,
// without a per-cycle loop over every port.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "models/gpu/build_context.h"
#include "sim/registry/registry.h"

namespace warpsim {

unsigned hash_interleave(std::uint64_t addr, std::uint64_t granularity, unsigned ways) {
  std::uint64_t chunk = addr / granularity;
  // XOR-fold higher bits into the low ones so power-of-two strides do not camp on one slice/channel.
  std::uint64_t h = chunk ^ (chunk >> 7) ^ (chunk >> 13) ^ (chunk >> 19);
  return static_cast<unsigned>(h % ways);
}

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

  Crossbar(BuildContext& ctx, const Params& p, unsigned)
      : domain_(*ctx.l2_domain),
        latency_(p.u64("latency")),
        port_bw_(p.u32("port_bandwidth")),
        control_bytes_(p.u32("control_bytes")),
        slices_(ctx.config.section("l2").u32("slices")),
        line_bytes_(ctx.config.section("l2").u32("line_size")) {}

  void attach_sm(unsigned sm, Port<MemRequest>* port) override { endpoint(sm_ports_, sm).port = port; }
  void attach_slice(unsigned slice, Port<MemRequest>* port) override { endpoint(slice_ports_, slice).port = port; }
  unsigned slice_of(std::uint64_t line_addr) const override {
    return hash_interleave(line_addr, line_bytes_, slices_);
  }

  void send_request(MemRequest req, TimeFs now) override {
    const std::uint32_t bytes = control_bytes_ + (req.op == MemOp::Read ? 0 : req.bytes);
    Endpoint& dst = slice_ports_[req.slice];
    const double arrive = traverse(now, bytes, sm_ports_[req.sm].out_free, dst.in_free);
    dst.port->send_at(req, domain_.time_of(static_cast<Cycle>(std::ceil(arrive))), now);
  }
  void send_response(MemRequest req, TimeFs now) override {
    const std::uint32_t bytes = req.op == MemOp::Read ? req.bytes : control_bytes_;  // a write ack carries no data
    Endpoint& dst = sm_ports_[req.sm];
    const double arrive = traverse(now, bytes, slice_ports_[req.slice].out_free, dst.in_free);
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
  unsigned slices_;
  std::uint32_t line_bytes_;
  // An SM or slice port: where messages for it go, and until when (L2 cycles) each direction is reserved.
  struct Endpoint {
    Port<MemRequest>* port = nullptr;
    double out_free = 0.0, in_free = 0.0;
  };
  static Endpoint& endpoint(std::vector<Endpoint>& v, unsigned i) {
    if (i >= v.size()) v.resize(i + 1);
    return v[i];
  }
  std::vector<Endpoint> sm_ports_, slice_ports_;
};

WARPSIM_REGISTER_COMPONENT(Interconnect, Crossbar, "noc", "crossbar",
                           "crossbar with per-port bandwidth reservations and fixed latency");

}  // namespace
}  // namespace warpsim
