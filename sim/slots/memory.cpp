#include "sim/slots/memory.h"

#include <string>

#include "sim/slots/build_context.h"

namespace warpsim {

L2Slice::L2Slice(BuildContext& ctx, unsigned index)
    : Component("l2.slice[" + std::to_string(index) + "]", ctx.domain("l2")), index_(index) {
  const Params& l2 = ctx.config.section("l2");
  StatGroup g(ctx.stats, path(), "l2");
  Counters& c = counters_;
  g.add("read_sectors", "sectors", "sectors read by SMs (lts__t_sectors_op_read)", c.read_sectors)
      .add("read_hit_sectors", "sectors", "read sectors that hit, including those already on their way from DRAM (lts__t_sectors_op_read_lookup_hit)", c.read_hit_sectors)
      .add("read_inflight_hit_sectors", "sectors", "read sectors that found their sector already requested from DRAM by an earlier miss (counted as hits)", c.read_inflight_hit_sectors)
      .add("write_sectors", "sectors", "sectors written by SMs (lts__t_sectors_op_write)", c.write_sectors)
      .add("atomic_sectors", "sectors", "sectors of atomics and reductions performed in L2 (lts__t_sectors_op_atom + _red)", c.atomic_sectors)
      .add("bytes_served", "bytes", "bytes moved through the slice's data port", c.bytes_served)
      .add("dram_read_bytes", "bytes", "bytes requested from DRAM", c.dram_read_bytes)
      .add("dram_write_bytes", "bytes", "dirty bytes written back to DRAM", c.dram_write_bytes)
      .gauge("dirty_bytes", "bytes", "modified bytes held at the end of the kernel: written to DRAM later, when evicted", c.dirty_bytes)
      .ratio("hit_rate", "read_hit_sectors", "read_sectors", "read sector hit rate (lts__t_sector_op_read_hit_rate)")
      .utilization("utilization", "bytes_served", l2.real("bandwidth") / l2.u32("slices"),
                   "data-port bytes against the slice's share of l2.bandwidth");
  ctx.probes.add(path() + ".access", access_probe_);
}

DramChannel::DramChannel(BuildContext& ctx, unsigned index, std::size_t queue_capacity)
    : Component("hbm.channel[" + std::to_string(index) + "]", ctx.domain("hbm")),
      index_(index),
      requests_(path() + ".requests", 1, queue_capacity) {
  const Params& hbm = ctx.config.section("hbm");
  granularity_ = hbm.u32("access_granularity");
  bytes_per_cycle_ = hbm.real("bandwidth") / hbm.u32("channels") / static_cast<double>(domain().frequency_hz());
  requests_.bind(nullptr, this);  // many senders (every L2 slice): each waits for space on its own
  requests_.add_probes(ctx.probes);
  StatGroup g(ctx.stats, path(), "hbm");
  g.add("bytes_read", "bytes", "bytes read from DRAM (dram__bytes_read)", bytes_read_)
      .add("bytes_written", "bytes", "bytes written to DRAM (dram__bytes_write)", bytes_written_)
      .add("requests", "requests", "requests taken from the channel's queue", requests_taken_)
      .add("bytes", "bytes", "bytes read and written", bytes_total_)
      .utilization("utilization", "bytes", hbm.real("bandwidth") / hbm.u32("channels"),
                   "bytes moved against the channel's share of hbm.bandwidth (dram__throughput)");
  ctx.probes.add(path() + ".access", access_probe_);
}

void DramChannel::attach_slice(unsigned slice, Port<MemRequest>* port) {
  if (slice >= slices_.size()) slices_.resize(slice + 1, nullptr);
  slices_[slice] = port;
}

MemRequest DramChannel::take_request() {
  MemRequest req = requests_.front();
  requests_.pop();
  ++requests_taken_;
  (req.op == MemOp::Read ? bytes_read_ : bytes_written_) += req.bytes;
  bytes_total_ += req.bytes;
  if (access_probe_.active()) access_probe_.notify(DramAccess{req, index_, domain().now()});
  return req;
}

void DramChannel::respond(const MemRequest& req, Cycle done) {
  Port<MemRequest>* to = req.slice < slices_.size() ? slices_[req.slice] : nullptr;
  WARPSIM_ASSERT(to != nullptr, path() + ": no response port for L2 slice " + std::to_string(req.slice));
  to->send_at(req, domain().time_of(done), domain().now_fs());
}

}  // namespace warpsim
