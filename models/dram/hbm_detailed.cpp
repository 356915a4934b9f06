// DRAM channel "hbm_detailed": one HBM pseudo-channel (`hbm.channels` counts pseudo-channels) with bank groups,
// banks and one row buffer per bank, driven by a command-level FR-FCFS controller.
//
// - Commands: ACT, PRE, RD, WR (one burst of hbm.access_granularity bytes each; an L2 request of n sectors is n
//   column commands to one row), all-bank REF or per-bank REFsb. One row command (ACT/PRE) and one column
//   command per cycle, as HBM's separate row and column command buses allow.
// - Timing (config in ns, turned into HBM-clock cycles by rounding up, as JEDEC's nCK = ceil(t / tCK)):
//   ACT->RD/WR tRCD, ACT->PRE tRAS, PRE->ACT tRP, RD->data tCL, WR->data tWL, data burst burst_length / 2
//   cycles at the device's rate (double data rate), RD->RD / WR->WR tCCD_S (other bank group) / tCCD_L (same group), ACT->ACT tRRD_S /
//   tRRD_L and at most four ACTs in tFAW (tRRD_S and tFAW counted per stack ID: the bank groups split evenly into
//   hbm.stack_ids dies, each with its own activate window), RD->PRE tRTP, end of write data->PRE tWR, end of write data->RD
//   tWTR_S / tWTR_L, RD->WR tRTW, one refresh every tREFI (all-bank: tRFC with every bank precharged; per-bank:
//   every tREFI / banks, tRFCsb on one bank).
// - Scheduling: separate read and write queues (bounded; a full queue leaves requests in the port, so the L2
//   slices wait: Port::wait_for_space). Reads are served until the write queue reaches write_high_watermark or
//   no read is waiting; then writes drain until write_low_watermark with reads waiting (or the write queue is
//   empty). Within the active queue, first-ready first-come-first-served: the oldest request whose column
//   command is ready in an open row goes first, else the oldest request's ACT or PRE; a row still wanted by a
//   queued request is not closed. Open page keeps rows open; closed page precharges after each request.
// - Latency: a read's data returns `latency - (tRCD + tCL + burst)` cycles after its last burst: the part of the
//   measured idle DRAM latency (hbm.latency: an idle read of a precharged bank) that is controller, PHY and
//   interconnect, not DRAM core. Refresh (on average tRFC^2 / 2 tREFI for a read at a random time), row
//   conflicts and queueing add to it.
// Bank group, bank, row and column come from the address map (DramLocation). Refreshes while the channel is
// idle are accounted when it wakes, so an idle channel sleeps.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"

namespace warpsim {
namespace {

constexpr std::uint64_t kNoRow = std::numeric_limits<std::uint64_t>::max();
constexpr double kRoundingSlack = 0.05;  // cycles

struct TimingNs {
  const char* key;
  const char* description;
};

// The timing parameters, in the order of the Timing struct below.
constexpr TimingNs kTimings[] = {
    {"tRCD", "ACT to RD/WR of the same bank"},
    {"tRP", "PRE to ACT of the same bank"},
    {"tRAS", "ACT to PRE of the same bank"},
    {"tCL", "RD command to first read data (read latency RL)"},
    {"tWL", "WR command to first write data (write latency)"},
    {"tCCD_S", "column command to column command, different bank groups"},
    {"tCCD_L", "column command to column command, same bank group"},
    {"tRRD_S", "ACT to ACT, different bank groups"},
    {"tRRD_L", "ACT to ACT, same bank group"},
    {"tFAW", "window in which at most four ACTs may issue"},
    {"tWR", "end of write data to PRE of the same bank (write recovery)"},
    {"tWTR_S", "end of write data to RD, different bank groups"},
    {"tWTR_L", "end of write data to RD, same bank group"},
    {"tRTP", "RD to PRE of the same bank"},
    {"tRTW", "RD to WR (read-to-write bus turnaround)"},
    {"tREFI", "average interval between all-bank refreshes"},
    {"tRFC", "all-bank refresh cycle time"},
    {"tRFCsb", "per-bank (single-bank) refresh cycle time"},
};

struct Timing {
  Cycle rcd, rp, ras, cl, wl, ccd_s, ccd_l, rrd_s, rrd_l, faw, wr, wtr_s, wtr_l, rtp, rtw, refi, rfc, rfc_sb;
};

class HbmDetailed final : public DramChannel {
 public:
  static Schema schema() {
    Schema s("hbm", "hbm_detailed",
             "HBM pseudo-channels with bank groups, banks, row buffers, JEDEC timing, refresh and an FR-FCFS "
             "controller with read/write queues and write-drain watermarks");
    const auto req = std::nullopt;
    s.uint("burst_length", "beats", req, "data beats of one burst of access_granularity bytes (two beats per HBM clock): the device's own burst time, against which a changed hbm.bandwidth scales tCCD_S/tCCD_L", 1, 64);
    s.choice("page_policy", {"open", "closed"}, req, "open: rows stay open until a conflict or refresh; closed: precharge after every request");
    s.choice("refresh", {"all_bank", "per_bank"}, req, "all_bank: REF every tREFI blocks every bank for tRFC; per_bank: REFsb every tREFI/banks blocks one bank for tRFCsb");
    s.uint("write_high_watermark", "requests", req, "queued writes that start a write drain (reads wait)", 1, 4096);
    s.uint("write_low_watermark", "requests", req, "queued writes at which a drain ends when reads are waiting", 0, 4096);
    s.uint("stack_ids", "dies", 1u, "stack IDs (dies) the bank groups split into evenly; tRRD_S and the four-ACT window tFAW hold per stack ID (1: for the whole pseudo-channel)", 1, 64);
    for (const TimingNs& t : kTimings) s.real(std::string("timing.") + t.key, "ns", req, t.description, 0.0, 1e6);
    return s;
  }

  HbmDetailed(BuildContext& ctx, const Params& p, unsigned index)
      : DramChannel(ctx, index, 1),
        address_map_(ctx.get<AddressMap>("address_map")),
        read_capacity_(p.u32("read_queue_depth")),  // the slot's shared queue depths
        write_capacity_(p.u32("write_queue_depth")),
        high_watermark_(p.u32("write_high_watermark")),
        low_watermark_(p.u32("write_low_watermark")),
        closed_page_(p.str("page_policy") == "closed"),
        per_bank_refresh_(p.str("refresh") == "per_bank") {
    const Params& hbm = ctx.config.section("hbm");
    const double hz = static_cast<double>(domain().frequency_hz());
    auto fail = [&](const char* key, const std::string& what) {  // a combination of values that cannot work
      throw ConfigError(p.value(key).where.str() + ": hbm." + key + ": " + what);
    };
    // The data bus carries a burst (hbm.access_granularity bytes) in the time the channel's share of hbm.bandwidth
    // needs; at the device's own rate that is burst_length / 2 clocks (two beats per clock). A bandwidth set
    // above or below that rate (a what-if) is taken as a faster or slower interface: the column cadence tCCD_S /
    // tCCD_L and the activate rate (tRRD_S/L, tFAW) scale with it, while the DRAM core's timings (ns) stay.
    const double burst_cycles = transfer_cycles(hbm.u32("access_granularity"));
    const double interface_speedup = (p.u32("burst_length") / 2.0) / burst_cycles;
    burst_ = std::max<Cycle>(1, static_cast<Cycle>(std::llround(burst_cycles)));
    granularity_ = hbm.u32("access_granularity");
    if (low_watermark_ >= high_watermark_) fail("write_low_watermark", "must be below write_high_watermark");
    if (high_watermark_ > write_capacity_) fail("write_high_watermark", "must not exceed write_queue_depth");

    std::array<Cycle, std::size(kTimings)> c{};
    for (std::size_t i = 0; i < std::size(kTimings); ++i) {
      const std::string key = std::string("timing.") + kTimings[i].key;
      // JEDEC rounding: the cycle count that covers the time; nCK-defined values are quoted in ns to two
      // decimals, so a value within kRoundingSlack of a whole cycle is that cycle.
      c[i] = static_cast<Cycle>(std::ceil(p.real(key) * 1e-9 * hz - kRoundingSlack));
    }
    t_ = Timing{c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14], c[15], c[16], c[17]};
    if (t_.refi == 0) fail("timing.tREFI", "must be at least one HBM clock");
    // A refresh that lasts as long as its interval leaves no time to activate a row: the channel would never serve
    // a request again (and the run would never end).
    if (!per_bank_refresh_ && t_.rfc >= t_.refi) fail("timing.tRFC", "must be shorter than timing.tREFI (all-bank refresh)");
    if (per_bank_refresh_ && t_.rfc_sb >= t_.refi) fail("timing.tRFCsb", "must be shorter than timing.tREFI (per-bank refresh)");
    t_.ccd_s = std::max<Cycle>(burst_, static_cast<Cycle>(std::llround(t_.ccd_s / interface_speedup)));
    t_.ccd_l = std::max<Cycle>(t_.ccd_s, static_cast<Cycle>(std::llround(t_.ccd_l / interface_speedup)));
    // The activate spacing (tRRD_S/L) and window (tFAW) are counted in clocks too: a faster interface opens rows
    // as much faster, so that a what-if bandwidth also lifts row-miss-bound traffic.
    for (Cycle* act : {&t_.rrd_s, &t_.rrd_l, &t_.faw})
      *act = std::max<Cycle>(1, static_cast<Cycle>(std::llround(static_cast<double>(*act) / interface_speedup)));

    groups_ = hbm.u32("bank_groups");
    banks_.resize(static_cast<std::size_t>(groups_) * hbm.u32("banks_per_group"));
    group_state_.resize(groups_);
    row_wanted_.resize(banks_.size());
    const unsigned stack_ids = p.u32("stack_ids");
    if (groups_ % stack_ids != 0)
      fail("stack_ids", "must divide hbm.bank_groups (" + std::to_string(groups_) + ") evenly: each stack ID holds whole bank groups");
    groups_per_stack_ = groups_ / stack_ids;
    stacks_.resize(stack_ids);
    refresh_interval_ = per_bank_refresh_ ? std::max<Cycle>(1, t_.refi / banks_.size()) : t_.refi;
    // Every channel refreshes at the same times. Staggering them (channel i an i / channels interval later)
    // was tried: a refreshing channel then holds back the warps whose lines it owns while the others run, and a
    // 1024-thread stream fell to 74% of peak on A100 and decode GEMMs to half speed, far below measurement.
    next_refresh_ = refresh_interval_;

    // hbm.latency is the idle latency of a read of a precharged bank (a chase's banks are closed by the
    // refreshes between its visits): tRCD + tCL + one burst at the device's rate are the DRAM's part of it, the
    // rest is controller, PHY and interconnect. A read that meets a refresh, a row conflict or a queue waits more.
    const Cycle core = t_.rcd + t_.cl + (p.u32("burst_length") + 1) / 2;
    const Cycle measured = hbm.u64("latency");
    if (measured < core)
      throw ConfigError(hbm.value("latency").where.str() + ": hbm.latency: " + std::to_string(measured) +
                        " HBM cycles is less than hbm_detailed's DRAM part of an idle read, tRCD + tCL + burst = " +
                        std::to_string(core) + " cycles; hbm.latency is the whole idle read latency beyond the L2");
    fixed_latency_ = measured - core;

    StatGroup(ctx.stats, path(), "hbm")
        .add("row_hits", "requests", "requests whose row was open in their bank", row_hits_)
        .add("row_misses", "requests", "requests to a precharged bank (ACT, no PRE)", row_misses_)
        .add("row_conflicts", "requests", "requests that found another row open (PRE + ACT)", row_conflicts_)
        .ratio("row_hit_rate", "row_hits", "requests", "row-buffer hit rate")
        .add("bus_busy_cycles", "cycles", "HBM cycles the data bus carried bursts", bus_busy_)
        .utilization("bus_utilization", "bus_busy_cycles", hz, "data-bus busy cycles against elapsed HBM cycles")
        .add("read_queue_integral", "request-cycles", "sum over HBM cycles of the read-queue occupancy", read_occupancy_)
        .add("write_queue_integral", "request-cycles", "sum over HBM cycles of the write-queue occupancy", write_occupancy_)
        .utilization("read_queue_occupancy", "read_queue_integral", hz, "average requests in the read queue")
        .utilization("write_queue_occupancy", "write_queue_integral", hz, "average requests in the write queue")
        .add("refreshes", "commands", "refresh commands (REF or REFsb)", refreshes_)
        .add("refresh_stall_cycles", "cycles", "HBM cycles a refresh kept banks (all-bank: all of them) from activating while requests waited", refresh_stall_)
        .add("turnarounds", "switches", "changes of data-bus direction (read to write or write to read)", turnarounds_)
        .add("write_drains", "drains", "write drains started at write_high_watermark", write_drains_);
  }

  Cycle tick(Cycle now) override {
    account_occupancy(now);
    refresh(now);  // before intake: refreshes that fell in an idle stretch are not charged to new requests
    intake();
    choose_direction();
    issue(now);
    intake();  // room freed: let the port's next request in (its senders wait for it)
    return next_wake(now);
  }

  std::string describe_state() const override {
    if (reads_.empty() && writes_.empty() && !queued_requests()) return {};
    return std::to_string(reads_.size()) + " reads and " + std::to_string(writes_.size()) + " writes scheduled, " +
           std::to_string(queued_requests()) + " waiting at the port" + (draining_ ? " (write drain)" : "");
  }

 private:
  enum class RowState : std::uint8_t { Unclassified, Hit, Miss, Conflict };
  struct Entry {
    MemRequest req;
    unsigned bank, group;
    std::uint64_t row;
    std::uint32_t bursts_left;
    RowState state;
  };
  struct Bank {
    std::uint64_t open_row = kNoRow;
    Cycle act_ok = 0, pre_ok = 0, col_ok = 0;
  };
  struct Group {
    Cycle act_ok = 0, col_ok = 0, read_ok = 0;  // tRRD_L, tCCD_L, tWTR_L
  };
  struct Stack {  // one stack ID (die): its ACTs' tRRD_S and tFAW
    Cycle act_ok = 0;
    std::array<Cycle, 4> faw{};  // the last four ACTs, oldest at faw_next
    std::size_t faw_next = 0;
    std::uint64_t acts = 0;
  };

  void account_occupancy(Cycle now) {
    if (now > last_tick_) {
      read_occupancy_ += reads_.size() * (now - last_tick_);
      write_occupancy_ += writes_.size() * (now - last_tick_);
    }
    last_tick_ = now;
  }

  void intake() {
    while (has_request()) {
      const MemRequest& head = next_request();
      const bool write = head.op != MemOp::Read;
      if ((write ? writes_.size() : reads_.size()) >= (write ? write_capacity_ : read_capacity_)) return;
      const MemRequest req = take_request();
      const DramLocation loc = address_map_.dram_location(req.line_addr);
      const unsigned bank = static_cast<unsigned>((loc.bank_group * (banks_.size() / groups_) + loc.bank) % banks_.size());
      const std::uint32_t bursts = std::max<std::uint32_t>(1, (req.bytes + granularity_ - 1) / granularity_);
      (write ? writes_ : reads_).push_back(Entry{req, bank, loc.bank_group % groups_, loc.row, bursts, RowState::Unclassified});
    }
  }

  bool busy() const { return !reads_.empty() || !writes_.empty(); }

  // Refreshes due by now. All-bank: precharge every open bank, then REF blocks every bank for tRFC.
  // Per-bank: REFsb on the next bank in turn blocks it for tRFCsb.
  void refresh(Cycle now) {
    while (next_refresh_ <= now) {
      const Cycle due = next_refresh_;
      next_refresh_ += refresh_interval_;
      // A refresh that fell in an idle stretch long past cannot delay anything: only the latest matters.
      if (next_refresh_ <= now && !busy()) continue;
      ++refreshes_;
      const std::size_t first = per_bank_refresh_ ? refresh_bank_ : 0;
      const std::size_t last = per_bank_refresh_ ? refresh_bank_ + 1 : banks_.size();
      if (per_bank_refresh_) refresh_bank_ = (refresh_bank_ + 1) % banks_.size();
      Cycle start = due;
      for (std::size_t b = first; b < last; ++b) {
        const Bank& bank = banks_[b];
        start = std::max(start, bank.act_ok);
        if (bank.open_row != kNoRow) start = std::max(start, bank.pre_ok + t_.rp);
      }
      const Cycle end = start + (per_bank_refresh_ ? t_.rfc_sb : t_.rfc);
      for (std::size_t b = first; b < last; ++b) {
        banks_[b].open_row = kNoRow;
        banks_[b].act_ok = std::max(banks_[b].act_ok, end);
      }
      if ((busy() || has_request()) && end > now) refresh_stall_ += end - std::max(now, due);
    }
  }

  void choose_direction() {
    if (draining_) {
      if (writes_.empty() || (!reads_.empty() && writes_.size() <= low_watermark_)) draining_ = false;
    } else if (writes_.size() >= high_watermark_ || (reads_.empty() && !writes_.empty())) {
      draining_ = true;
      if (writes_.size() >= high_watermark_) ++write_drains_;
    }
  }

  // Earliest cycle the entry's column command may issue (its row open).
  Cycle column_ready(const Entry& e, bool write) const {
    const Bank& bank = banks_[e.bank];
    const Group& g = group_state_[e.group];
    Cycle t = std::max({bank.col_ok, g.col_ok, col_ok_});
    if (write) {
      t = std::max(t, write_ok_);
      if (bus_free_ > t + t_.wl) t = bus_free_ - t_.wl;
    } else {
      t = std::max({t, read_ok_, g.read_ok});
      if (bus_free_ > t + t_.cl) t = bus_free_ - t_.cl;
    }
    return t;
  }

  const Stack& stack_of(const Entry& e) const { return stacks_[e.group / groups_per_stack_]; }

  Cycle act_ready(const Entry& e) const {
    const Bank& bank = banks_[e.bank];
    const Stack& st = stack_of(e);
    const Cycle faw = st.acts >= st.faw.size() ? st.faw[st.faw_next] + t_.faw : 0;  // the fourth-last ACT's window
    return std::max({bank.act_ok, st.act_ok, group_state_[e.group].act_ok, faw, row_cmd_ok_});
  }
  Cycle pre_ready(const Entry& e) const { return std::max(banks_[e.bank].pre_ok, row_cmd_ok_); }

  // Marks the banks whose open row a request of `q` still wants (first-ready: those rows are not closed).
  void mark_wanted_rows(const std::vector<Entry>& q) {
    std::fill(row_wanted_.begin(), row_wanted_.end(), 0);
    for (const Entry& e : q)
      if (banks_[e.bank].open_row == e.row) row_wanted_[e.bank] = 1;
  }

  // Earliest cycle the entry's next command may issue; `row_command` says whether it is an ACT or PRE.
  // Needs mark_wanted_rows(q) of the current state.
  Cycle next_command(const Entry& e, bool write, bool& row_command) const {
    const Bank& bank = banks_[e.bank];
    row_command = bank.open_row != e.row;
    if (!row_command) return column_ready(e, write);
    if (bank.open_row == kNoRow) return act_ready(e);
    if (row_wanted_[e.bank]) return kSleep;  // first-ready: the open row's requests go first
    return pre_ready(e);
  }

  // ACT or PRE for `e`, whichever its bank needs.
  void row_command(Entry& e, Cycle now) {
    Bank& bank = banks_[e.bank];
    if (bank.open_row == kNoRow) {
      if (e.state == RowState::Unclassified) e.state = RowState::Miss;
      activate(e, now);
    } else {
      e.state = RowState::Conflict;
      precharge(bank, now);
    }
    row_cmd_ok_ = now + 1;
  }

  void issue(Cycle now) {
    std::vector<Entry>& q = draining_ ? writes_ : reads_;
    const bool write = draining_;
    mark_wanted_rows(q);
    // One row command: the oldest request whose ACT or PRE is ready (before the column command, whose
    // request may leave the queue).
    for (Entry& e : q) {
      bool is_row_command = false;
      if (next_command(e, write, is_row_command) > now || !is_row_command) continue;
      row_command(e, now);
      break;
    }
    // One column command: the oldest row hit that is ready.
    for (std::size_t i = 0; i < q.size(); ++i) {
      bool is_row_command = false;
      if (next_command(q[i], write, is_row_command) > now || is_row_command) continue;
      issue_column(q, i, write, now);
      break;
    }
  }

  void activate(const Entry& e, Cycle now) {
    Bank& bank = banks_[e.bank];
    bank.open_row = e.row;
    bank.col_ok = now + t_.rcd;
    bank.pre_ok = now + t_.ras;
    Stack& st = stacks_[e.group / groups_per_stack_];
    st.act_ok = now + t_.rrd_s;
    group_state_[e.group].act_ok = now + t_.rrd_l;
    st.faw[st.faw_next] = now;
    ++st.acts;
    st.faw_next = (st.faw_next + 1) % st.faw.size();
  }

  void precharge(Bank& bank, Cycle at) {
    bank.open_row = kNoRow;
    bank.act_ok = std::max(bank.act_ok, at + t_.rp);
  }

  void issue_column(std::vector<Entry>& q, std::size_t i, bool write, Cycle now) {
    Entry& e = q[i];
    if (e.state == RowState::Unclassified) e.state = RowState::Hit;
    Bank& bank = banks_[e.bank];
    Group& g = group_state_[e.group];
    if (last_was_write_ != write && any_column_) ++turnarounds_;
    any_column_ = true;
    last_was_write_ = write;
    const Cycle data = now + (write ? t_.wl : t_.cl);
    bus_free_ = data + burst_;
    bus_busy_ += burst_;
    col_ok_ = now + t_.ccd_s;
    g.col_ok = now + t_.ccd_l;
    if (write) {
      bank.pre_ok = std::max(bank.pre_ok, bus_free_ + t_.wr);
      read_ok_ = std::max(read_ok_, bus_free_ + t_.wtr_s);
      g.read_ok = std::max(g.read_ok, bus_free_ + t_.wtr_l);
    } else {
      bank.pre_ok = std::max(bank.pre_ok, now + t_.rtp);
      write_ok_ = std::max(write_ok_, now + t_.rtw);
    }
    if (--e.bursts_left > 0) return;
    switch (e.state) {
      case RowState::Hit: ++row_hits_; break;
      case RowState::Miss: ++row_misses_; break;
      default: ++row_conflicts_; break;
    }
    if (!write) respond(e.req, bus_free_ + fixed_latency_);
    if (closed_page_) precharge(bank, bank.pre_ok);  // auto-precharge (RDA/WRA) once the bank allows it
    q.erase(q.begin() + static_cast<std::ptrdiff_t>(i));
  }

  Cycle next_wake(Cycle now) {
    choose_direction();  // issue() may have emptied the direction it served while the other still has work
    if (has_request() && (next_request().op == MemOp::Read ? reads_.size() < read_capacity_ : writes_.size() < write_capacity_))
      return now + 1;
    if (!busy()) return kSleep;  // refreshes in idle time are accounted when the next request wakes the channel
    const std::vector<Entry>& q = draining_ ? writes_ : reads_;
    mark_wanted_rows(q);
    Cycle next = next_refresh_;
    for (const Entry& e : q) {
      bool is_row_command = false;
      next = std::min(next, next_command(e, draining_, is_row_command));
    }
    return std::max(next, now + 1);
  }

  const AddressMap& address_map_;
  std::size_t read_capacity_, write_capacity_, high_watermark_, low_watermark_;
  bool closed_page_, per_bank_refresh_;
  Timing t_{};
  Cycle burst_ = 1, fixed_latency_ = 0;
  std::uint32_t granularity_ = 32;
  unsigned groups_ = 1;
  std::vector<Bank> banks_;
  std::vector<std::uint8_t> row_wanted_;  // per bank, see mark_wanted_rows
  std::vector<Group> group_state_;
  std::vector<Stack> stacks_;
  unsigned groups_per_stack_ = 1;
  std::vector<Entry> reads_, writes_;  // oldest first
  bool draining_ = false, last_was_write_ = false, any_column_ = false;
  Cycle col_ok_ = 0, read_ok_ = 0, write_ok_ = 0, row_cmd_ok_ = 0, bus_free_ = 0;
  Cycle refresh_interval_ = 1, next_refresh_ = 1, last_tick_ = 0;
  std::size_t refresh_bank_ = 0;
  std::uint64_t row_hits_ = 0, row_misses_ = 0, row_conflicts_ = 0, bus_busy_ = 0, read_occupancy_ = 0,
                write_occupancy_ = 0, refreshes_ = 0, refresh_stall_ = 0, turnarounds_ = 0, write_drains_ = 0;
};

WARPSIM_REGISTER_COMPONENT(DramChannel, HbmDetailed, "hbm", "hbm_detailed",
                           "HBM pseudo-channel: banks, row buffers, JEDEC timing, refresh, FR-FCFS with write drains");

}  // namespace
}  // namespace warpsim
