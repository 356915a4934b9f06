// DRAM channel "banked": a bounded request queue scheduled first-ready, first-come-first-served (FR-FCFS: the
// oldest request to an open row goes first, else the oldest), banks with one open row each, and one data bus.
// A row miss costs `row_miss_latency` more than a row hit's `access_latency` and keeps its bank busy; a full
// queue pushes back on the L2 slices. A first cut of bank timing (no refresh, no bank groups, no read/write
// turnaround): enough to show the slot contract — one file, one registration, selected with `hbm: {impl: banked}`.
#include <algorithm>
#include <cmath>
#include <deque>
#include <string>
#include <vector>

#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"

namespace warpsim {
namespace {

class BankedDram final : public DramChannel {
 public:
  static Schema schema() {
    Schema s("hbm", "banked", "DRAM channels with banks, open rows, FR-FCFS scheduling and a bounded queue");
    const auto req = std::nullopt;
    s.uint("queue_depth", "requests", req, "requests the channel's controller holds; a full queue pushes back on L2", 1, 4096);
    s.uint("banks", "banks", req, "banks per channel, each with one open row", 1, 1024);
    s.quantity("row_size", ParamType::Size, req, "bytes of one row of one bank (the page)", 32, 1 << 20);
    s.uint("access_latency", "cycles", req, "HBM-clock cycles from a row-hit access to its data", 0, 100000);
    s.uint("row_miss_latency", "cycles", req, "extra HBM-clock cycles of a row miss (precharge + activate)", 0, 100000);
    return s;
  }

  BankedDram(BuildContext& ctx, const Params& p, unsigned index)
      : DramChannel(ctx, index, p.u32("queue_depth")),
        address_map_(ctx.get<AddressMap>("address_map")),
        queue_depth_(p.u32("queue_depth")),
        row_bytes_(p.u64("row_size")),
        access_latency_(p.u64("access_latency")),
        row_miss_latency_(p.u64("row_miss_latency")),
        banks_(p.u32("banks")) {
    StatGroup(ctx.stats, path(), "hbm")
        .add("row_hits", "requests", "requests to a bank's open row", row_hits_)
        .add("row_misses", "requests", "requests that opened a row (precharge + activate)", row_misses_)
        .ratio("row_hit_rate", "row_hits", "requests", "row-buffer hit rate");
  }

  Cycle tick(Cycle now) override {
    while (has_request() && queue_.size() < queue_depth_) {
      const MemRequest req = take_request();
      const std::uint64_t addr = address_map_.dram_location(req.line_addr).channel_address;
      queue_.push_back(Pending{req, static_cast<unsigned>(addr / row_bytes_ % banks_.size()), addr / row_bytes_ / banks_.size()});
    }
    // Issue every request whose bank is free now: row hits first, oldest first.
    for (bool issued = true; issued && !queue_.empty();) {
      issued = false;
      auto pick = queue_.end();
      for (auto it = queue_.begin(); it != queue_.end(); ++it) {
        const Bank& b = banks_[it->bank];
        if (b.ready > now) continue;
        if (b.open_row == it->row) {
          pick = it;
          break;
        }
        if (pick == queue_.end()) pick = it;
      }
      if (pick == queue_.end()) break;
      serve(*pick, now);
      queue_.erase(pick);
      issued = true;
    }
    // Requests left wait for their bank; room in the queue lets the port's waiting senders in.
    if (has_request() && queue_.size() < queue_depth_) return now + 1;
    Cycle next = kSleep;
    for (const Pending& q : queue_) next = std::min(next, std::max(banks_[q.bank].ready, now + 1));
    return next;
  }

  std::string describe_state() const override {
    if (queue_.empty() && !queued_requests()) return {};
    return std::to_string(queue_.size()) + " requests scheduled, " + std::to_string(queued_requests()) + " waiting at the port";
  }

 private:
  struct Pending {
    MemRequest req;
    unsigned bank;
    std::uint64_t row;
  };
  struct Bank {
    std::uint64_t open_row = ~std::uint64_t{0};
    Cycle ready = 0;
  };

  void serve(const Pending& q, Cycle now) {
    Bank& bank = banks_[q.bank];
    Cycle start = now;
    if (bank.open_row == q.row) {
      ++row_hits_;
    } else {
      ++row_misses_;
      start += row_miss_latency_;
      bank.open_row = q.row;
    }
    bus_free_ = std::max(bus_free_, static_cast<double>(start + access_latency_)) + transfer_cycles(q.req.bytes);
    const Cycle done = static_cast<Cycle>(std::ceil(bus_free_));
    bank.ready = std::max(start, done - access_latency_);  // the bank is free once its data is on the bus
    if (q.req.op == MemOp::Read) respond(q.req, done);
  }

  const AddressMap& address_map_;
  std::size_t queue_depth_;
  std::uint64_t row_bytes_;
  Cycle access_latency_, row_miss_latency_;
  std::vector<Bank> banks_;
  std::deque<Pending> queue_;
  double bus_free_ = 0.0;
  std::uint64_t row_hits_ = 0, row_misses_ = 0;
};

WARPSIM_REGISTER_COMPONENT(DramChannel, BankedDram, "hbm", "banked",
                           "DRAM channel with banks, open rows, FR-FCFS and a bounded queue");

}  // namespace
}  // namespace warpsim
