// SM <-> L2 interconnect with the hierarchy of NVIDIA's data-centre GPUs: SMs grouped in GPCs, each GPC wired
// to one L2 partition (its near partition), and a link between the partitions. A100 whitepaper: "The L2 cache is
// divided into two partitions ... Each L2 partition localizes and caches data for memory accesses from SMs in the
// GPCs directly connected to the partition"; Nsight Compute counts the traffic between them as the L2 fabric
// (lts__t_sectors_srcunit_ltcfabric).
//
// Every line has one home slice (the address map's slice_of; with l2.partitions > 1 the slices split into equal
// consecutive groups, one per partition, models/noc/l2_partitions.h): the home is the point of coherence. A read from an SM whose near
// partition is not the line's home goes to the near partition's copy slice (the slice of the same index within
// the near partition), which keeps a clean copy; on a miss that slice asks the home slice over the partition link
// and fills its copy from the answer (models/mem/l2_slice.cpp). Writes and atomics pass through that slice to the
// home slice. Fabric messages (slice to slice) use only the partition link and the slices' fabric ports.
//
// Each hop is a link of its own bandwidth per direction, reserved in turn by a message (cut-through: a message
// occupies a link for bytes / bandwidth cycles and its head moves on after the hop's latency), so contention
// shows up as queueing at the busiest link of the path:
//   SM port --sm_to_gpc_latency--> GPC port --gpc_to_partition_latency--> [partition link --partition_link_latency-->] slice port
//
// The GPC port is what bounds L2 streaming from all SMs: on the H100 SXM5 every kind of L2-resident stream (plain and
// cp.async loads, TMA bulk and tensor copies) tops out at the same 7.0-7.2 TB/s, far below the slices, while one SM
// alone pulls 3.3x its share; TMA multicast, replicated inside the GPC, gets past it (configs/h100_sxm.yaml,
// noc.gpc_port_bandwidth). Multicast data cross the GPC port once (models/sm/memory/tma_engine.cpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "models/noc/l2_partitions.h"
#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"
#include "sim/slots/gpc_layout.h"
#include "sim/slots/memory.h"

namespace warpsim {
namespace {

class HierarchicalNoc final : public Interconnect {
 public:
  static Schema schema() {
    Schema s("noc", "hierarchical", "SM -> GPC -> L2-partition crossbar, with a link between the L2 partitions");
    s.uint("gpcs", "GPCs", std::nullopt, "graphics processing clusters, each of whole TPCs (sim/slots/gpc_layout.h: SM ids round robin over the GPCs with room); GPC g belongs to L2 partition g * l2.partitions / gpcs", 1, 4096).unit_count();
    s.uint("sms_per_tpc", "SMs", 1, "SMs per TPC: a part fuses off whole TPCs, so every GPC holds a multiple of this many SMs (what decides how many clusters fit at once)", 1, 64);
    s.string("tpcs_per_gpc", kEvenTpcs, "TPCs of each GPC, comma-separated (e.g. the H100's 9,9,8,7,9,9,8,7), as the part's fuses leave them; 'even' deals sm.count / sms_per_tpc TPCs evenly over the GPCs. A subset GPU (sim.subset) deals its TPCs evenly").per_unit();
    s.uint("sm_to_gpc_latency", "cycles", std::nullopt, "L2-clock cycles, one way, SM to its GPC's crossbar port", 0, 10000);
    s.uint("gpc_to_partition_latency", "cycles", std::nullopt, "L2-clock cycles, one way, GPC port to a slice of its near L2 partition", 0, 10000);
    s.uint("partition_link_latency", "cycles", std::nullopt, "L2-clock cycles, one way, across the link between two L2 partitions", 0, 10000);
    s.uint("sm_port_bandwidth", "B/cycle", std::nullopt, "bytes per L2 cycle of each SM port, per direction", 1, 1 << 20);
    s.uint("gpc_port_bandwidth", "B/cycle", std::nullopt, "bytes per L2 cycle of each GPC's port to the L2 crossbar, per direction (the all-SM L2 streaming limit)", 1, 1 << 20);
    s.uint("slice_port_bandwidth", "B/cycle", std::nullopt, "bytes per L2 cycle of each L2 slice's crossbar port towards the SMs (read data)", 1, 1 << 20);
    s.uint("slice_input_bandwidth", "B/cycle", std::nullopt, "bytes per L2 cycle a slice takes in from the crossbar, as one flit of this width per cycle: a read request fills a flit, a write or atomic takes one flit per this many bytes of data (its header rides on the first)", 1, 1 << 20);
    s.uint("partition_link_bandwidth", "B/cycle", std::nullopt, "bytes per L2 cycle of the link between two L2 partitions, per direction", 1, 1 << 20)
        .total_over("l2.slices");  // it carries the far-homed traffic of all slices
    s.uint("control_bytes", "bytes", std::nullopt, "bytes of a request header (a read request carries only this)", 0, 256);
    return s;
  }

  HierarchicalNoc(BuildContext& ctx, const Params& p, unsigned)
      : domain_(ctx.domain("l2")),
        sm_to_gpc_(static_cast<double>(p.u64("sm_to_gpc_latency"))),
        gpc_to_partition_(static_cast<double>(p.u64("gpc_to_partition_latency"))),
        link_latency_(static_cast<double>(p.u64("partition_link_latency"))),
        control_bytes_(p.u32("control_bytes")),
        layout_(gpc_layout(ctx.config, &layout_note_)) {
    if (!layout_note_.empty()) spdlog::warn("{}", layout_note_);
    const Params& l2 = ctx.config.section("l2");
    const unsigned sms = ctx.config.section("sm").u32("count"), slices = l2.u32("slices");
    gpcs_ = p.u32("gpcs");
    partitions_ = l2.has("partitions") ? l2.u32("partitions") : 1;
    if (partitions_ > gpcs_) p.fail("gpcs", "fewer GPCs than L2 partitions (l2.partitions): a partition would have no SMs");
    if (partitions_ > slices) l2.fail("partitions", "more partitions than slices (l2.slices)");
    split_ = L2Partitions{slices, partitions_};
    const double hz = static_cast<double>(domain_.frequency_hz());
    auto make = [&](std::vector<Link>& links, unsigned n, const char* param) {
      links.assign(n, Link{});
      for (Link& l : links) l.bytes_per_cycle = p.real(param);
      return p.real(param) * hz;
    };
    const double sm_peak = make(sm_in_, sms, "sm_port_bandwidth");
    make(sm_out_, sms, "sm_port_bandwidth");
    const double gpc_peak = make(gpc_in_, gpcs_, "gpc_port_bandwidth");
    make(gpc_out_, gpcs_, "gpc_port_bandwidth");
    const double slice_in_peak = make(slice_in_, slices, "slice_input_bandwidth");
    const double slice_peak = make(slice_out_, slices, "slice_port_bandwidth");
    const double link_peak = make(links_, partitions_ * partitions_, "partition_link_bandwidth");
    sm_ports_.resize(sms);
    slice_fill_.resize(slices);
    // Stats as the crossbar's (kinds noc.sm_port, noc.slice_port; to_l2 = towards the slices, to_sm = towards
    // the SMs), so the speed-of-light section reads the same names, plus the GPC ports and the partition links.
    auto ports = [&](const std::string& kind, std::vector<Link>& to_l2, std::vector<Link>& to_sm, double to_l2_peak,
                     const std::string& to_l2_what, double to_sm_peak, const std::string& to_sm_what) {
      for (std::size_t i = 0; i < to_l2.size(); ++i)
        StatGroup(ctx.stats, kind + "[" + std::to_string(i) + "]", kind)
            .add("to_l2_bytes", "bytes", "bytes the port was busy with towards L2 (request headers and store data; at a slice, in whole flits)", to_l2[i].bytes)
            .add("to_sm_bytes", "bytes", "bytes through the port towards the SMs (read data and acknowledgements)", to_sm[i].bytes)
            .add("to_l2_wait_cycles", "cycles", "L2 cycles messages waited for the port towards L2, summed over messages (the port's back-pressure)", to_l2[i].wait_cycles)
            .add("to_sm_wait_cycles", "cycles", "L2 cycles messages waited for the port towards the SMs, summed over messages (the port's back-pressure)", to_sm[i].wait_cycles)
            .utilization("to_l2_utilization", "to_l2_bytes", to_l2_peak, "port busy towards L2 (" + to_l2_what + " per L2 cycle)")
            .utilization("to_sm_utilization", "to_sm_bytes", to_sm_peak, "port busy towards the SMs (" + to_sm_what + " per L2 cycle)");
    };
    // An SM port: towards L2 its requests leave (sm_out_), towards the SM its answers arrive (sm_in_).
    ports("noc.sm_port", sm_out_, sm_in_, sm_peak, "noc.sm_port_bandwidth", sm_peak, "noc.sm_port_bandwidth");
    ports("noc.gpc_port", gpc_out_, gpc_in_, gpc_peak, "noc.gpc_port_bandwidth", gpc_peak, "noc.gpc_port_bandwidth");
    // A slice port: towards L2 requests arrive (slice_in_), towards the SMs answers leave (slice_out_).
    ports("noc.slice_port", slice_in_, slice_out_, slice_in_peak, "noc.slice_input_bandwidth", slice_peak,
          "noc.slice_port_bandwidth");
    for (unsigned from = 0; from < partitions_; ++from)
      for (unsigned to = 0; to < partitions_; ++to) {
        if (from == to) continue;
        StatGroup(ctx.stats, "noc.partition_link[" + std::to_string(from) + "->" + std::to_string(to) + "]",
                  "noc.partition_link")
            .add("bytes", "bytes", "bytes across the link from one L2 partition to the other", links_[from * partitions_ + to].bytes)
            .add("wait_cycles", "cycles", "L2 cycles messages waited for the link, summed over messages", links_[from * partitions_ + to].wait_cycles)
            .utilization("utilization", "bytes", link_peak, "link busy (noc.partition_link_bandwidth per L2 cycle)");
      }
    StatGroup(ctx.stats, "noc", "noc")
        .add("far_requests", "requests", "requests that crossed the partition link to a line's home slice (copy misses, writes and atomics to far-homed lines)", far_requests_);
  }

  void attach_sm(unsigned sm, Port<MemRequest>* port) override { sm_ports_.at(sm) = port; }
  void attach_slice(unsigned slice, Port<MemRequest>* port) override {
    if (slice_ports_.size() <= slice) slice_ports_.resize(slice + 1);
    slice_ports_[slice] = port;
  }
  void attach_slice_fill(unsigned slice, Port<MemRequest>* port) override { slice_fill_.at(slice) = port; }

  void send_request(MemRequest req, TimeFs now) override {
    const std::uint32_t data = req.op == MemOp::Read ? 0 : req.bytes;
    const std::uint32_t bytes = control_bytes_ + data;
    double t = start_cycle(now);
    // A copy slice asks the home slice for a line over the L2 fabric: the partition link is its only hop (the
    // fabric does not share the slices' crossbar ports, whose reservations for the SMs' traffic run ahead).
    if (req.copy_slice != MemRequest::kNoSlice) {
      ++far_requests_;
      deliver(slice_fill_[req.slice], req,
              hop(link(partition_of_slice(req.copy_slice), partition_of_slice(req.slice)), t, bytes, link_latency_), now);
      return;
    }
    // Every request from an SM goes to a slice of its near partition: the line's home, or the slice that keeps
    // the line's copy (which passes writes and atomics on to the home over the fabric).
    const unsigned gpc = gpc_of(req.sm), near = partition_of_gpc(gpc);
    if (partition_of_slice(req.slice) != near) req.slice = static_cast<std::uint16_t>(copy_slice(req.slice, near));
    t = hop(sm_out_[req.sm], t, bytes, sm_to_gpc_);
    t = hop(gpc_out_[gpc], t, bytes, gpc_to_partition_);
    // The slice takes in one flit per cycle (Nsight on the H100 and H200: one read request or one 32 B write
    // sector per lts__xbar2lts active cycle), so a request fills a flit and data count in whole flits.
    Link& in = slice_in_[req.slice];
    const double flit = in.bytes_per_cycle;
    const auto flits = static_cast<std::uint32_t>(std::max(1.0, std::ceil(data / flit)));
    deliver(slice_ports_[req.slice], req, hop(in, t, static_cast<std::uint32_t>(flits * flit), 0.0), now);
  }

  void send_response(MemRequest req, TimeFs now) override {
    const std::uint32_t bytes = req.op == MemOp::Read ? req.bytes : control_bytes_;  // a write ack carries no data
    double t = start_cycle(now);
    if (req.copy_slice != MemRequest::kNoSlice) {  // the home slice answers a copy slice, over the fabric
      deliver(slice_fill_[req.copy_slice], req,
              hop(link(partition_of_slice(req.slice), partition_of_slice(req.copy_slice)), t, bytes, link_latency_), now);
      return;
    }
    const unsigned gpc = gpc_of(req.sm);
    t = hop(slice_out_[req.slice], t, bytes, 0.0);
    t = hop(gpc_in_[gpc], t, bytes, gpc_to_partition_);
    deliver(sm_ports_[req.sm], req, hop(sm_in_[req.sm], t, bytes, sm_to_gpc_), now);
  }

 private:
  // One direction of a link: reserved until `free` (L2 cycles), `bytes_per_cycle` wide, bytes carried.
  // `wait_cycles` sums the time messages queued for it (whole cycles of `waited`): where a bandwidth cap binds.
  struct Link {
    double free = 0.0, bytes_per_cycle = 1.0, waited = 0.0;
    std::uint64_t bytes = 0, wait_cycles = 0;
  };

  double start_cycle(TimeFs now) const { return static_cast<double>(domain_.cycle_at_or_after(now)); }
  // The message's head reaches the link at `head`; it holds the link for its serialisation time, and its head
  // reaches the next hop `latency` cycles after it got the link. Returns that arrival; the tail follows.
  double hop(Link& l, double head, std::uint32_t bytes, double latency) {
    const double start = std::max(head, l.free);
    l.waited += start - head;
    l.wait_cycles = static_cast<std::uint64_t>(l.waited);
    last_serialise_ = static_cast<double>(std::max<std::uint32_t>(bytes, 1)) / l.bytes_per_cycle;
    l.free = start + last_serialise_;
    l.bytes += bytes;
    return start + latency;
  }
  // The whole message has arrived when its tail has passed the last link.
  void deliver(Port<MemRequest>* port, const MemRequest& req, double head, TimeFs now) {
    const double arrive = head + last_serialise_;
    port->send_at(req, domain_.time_of(static_cast<Cycle>(std::ceil(arrive))), now);
  }

  unsigned gpc_of(unsigned sm) const { return layout_.gpc_of(sm); }
  // Over the GPCs that hold SMs (a small GPU has fewer than noc.gpcs: sim/slots/gpc_layout.h), so both partitions
  // keep SMs where there are GPCs enough.
  unsigned partition_of_gpc(unsigned gpc) const { return gpc * partitions_ / std::max(partitions_, layout_.gpcs()); }
  unsigned partition_of_slice(unsigned slice) const { return split_.of(slice); }
  unsigned copy_slice(unsigned home_slice, unsigned partition) const { return split_.copy_slice(home_slice, partition); }
  Link& link(unsigned from, unsigned to) { return links_[from * partitions_ + to]; }

  ClockDomain& domain_;
  double sm_to_gpc_, gpc_to_partition_, link_latency_;
  std::uint32_t control_bytes_;
  unsigned gpcs_ = 1, partitions_ = 1;
  L2Partitions split_;
  std::string layout_note_;  // why noc.tpcs_per_gpc was not used (sm.count changed), or empty
  GpcLayout layout_;
  double last_serialise_ = 0.0;
  // Sized once: the stats registry holds pointers to the counters.
  std::vector<Link> sm_out_, sm_in_, gpc_out_, gpc_in_, slice_in_, slice_out_, links_;
  std::vector<Port<MemRequest>*> sm_ports_, slice_ports_, slice_fill_;
  std::uint64_t far_requests_ = 0;
};

WARPSIM_REGISTER_COMPONENT(Interconnect, HierarchicalNoc, "noc", "hierarchical",
                           "SMs in GPCs, GPCs on a near L2 partition, a link between partitions; per-hop latency and bandwidth");

}  // namespace
}  // namespace warpsim
