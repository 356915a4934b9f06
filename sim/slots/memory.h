// The slots of the memory system: address mapping, SM <-> L2 interconnect, L2 slices, DRAM channels. Each is an
// interface with registered implementations (`impl:` in the config picks one; the slot's declaration in
// slots.cpp names the default and the parameters every implementation shares). The base classes own what every
// implementation must report the same way — the standard counters that the summary and the DRAM totals read,
// the probe points — so that a new implementation cannot silently report zero traffic.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/core/component.h"
#include "sim/core/port.h"
#include "sim/core/probe.h"
#include "sim/slots/mem_request.h"

namespace warpsim {

class BuildContext;

// Where a line lives (config section `address_map`): which L2 slice caches it and which DRAM channel holds it,
// with the address inside that channel and its place in the channel's geometry (hbm.bank_groups,
// hbm.banks_per_group, hbm.row_size): bank group, bank within the group, row, and byte column within the row.
struct DramLocation {
  unsigned channel = 0;
  std::uint64_t channel_address = 0;
  unsigned bank_group = 0, bank = 0;
  std::uint64_t row = 0;
  std::uint32_t column = 0;
};

class AddressMap {
 public:
  virtual ~AddressMap() = default;
  virtual unsigned slice_of(std::uint64_t line_addr) const = 0;
  virtual DramLocation dram_location(std::uint64_t line_addr) const = 0;
  // The number whose quotient by `slices` indexes the line's set inside its slice. The default (line index x
  // slices) indexes sets by line index; a hashing map returns the hash that picked the slice, so that the lines
  // a slice holds spread evenly over its sets.
  virtual std::uint64_t slice_set_key(std::uint64_t line_addr, std::uint32_t line_bytes, unsigned slices) const {
    return line_addr / line_bytes * slices;
  }
};

// SM <-> L2 network (config section `noc`). Not a ticking component: it computes each message's delivery
// time from link latency and per-port bandwidth reservations, and hands the message to the receiver's port.
class Interconnect {
 public:
  virtual ~Interconnect() = default;
  // `now`: global time at which the sender hands the message over.
  virtual void send_request(MemRequest req, TimeFs now) = 0;   // SM req.sm -> L2 slice req.slice
  virtual void send_response(MemRequest req, TimeFs now) = 0;  // L2 slice req.slice -> SM req.sm
  virtual void attach_sm(unsigned sm, Port<MemRequest>* response_port) = 0;
  virtual void attach_slice(unsigned slice, Port<MemRequest>* request_port) = 0;
  // Partitioned L2s: a slice's fabric port (L2Slice::fabric_port), where requests from other partitions' slices
  // and the answers to its own (copy_slice set) arrive. An interconnect without partitions never delivers any.
  virtual void attach_slice_fill(unsigned /*slice*/, Port<MemRequest>* /*fill_port*/) {}
};

// An L2 access as the probe point `l2.slice[i].access` reports it (after the lookup).
struct L2Access {
  const MemRequest& req;
  std::uint32_t hit_sectors;  // sectors found in the cache or already on their way from DRAM
  Cycle cycle;                // L2 clock
};

// One L2 slice (config section `l2`; instantiated `l2.slices` times, path `l2.slice[i]`, L2 clock domain).
class L2Slice : public Component {
 public:
  L2Slice(BuildContext& ctx, unsigned index);
  virtual Port<MemRequest>& request_port() = 0;       // from the interconnect
  virtual Port<MemRequest>& dram_response_port() = 0;  // from DRAM channels
  // From other L2 partitions' slices (partitioned L2s): their requests for lines homed here, and the answers to this
  // slice's requests for its copies. By default the DRAM response port (an implementation without partitions).
  virtual Port<MemRequest>& fabric_port() { return dram_response_port(); }
  unsigned index() const noexcept { return index_; }

 protected:
  // The standard counters of every L2 implementation (stats `l2.*`); the implementation increments them.
  // Hit rate as Nsight Compute's lts__t_sector_op_read_hit_rate: a sector already requested from DRAM by an
  // earlier miss counts as a hit (also counted apart, in read_inflight_hit_sectors).
  struct Counters {
    std::uint64_t read_sectors = 0, read_hit_sectors = 0, read_inflight_hit_sectors = 0, write_sectors = 0,
                  atomic_sectors = 0, bytes_served = 0, dram_read_bytes = 0, dram_write_bytes = 0;
    std::uint64_t dirty_bytes = 0;  // gauge: modified data held now, which DRAM receives when it is evicted
  } counters_;
  void notify_access(const MemRequest& req, std::uint32_t hit_sectors, Cycle now) {
    if (access_probe_.active()) access_probe_.notify(L2Access{req, hit_sectors, now});
  }

 private:
  unsigned index_;
  ProbePoint<L2Access> access_probe_;
};

// A DRAM access as the probe point `hbm.channel[i].access` reports it (when the channel takes the request).
struct DramAccess {
  const MemRequest& req;
  unsigned channel;
  Cycle cycle;  // HBM clock
};

// One DRAM channel (config section `hbm`; instantiated `hbm.channels` times, path `hbm.channel[i]`, HBM clock
// domain). L2 slices send requests to request_port(), which is bounded by the implementation's queue depth: a
// slice that finds it full waits (Port::wait_for_space). The implementation takes requests only through
// take_request() and answers reads with respond(), so the DRAM totals are counted the same way for every model.
class DramChannel : public Component {
 public:
  DramChannel(BuildContext& ctx, unsigned index, std::size_t queue_capacity);
  Port<MemRequest>& request_port() noexcept { return requests_; }
  // The assembler tells each channel where every slice's responses go (indexed by MemRequest::slice).
  void attach_slice(unsigned slice, Port<MemRequest>* response_port);
  unsigned index() const noexcept { return index_; }

 protected:
  bool has_request() const noexcept { return requests_.ready(); }
  const MemRequest& next_request() { return requests_.front(); }
  std::size_t queued_requests() const noexcept { return requests_.occupancy(); }
  // Removes the next request from the queue, counting it in the standard counters (hbm.bytes_read,
  // hbm.bytes_written, hbm.requests) and announcing it at the `access` probe point.
  MemRequest take_request();
  // Sends a read's data back to its slice, arriving at HBM cycle `done`.
  void respond(const MemRequest& req, Cycle done);
  // HBM cycles (fractional) the channel's data bus needs for `bytes`: whole access granules
  // (hbm.access_granularity) at the channel's share of hbm.bandwidth.
  double transfer_cycles(std::uint32_t bytes) const {
    const std::uint64_t granules = (bytes + granularity_ - 1) / granularity_;
    return static_cast<double>(granules * granularity_) / bytes_per_cycle_;
  }

 private:
  unsigned index_;
  Port<MemRequest> requests_;
  std::vector<Port<MemRequest>*> slices_;
  ProbePoint<DramAccess> access_probe_;
  std::uint32_t granularity_;
  double bytes_per_cycle_;
  std::uint64_t bytes_read_ = 0, bytes_written_ = 0, bytes_total_ = 0, requests_taken_ = 0;
};

}  // namespace warpsim
