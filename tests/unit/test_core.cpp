// Simulation core: timing wheel, clock-domain time conversions, smart ticking (idle skipping, sleep, wake-ups),
// ports (latency, FIFO order, back-pressure, cross-domain delivery) and the plain C++ multi-domain driver.
// Every expected value below is worked out by hand from the inputs; the arithmetic is in the comments.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include <algorithm>
#include <deque>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/core/clock_domain.h"
#include "sim/core/component.h"
#include "sim/core/port.h"
#include "sim/core/ring_queue.h"
#include "sim/core/simulation.h"
#include "sim/core/timing_wheel.h"
#include "sim/core/types.h"

using namespace warpsim;

namespace {

// A component whose tick records the cycle and then runs a test-supplied function (kSleep when none).
class Probe final : public Component {
 public:
  using Fn = std::function<Cycle(Cycle)>;
  Probe(std::string path, ClockDomain& d, Fn fn = {}) : Component(std::move(path), d), fn(std::move(fn)) {}
  Cycle tick(Cycle now) override {
    ticks.push_back(now);
    return fn ? fn(now) : kSleep;
  }
  Fn fn;
  std::vector<Cycle> ticks;
};

// Runs a simulation until no domain has work left.
void run_all(Simulation& sim) { sim.run([] { return false; }); }

// A timing wheel whose members are registered on first push, in push order.
class TestWheel {
 public:
  void push(Cycle c, Component* p) {
    auto it = index_.find(p);
    if (it == index_.end()) it = index_.emplace(p, wheel_.add_member(p)).first;
    wheel_.push(c, it->second);
  }
  Cycle next_cycle() const { return wheel_.next_cycle(); }
  void take(Cycle c, std::vector<Component*>& out) { wheel_.take(c, out); }
  bool empty() const { return wheel_.empty(); }
  Cycle base() const { return wheel_.base(); }

 private:
  TimingWheel wheel_;
  std::map<Component*, std::uint32_t> index_;
};

// Takes every entry of the wheel in order: (cycle, component) pairs.
std::vector<std::pair<Cycle, Component*>> drain(TestWheel& w) {
  std::vector<std::pair<Cycle, Component*>> got;
  std::vector<Component*> out;
  while (w.next_cycle() != kSleep) {
    const Cycle c = w.next_cycle();
    w.take(c, out);
    for (Component* p : out) got.emplace_back(c, p);
  }
  return got;
}

}  // namespace

// ---- TimingWheel ---------------------------------------------------------------------------------------------

TEST_CASE("timing wheel: empty wheel sleeps, entries come out in cycle order", "[core][wheel]") {
  ClockDomain d("d", 1e9);
  Probe a("a", d), b("b", d), c("c", d);
  TestWheel w;
  CHECK(w.empty());
  CHECK(w.next_cycle() == kSleep);

  w.push(30, &a);
  w.push(10, &b);
  w.push(20, &c);
  CHECK_FALSE(w.empty());
  CHECK(w.next_cycle() == 10);
  const auto got = drain(w);
  const std::vector<std::pair<Cycle, Component*>> want = {{10, &b}, {20, &c}, {30, &a}};
  CHECK(got == want);
  CHECK(w.empty());
  CHECK(w.next_cycle() == kSleep);
  CHECK(w.base() == 30);
}

TEST_CASE("timing wheel: equal-cycle entries come out once each in member order, also from the far heap", "[core][wheel]") {
  ClockDomain d("d", 1e9);
  Probe a("a", d), b("b", d), c("c", d), e("e", d);
  TestWheel w;
  // Near: all in one bucket (members a=0, b=1, c=2 by first push); a second request for a cycle is merged.
  w.push(5, &c);
  w.push(5, &a);
  w.push(5, &b);
  w.push(5, &a);
  std::vector<Component*> out;
  w.take(5, out);
  CHECK(out == std::vector<Component*>{&c, &a, &b});

  // Far (5 + 4096 + 100 = 4201 is more than kBuckets = 4096 ahead of base 5): both wait in the heap, then
  // migrate into the bucket, where member order applies (e = 3 is a new member).
  w.push(4201, &e);
  w.push(4201, &b);
  w.push(4201, &a);
  // Now the wheel moves to 1000: 4201 - 1000 = 3201 < 4096, so the heap entries migrate into the bucket, and
  // near pushes for the same cycle join them; a duplicate of a far entry is merged too.
  w.take(1000, out);
  CHECK(out.empty());
  w.push(4201, &c);
  w.push(4201, &e);
  CHECK(w.next_cycle() == 4201);
  w.take(4201, out);
  CHECK(out == std::vector<Component*>{&c, &a, &b, &e});
  CHECK(w.empty());
}

TEST_CASE("timing wheel: far-future entries migrate and keep their order with near ones", "[core][wheel]") {
  ClockDomain d("d", 1e9);
  Probe a("a", d), b("b", d), c("c", d), e("e", d), f("f", d);
  TestWheel w;
  // base 0. 4096 - 0 is not < kBuckets: exactly kBuckets ahead is already "far".
  w.push(4096, &a);
  w.push(10000, &b);
  w.push(5000, &c);
  w.push(4095, &e);  // last near slot
  w.push(1u << 20, &f);
  CHECK(w.next_cycle() == 4095);
  const auto got = drain(w);
  const std::vector<std::pair<Cycle, Component*>> want = {
      {4095, &e}, {4096, &a}, {5000, &c}, {10000, &b}, {Cycle{1} << 20, &f}};
  CHECK(got == want);
}

TEST_CASE("timing wheel: bitmap scan wraps around the end of the buckets", "[core][wheel]") {
  ClockDomain d("d", 1e9);
  Probe a("a", d), b("b", d), c("c", d), e("e", d);
  TestWheel w;
  std::vector<Component*> out;
  w.push(4090, &a);
  w.take(4090, out);  // base 4090 = slot 4090 (word 63, bit 58)
  REQUIRE(out == std::vector<Component*>{&a});
  // 4100 -> slot 4100 & 4095 = 4 (word 0), 4095 -> slot 4095 (word 63, bit 63), 4096 -> slot 0.
  w.push(4100, &b);
  w.push(4096, &c);
  w.push(4095, &e);
  CHECK(w.next_cycle() == 4095);
  w.take(4095, out);
  CHECK(out == std::vector<Component*>{&e});
  CHECK(w.next_cycle() == 4096);
  w.take(4096, out);
  CHECK(out == std::vector<Component*>{&c});
  CHECK(w.next_cycle() == 4100);
  w.take(4100, out);
  CHECK(out == std::vector<Component*>{&b});

  // base 4100 = slot 4 (word 0, bit 4). 8194 - 4100 = 4094 < 4096 -> near, slot 8194 & 4095 = 2: in the first
  // word but *before* the base bit, i.e. the wrapped part scanned last. 4200 -> slot 104 (word 1).
  w.push(8194, &a);
  CHECK(w.next_cycle() == 8194);
  w.push(4200, &b);
  CHECK(w.next_cycle() == 4200);
  w.take(4200, out);
  CHECK(out == std::vector<Component*>{&b});
  CHECK(w.next_cycle() == 8194);
  w.take(8194, out);
  CHECK(out == std::vector<Component*>{&a});
  CHECK(w.next_cycle() == kSleep);
}

TEST_CASE("timing wheel: a long run of pushes and takes across many wraps stays ordered", "[core][wheel]") {
  // 410 entries at 600, 1600, ..., 409600 (= 100 * 4096), pushed latest first, so that all but the first four
  // wait in the far heap and migrate as the wheel passes about 100 wraps; they must come out in cycle order.
  ClockDomain d("d", 1e9);
  Probe a("a", d);
  TestWheel w;
  std::vector<Cycle> expect;
  for (int k = 0; k < 410; ++k) {
    const Cycle c = 409600 - 1000 * static_cast<Cycle>(k);
    w.push(c, &a);
    expect.push_back(c);
  }
  std::sort(expect.begin(), expect.end());
  std::vector<Cycle> got;
  std::vector<Component*> out;
  while (w.next_cycle() != kSleep) {
    const Cycle c = w.next_cycle();
    w.take(c, out);
    for (std::size_t i = 0; i < out.size(); ++i) got.push_back(c);
  }
  CHECK(got == expect);
  CHECK(got.front() == 600);
  CHECK(got.size() == 410);
}

// ---- ClockDomain time conversions ----------------------------------------------------------------------------

TEST_CASE("clock domain: time_of is floor(c * 1e15 / f) femtoseconds", "[core][clock]") {
  ClockDomain sm("sm", 1.83e9), hbm("hbm", 2.619e9), ghz("ghz", 1e9);
  CHECK(sm.frequency_hz() == 1830000000u);
  CHECK(hbm.frequency_hz() == 2619000000u);
  // 1.83 GHz: c * 1e15 / 1.83e9 = c * 1e8 / 183
  CHECK(sm.time_of(0) == 0);
  CHECK(sm.time_of(1) == 546448);            // 1e8 / 183 = 546448 r 16
  CHECK(sm.time_of(2) == 1092896);           // 2e8 / 183 = 1092896 r 32
  CHECK(sm.time_of(183) == 100000000);       // 183 cycles = exactly 100 ns
  CHECK(sm.time_of(1000) == 546448087);      // 1e11 / 183 = 546448087 r 79
  CHECK(sm.time_of(1000000000000ull) == 546448087431693989ull);  // 1e20 / 183 r 13: needs 128-bit products
  // 2.619 GHz: c * 1e9 / 2619
  CHECK(hbm.time_of(1) == 381825);           // 1e9 / 2619 = 381825 r 325
  CHECK(hbm.time_of(131) == 50019091);       // 131e9 / 2619 = 50019091 r 671
  CHECK(hbm.time_of(2619) == 1000000000);    // 2619 cycles = exactly 1 us
  CHECK(hbm.time_of(1000) == 381825124);     // 1e12 / 2619 = 381825124 r 244
  // 1 GHz: 1e6 fs per cycle
  CHECK(ghz.time_of(1) == 1000000);
  CHECK(ghz.time_of(123456) == 123456000000ull);
}

TEST_CASE("clock domain: cycle_at_or_before / cycle_at_or_after at and around edges", "[core][clock]") {
  ClockDomain sm("sm", 1.83e9), hbm("hbm", 2.619e9), ghz("ghz", 1e9);
  SECTION("round trips: a cycle's own start time maps back to it") {
    for (Cycle c : {Cycle{0}, Cycle{1}, Cycle{2}, Cycle{182}, Cycle{183}, Cycle{184}, Cycle{1000}, Cycle{999999},
                    Cycle{1000000000000ull}}) {
      CAPTURE(c);
      CHECK(sm.cycle_at_or_before(sm.time_of(c)) == c);
      CHECK(sm.cycle_at_or_after(sm.time_of(c)) == c);
      CHECK(hbm.cycle_at_or_before(hbm.time_of(c)) == c);
      CHECK(hbm.cycle_at_or_after(hbm.time_of(c)) == c);
      CHECK(ghz.cycle_at_or_before(ghz.time_of(c)) == c);
      CHECK(ghz.cycle_at_or_after(ghz.time_of(c)) == c);
    }
  }
  SECTION("1 fs after an edge is still that cycle (before) / the next one (after); 1 fs before is the previous") {
    // sm cycle 1000 starts at 546448087 fs.
    CHECK(sm.cycle_at_or_before(546448087) == 1000);
    CHECK(sm.cycle_at_or_before(546448088) == 1000);
    CHECK(sm.cycle_at_or_before(546448086) == 999);
    CHECK(sm.cycle_at_or_after(546448087) == 1000);
    CHECK(sm.cycle_at_or_after(546448088) == 1001);
    CHECK(sm.cycle_at_or_after(546448086) == 1000);
    // Last fs of sm cycle 1: cycle 2 starts at 1092896.
    CHECK(sm.cycle_at_or_before(1092895) == 1);
    CHECK(sm.cycle_at_or_after(1092895) == 2);
    // hbm cycle 131 starts at 50019091 fs.
    CHECK(hbm.cycle_at_or_before(50019091) == 131);
    CHECK(hbm.cycle_at_or_before(50019090) == 130);
    CHECK(hbm.cycle_at_or_after(50019090) == 131);
    CHECK(hbm.cycle_at_or_after(50019092) == 132);
    // 1 GHz: 5 ns = cycle 5 exactly; 5 ns + 1 fs
    CHECK(ghz.cycle_at_or_before(5000000) == 5);
    CHECK(ghz.cycle_at_or_after(5000000) == 5);
    CHECK(ghz.cycle_at_or_before(5000001) == 5);
    CHECK(ghz.cycle_at_or_after(5000001) == 6);
    CHECK(ghz.cycle_at_or_before(4999999) == 4);
    // Time zero.
    CHECK(sm.cycle_at_or_before(0) == 0);
    CHECK(sm.cycle_at_or_after(0) == 0);
    CHECK(hbm.cycle_at_or_after(1) == 1);
  }
  SECTION("between two domains") {
    // sm cycle 100 starts at 1e10/183 = 54644808 fs. In 2.619 GHz: 54644808e-15 s * 2.619e9 = 143.11 -> cycle
    // 143 is in progress (starts 54600992 fs), 144 starts after (54982817 fs).
    const TimeFs t = sm.time_of(100);
    CHECK(t == 54644808);
    CHECK(hbm.cycle_at_or_before(t) == 143);
    CHECK(hbm.cycle_at_or_after(t) == 144);
    // sm cycle 183 = 100 ns = 261.9 hbm cycles -> 261 / 262.
    CHECK(hbm.cycle_at_or_before(sm.time_of(183)) == 261);
    CHECK(hbm.cycle_at_or_after(sm.time_of(183)) == 262);
    // hbm 2619 = 1 us = sm 1830 exactly (both domains have an edge there) = 1 GHz cycle 1000.
    CHECK(sm.cycle_at_or_before(hbm.time_of(2619)) == 1830);
    CHECK(sm.cycle_at_or_after(hbm.time_of(2619)) == 1830);
    CHECK(ghz.cycle_at_or_before(hbm.time_of(2619)) == 1000);
    // hbm cycle 1000 = 381825124 fs -> sm: 381825124e-15 * 1.83e9 = 698.74 -> 698 / 699.
    CHECK(sm.cycle_at_or_before(hbm.time_of(1000)) == 698);
    CHECK(sm.cycle_at_or_after(hbm.time_of(1000)) == 699);
  }
}

// ---- Components: smart ticking ---------------------------------------------------------------------------------

TEST_CASE("components are ticked exactly at the cycles they ask for, idle cycles cost nothing", "[core][tick]") {
  SECTION("every 1000 cycles over 1e6 cycles -> 1000 ticks") {
    Simulation sim;
    ClockDomain& d = sim.add_domain("d", 1.83e9);
    Probe p("p", d, [](Cycle now) { return now + 1000 < 1000000 ? now + 1000 : kSleep; });
    p.wake_at(0);
    run_all(sim);
    REQUIRE(p.ticks.size() == 1000);  // 0, 1000, ..., 999000
    for (std::size_t i = 0; i < p.ticks.size(); ++i) REQUIRE(p.ticks[i] == i * 1000);
    CHECK(d.ticks() == 1000);
    CHECK(d.active_cycles() == 1000);
    CHECK(d.now() == 999000);
    CHECK(p.ticks.back() == 999000);
    CHECK(d.next_cycle() == kSleep);
  }
  SECTION("two components with periods 3 and 5: ticks add up, active cycles are the union") {
    Simulation sim;
    ClockDomain& d = sim.add_domain("d", 1e9);
    Probe a("a", d, [](Cycle now) { return now + 3 < 30 ? now + 3 : kSleep; });  // 0,3,...,27: 10 ticks
    Probe b("b", d, [](Cycle now) { return now + 5 < 30 ? now + 5 : kSleep; });  // 0,5,...,25: 6 ticks
    a.wake_at(0);
    b.wake_at(0);
    run_all(sim);
    CHECK(a.ticks == std::vector<Cycle>{0, 3, 6, 9, 12, 15, 18, 21, 24, 27});
    CHECK(b.ticks == std::vector<Cycle>{0, 5, 10, 15, 20, 25});
    CHECK(d.ticks() == 16);
    // Union: 10 multiples of 3 + 6 multiples of 5 - {0, 15} counted twice = 14 cycles.
    CHECK(d.active_cycles() == 14);
  }
}

TEST_CASE("a sleeping component is ticked again only when woken, from another component or domain", "[core][tick]") {
  Simulation sim;
  ClockDomain& d = sim.add_domain("d", 1e9);
  ClockDomain& other = sim.add_domain("other", 2.619e9);
  Probe a("a", d);  // always sleeps
  Probe b("b", d);
  Probe x("x", other);
  b.fn = [&](Cycle now) -> Cycle {
    if (now == 0) return 50;
    if (now == 50) a.wake_at(70);  // same domain, a later cycle
    return kSleep;
  };
  x.fn = [&](Cycle now) -> Cycle {
    if (now == 0) return 2619;  // 1 us
    // From the other domain: wake a one cycle after the cycle in progress in a's domain. 2619 hbm cycles = 1 us =
    // cycle 1000 of the 1 GHz domain -> 1001.
    a.wake_at(d.cycle_at_or_before(other.time_of(now)) + 1);
    return kSleep;
  };
  a.wake_at(0);
  b.wake_at(0);
  x.wake_at(0);
  run_all(sim);
  CHECK(a.ticks == std::vector<Cycle>{0, 70, 1001});
  CHECK(b.ticks == std::vector<Cycle>{0, 50});
  CHECK(x.ticks == std::vector<Cycle>{0, 2619});
  CHECK(d.ticks() == 5);
  CHECK(other.ticks() == 2);
}

TEST_CASE("every wake request stands, and requests for the same cycle tick once", "[core][tick]") {
  Simulation sim;
  ClockDomain& d = sim.add_domain("d", 1e9);
  Probe a("a", d);
  Probe b("b", d);
  a.fn = [&](Cycle now) -> Cycle {
    if (now == 0) return 100;  // asks for 100; is woken earlier at 40 and 20 as well
    if (now == 20) return 25;  // 25 was already requested by b: still one tick at 25
    return kSleep;
  };
  b.fn = [&](Cycle now) -> Cycle {
    if (now == 0) return 10;
    // At 10: 20 three times, then 25, then 20 again (this one does reach the domain, as the last request was
    // 25), then 40.
    a.wake_at(20);
    a.wake_at(20);
    a.wake_at(20);
    a.wake_at(25);
    a.wake_at(20);
    a.wake_at(40);
    return kSleep;
  };
  a.wake_at(0);
  b.wake_at(0);
  b.wake_at(0);  // spurious duplicate before the run
  run_all(sim);
  CHECK(a.ticks == std::vector<Cycle>{0, 20, 25, 40, 100});
  CHECK(b.ticks == std::vector<Cycle>{0, 10});
  CHECK(d.ticks() == 7);
  CHECK(d.active_cycles() == 6);  // 0, 10, 20, 25, 40, 100
}

TEST_CASE("a domain ticks the components due in a cycle in construction order, whoever asked first", "[core][tick]") {
  Simulation sim;
  ClockDomain& d = sim.add_domain("d", 1e9);
  std::vector<std::string> order;
  Probe a("a", d), b("b", d), c("c", d);  // construction order a, b, c
  auto rec = [&](Probe& p) { return [&order, &p](Cycle) { order.push_back(p.path()); return kSleep; }; };
  a.fn = rec(a);
  b.fn = rec(b);
  c.fn = rec(c);
  c.wake_at(7);
  a.wake_at(7);
  b.wake_at(7);
  b.wake_at(9);
  c.wake_at(9);
  run_all(sim);
  CHECK(order == std::vector<std::string>{"a", "b", "c", "b", "c"});
  CHECK(a.order() < b.order());
  CHECK(b.order() < c.order());
}

// ---- Port ------------------------------------------------------------------------------------------------------

TEST_CASE("port: latency counts receiver cycles, same domain", "[core][port]") {
  Simulation sim;
  ClockDomain& d = sim.add_domain("d", 1e9);
  Port<int> port("p", 3, 8);
  Probe tx("tx", d), rx("rx", d);
  port.bind(&tx, &rx);
  std::vector<std::tuple<Cycle, int>> got;
  std::vector<std::pair<Cycle, bool>> ready_seen;
  tx.fn = [&](Cycle now) -> Cycle {
    port.send(static_cast<int>(now));  // sent at 10 and 11
    return now == 10 ? 11 : kSleep;
  };
  rx.fn = [&](Cycle now) -> Cycle {
    ready_seen.emplace_back(now, port.ready());
    while (port.ready()) {
      got.emplace_back(now, port.front());
      port.pop();
    }
    return kSleep;
  };
  tx.wake_at(10);
  rx.wake_at(12);  // one cycle before the first delivery: nothing ready yet
  run_all(sim);
  // Sent at 10 with latency 3 -> ready at 13; sent at 11 -> 14.
  CHECK(got == std::vector<std::tuple<Cycle, int>>{{13, 10}, {14, 11}});
  CHECK(ready_seen == std::vector<std::pair<Cycle, bool>>{{12, false}, {13, true}, {14, true}});
  CHECK(rx.ticks == std::vector<Cycle>{12, 13, 14});
  CHECK(port.messages_sent() == 2);
  CHECK(port.occupancy() == 0);
  CHECK(port.front_ready() == kSleep);
}

TEST_CASE("port: latency in receiver cycles across clock domains", "[core][port]") {
  Simulation sim;
  ClockDomain& sm = sim.add_domain("sm", 1.83e9);
  ClockDomain& hbm = sim.add_domain("hbm", 2.619e9);
  SECTION("1.83 GHz -> 2.619 GHz") {
    Port<int> port("p", 2, 4);
    Probe tx("tx", sm), rx("rx", hbm);
    port.bind(&tx, &rx);
    std::vector<std::pair<Cycle, bool>> seen;
    tx.fn = [&](Cycle) {
      port.send(7);
      return kSleep;
    };
    rx.fn = [&](Cycle now) {
      seen.emplace_back(now, port.ready());
      if (port.ready()) port.pop();
      return kSleep;
    };
    tx.wake_at(100);  // 54644808 fs: hbm cycle 143 in progress (see the conversion test) -> + 2 = 145
    rx.wake_at(144);
    run_all(sim);
    CHECK(seen == std::vector<std::pair<Cycle, bool>>{{144, false}, {145, true}});
    CHECK(hbm.time_of(145) > sm.time_of(100));
  }
  SECTION("2.619 GHz -> 1.83 GHz") {
    Port<int> port("p", 1, 4);
    Probe tx("tx", hbm), rx("rx", sm);
    port.bind(&tx, &rx);
    std::vector<Cycle> got;
    tx.fn = [&](Cycle) {
      port.send(1);
      return kSleep;
    };
    rx.fn = [&](Cycle now) {
      if (port.ready()) {
        got.push_back(now);
        port.pop();
      }
      return kSleep;
    };
    tx.wake_at(1000);  // 381825124 fs = sm cycle 698.74 -> 698 in progress -> + 1 = 699
    run_all(sim);
    CHECK(got == std::vector<Cycle>{699});
    CHECK(rx.ticks == std::vector<Cycle>{699});
  }
}

TEST_CASE("port: capacity back-pressure, a pop wakes the blocked sender in the next cycle", "[core][port]") {
  Simulation sim;
  ClockDomain& d = sim.add_domain("d", 1e9);
  Port<int> port("p", 1, 2);
  Probe tx("tx", d), rx("rx", d);
  port.bind(&tx, &rx);
  int next = 0;
  std::vector<bool> can_send_after_fill;
  std::vector<std::pair<Cycle, int>> got;
  tx.fn = [&](Cycle) -> Cycle {
    while (next < 6 && port.can_send()) port.send(next++);
    can_send_after_fill.push_back(port.can_send());
    return kSleep;  // woken by the receiver's pop
  };
  rx.fn = [&](Cycle now) -> Cycle {
    if (now < 5) return 5;  // does not drain before cycle 5
    if (port.ready()) {
      got.emplace_back(now, port.front());
      port.pop();
    }
    return port.occupancy() ? now + 1 : kSleep;
  };
  tx.wake_at(0);
  run_all(sim);
  // c0: tx sends 0 and 1 (ready at 1), port full -> sleeps. rx at 1 waits until 5. From 5 on rx pops one per
  // cycle; each pop of a full port wakes tx in the next cycle, which refills it. Whatever the order within a
  // cycle, the receiver gets one message per cycle: 0..5 at 5..10, in order.
  CHECK(got == std::vector<std::pair<Cycle, int>>{{5, 0}, {6, 1}, {7, 2}, {8, 3}, {9, 4}, {10, 5}});
  REQUIRE(tx.ticks.size() >= 2);
  CHECK(tx.ticks[0] == 0);
  CHECK(tx.ticks[1] == 6);  // not ticked while blocked (cycles 1..5), woken by the pop at 5
  CHECK(can_send_after_fill.front() == false);
  CHECK(next == 6);
  CHECK(port.messages_sent() == 6);
}

TEST_CASE("port: send_at delivers at the first receiver edge at or after a time, never before now + 1", "[core][port]") {
  Simulation sim;
  ClockDomain& ghz = sim.add_domain("ghz", 1e9);
  ClockDomain& hbm = sim.add_domain("hbm", 2.619e9);
  Port<int> port("p", 1, 16);
  Probe tx("tx", ghz), rx("rx", hbm);
  port.bind(&tx, &rx);
  std::vector<std::pair<Cycle, int>> got;
  tx.fn = [&](Cycle now) -> Cycle {
    const TimeFs t = ghz.time_of(now);  // cycle 10 = 10,000,000 fs = hbm 26.19 -> 26 in progress
    port.send_at(1, 50000001, t);       // hbm 131 starts at 50019091 >= 50000001, 130 at 49637266 < it -> 131
    port.send_at(2, hbm.time_of(131), t);      // exactly on edge 131 -> 131
    port.send_at(3, hbm.time_of(131) + 1, t);  // 1 fs after the edge -> 132
    port.send_at(4, 0, t);                     // earliest in the past -> 26 + 1 = 27, but FIFO behind 3 -> 132
    return kSleep;
  };
  rx.fn = [&](Cycle now) -> Cycle {
    while (port.ready()) {
      got.emplace_back(now, port.front());
      port.pop();
    }
    return kSleep;
  };
  tx.wake_at(10);
  run_all(sim);
  CHECK(got == std::vector<std::pair<Cycle, int>>{{131, 1}, {131, 2}, {132, 3}, {132, 4}});

  SECTION("the 'at least one receiver cycle after now' floor") {
    Simulation sim2;
    ClockDomain& g2 = sim2.add_domain("ghz", 1e9);
    ClockDomain& h2 = sim2.add_domain("hbm", 2.619e9);
    Port<int> p2("p2", 1, 4);
    Probe t2("tx", g2), r2("rx", h2);
    p2.bind(&t2, &r2);
    t2.fn = [&](Cycle now) {
      p2.send_at(9, 0, g2.time_of(now));
      return kSleep;
    };
    Cycle at = 0;
    r2.fn = [&](Cycle now) {
      if (p2.ready()) {
        at = now;
        p2.pop();
      }
      return kSleep;
    };
    t2.wake_at(10);
    run_all(sim2);
    CHECK(at == 27);  // 1 GHz cycle 10 = 10 ns = 26.19 hbm cycles -> 26 + 1
  }
}

TEST_CASE("port: FIFO order holds when a later message could arrive earlier", "[core][port]") {
  Simulation sim;
  ClockDomain& d = sim.add_domain("d", 1e9);
  Port<int> port("p", 1, 16);
  Probe tx("tx", d), rx("rx", d);
  port.bind(&tx, &rx);
  std::vector<std::pair<Cycle, int>> got;
  tx.fn = [&](Cycle now) -> Cycle {
    port.send_at(1, d.time_of(now + 50), d.time_of(now));  // -> 50
    port.send(2);                                           // latency 1 -> 1, but behind message 1 -> 50
    port.send_at(3, d.time_of(now + 60), d.time_of(now));  // -> 60
    return kSleep;
  };
  rx.fn = [&](Cycle now) -> Cycle {
    while (port.ready()) {
      got.emplace_back(now, port.front());
      port.pop();
    }
    return kSleep;
  };
  tx.wake_at(0);
  run_all(sim);
  CHECK(got == std::vector<std::pair<Cycle, int>>{{50, 1}, {50, 2}, {60, 3}});
}

// ---- Simulation::run across three domains ----------------------------------------------------------------------

namespace {

struct TickRecord {
  TimeFs time;
  std::string who;
  Cycle cycle;
  int payload;
  bool operator==(const TickRecord& o) const {
    return time == o.time && who == o.who && cycle == o.cycle && payload == o.payload;
  }
};

// Three domains in a ring of ports: each node ticks with its own period, sends a counter to the next domain's
// node and forwards what it receives. Returns the log of every tick.
std::vector<TickRecord> run_ring(std::vector<std::string>* domain_order_at_1us = nullptr) {
  Simulation sim;
  ClockDomain& a = sim.add_domain("a", 1.83e9);
  ClockDomain& b = sim.add_domain("b", 2.619e9);
  ClockDomain& c = sim.add_domain("c", 1e9);
  std::vector<TickRecord> log;
  Port<int> ab("ab", 3, 4), bc("bc", 2, 4), ca("ca", 5, 4);
  struct Node {
    std::unique_ptr<Probe> probe;
    Port<int>* in;
    Port<int>* out;
    Cycle period;
    int sent = 0;
  };
  std::vector<Node> nodes(3);
  ClockDomain* doms[3] = {&a, &b, &c};
  Port<int>* ins[3] = {&ca, &ab, &bc};
  Port<int>* outs[3] = {&ab, &bc, &ca};
  const Cycle periods[3] = {7, 11, 3};
  const char* names[3] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) {
    nodes[i].probe = std::make_unique<Probe>(names[i], *doms[i]);
    nodes[i].in = ins[i];
    nodes[i].out = outs[i];
    nodes[i].period = periods[i];
  }
  for (int i = 0; i < 3; ++i) outs[i]->bind(nodes[i].probe.get(), nodes[(i + 1) % 3].probe.get());
  for (int i = 0; i < 3; ++i) {
    Node& n = nodes[i];
    ClockDomain& dom = *doms[i];
    n.probe->fn = [&n, &dom, &log, domain_order_at_1us](Cycle now) -> Cycle {
      int payload = -1;
      while (n.in->ready()) {
        payload = n.in->front();
        n.in->pop();
      }
      log.push_back(TickRecord{dom.time_of(now), n.probe->path(), now, payload});
      if (domain_order_at_1us && dom.time_of(now) == 1000000000) domain_order_at_1us->push_back(dom.name());
      if (n.out->can_send() && n.sent < 200) n.out->send(n.sent++);
      // Everyone also has a tick at exactly 1 us (a: 1830, b: 2619, c: 1000) to check the order within a time.
      const Cycle at_1us = dom.cycle_at_or_after(1000000000);
      Cycle next = now + n.period;
      if (now < at_1us && next > at_1us) next = at_1us;
      return n.sent < 200 || n.in->occupancy() || now < at_1us ? next : kSleep;
    };
    n.probe->wake_at(0);
  }
  sim.run([] { return false; });
  return log;
}

}  // namespace

TEST_CASE("simulation: three domains run deterministically and in global time order", "[core][simulation]") {
  std::vector<std::string> order1, order2;
  const std::vector<TickRecord> first = run_ring(&order1);
  const std::vector<TickRecord> second = run_ring(&order2);
  REQUIRE(first.size() > 600);  // 200 sends per node at least
  CHECK(first == second);
  // Global time never goes backwards.
  for (std::size_t i = 1; i < first.size(); ++i) {
    CAPTURE(i, first[i - 1].time, first[i].time, first[i].who);
    REQUIRE(first[i - 1].time <= first[i].time);
  }
  // Within one time step, domains run in the order they were added.
  CHECK(order1 == std::vector<std::string>{"a", "b", "c"});
  CHECK(order2 == order1);
  // Each node's own ticks are at strictly increasing cycles.
  for (const char* who : {"a", "b", "c"}) {
    Cycle last = 0;
    bool any = false;
    for (const auto& r : first)
      if (r.who == who) {
        if (any) CHECK(r.cycle > last);
        last = r.cycle;
        any = true;
      }
    CHECK(any);
  }
  // Messages arrive in FIFO order: the payloads each node sees are increasing.
  for (const char* who : {"a", "b", "c"}) {
    int last = -1;
    for (const auto& r : first)
      if (r.who == who && r.payload >= 0) {
        CHECK(r.payload > last);
        last = r.payload;
      }
    CHECK(last == 199);  // the last message of the node before it in the ring got through
  }
}

TEST_CASE("simulation: run stops when finished() says so, and next_time is the earliest domain edge", "[core][simulation]") {
  Simulation sim;
  ClockDomain& a = sim.add_domain("a", 1.83e9);
  ClockDomain& b = sim.add_domain("b", 2.619e9);
  CHECK(sim.find_domain("b") == &b);
  CHECK(sim.find_domain("zz") == nullptr);
  CHECK(sim.next_time() == kTimeNever);
  Probe pa("pa", a, [](Cycle now) { return now + 1; });  // would run forever
  Probe pb("pb", b);
  pa.wake_at(10);  // 10 * 546448.08 = 5464480 fs
  pb.wake_at(14);  // 14 * 381825.12 = 5345551 fs: earlier
  CHECK(sim.next_time() == b.time_of(14));
  CHECK(sim.next_time() == 5345551);
  const bool done = sim.run([&] { return pa.ticks.size() >= 5; });
  CHECK(done);
  CHECK(pa.ticks == std::vector<Cycle>{10, 11, 12, 13, 14});
  CHECK(pb.ticks == std::vector<Cycle>{14});
  CHECK(a.next_cycle() == 15);
}

TEST_CASE("clock domain: cycle_at_or_after is the first cycle starting at or after a time, at random times", "[core][clock]") {
  // Against the definition through time_of (exact): time_of(c) >= t > time_of(c - 1), for odd frequencies,
  // times near cycle edges and times large enough that t x den leaves 64 bits.
  std::mt19937_64 rng(7);
  for (double hz : {1.83e9, 2.619e9, 1e9, 1.41e9, 1.755e9, 3.3e8, 999999937.0}) {
    ClockDomain d("d", hz);
    for (int i = 0; i < 2000; ++i) {
      const Cycle edge = rng() % (i % 2 ? 1000000000000000ull : 1000000ull);
      const TimeFs t = d.time_of(edge) + (rng() % 3) - 1 + (edge == 0 ? 1 : 0);
      const Cycle c = d.cycle_at_or_after(t);
      CAPTURE(hz, t, c);
      CHECK(d.time_of(c) >= t);
      if (c > 0) CHECK(d.time_of(c - 1) < t);
    }
  }
}

TEST_CASE("ring queue: first in, first out across wrap-around and growth, against std::deque", "[core]") {
  // Random pushes and pops (more pushes than pops, so it grows while its contents wrap around the ring's end),
  // compared element by element, front, back and iteration order, with std::deque.
  std::mt19937_64 rng(11);
  RingQueue<std::uint64_t> ring;
  std::deque<std::uint64_t> ref;
  for (int step = 0; step < 20000; ++step) {
    if (rng() % 5 < 3 || ref.empty()) {
      const std::uint64_t v = rng();
      ring.push_back(v);
      ref.push_back(v);
    } else {
      REQUIRE(ring.front() == ref.front());
      ring.pop_front();
      ref.pop_front();
    }
    REQUIRE(ring.size() == ref.size());
    if (!ref.empty()) {
      REQUIRE(ring.back() == ref.back());
      REQUIRE(ring[ref.size() / 2] == ref[ref.size() / 2]);
    }
    if (step % 997 == 0) REQUIRE(std::equal(ring.begin(), ring.end(), ref.begin(), ref.end()));
  }
  ring.clear();
  CHECK(ring.empty());
  ring.push_back(5);
  CHECK(ring.front() == 5);
  // Elements that own memory are released when popped.
  RingQueue<std::shared_ptr<int>> owners;
  auto p = std::make_shared<int>(1);
  owners.push_back(p);
  CHECK(p.use_count() == 2);
  owners.pop_front();
  CHECK(p.use_count() == 1);
}
