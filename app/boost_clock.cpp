#include "app/boost_clock.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace warpsim {
namespace {

// Energy of simulated part `part` predicted at SM clock f when it then takes `t` seconds:
// SM-side dynamic energy per event scales with V^2, SM clock energy with the cycles and V^2, leakage with V and
// time, constant and HBM background power with time; L2, crossbar and HBM events stay.
double predicted_joules(const BoostPart& part, const PowerParams& p, double f, double t) {
  const EnergyResult& e = *part.energy;
  const double f0 = part.sm_clock_hz, t0 = e.seconds;
  if (t0 <= 0 || t <= 0) return 0.0;
  const double v = p.voltage(f) / p.voltage(f0), s = v * v;
  double joules = 0.0;
  for (const auto& [name, j] : e.breakdown) {
    if (name == "sm_clock") joules += j * (t * f) / (t0 * f0) * s;
    else if (name == "leakage") joules += j / t0 * t * v;
    else if (name == "constant") joules += j / t0 * t;
    else if (name == "hbm") joules += (j - p.hbm_background_w * t0) + p.hbm_background_w * t;
    else if (name == "l2" || name == "noc") joules += j;
    else joules += j * s;
  }
  return joules;
}

// Predictions aim this fraction under the cap: the model (energies rescaled by V/f, time a + b/f) misses a
// re-simulation's power by up to ~1% (H100 bf16 4096^3 from 1980 MHz, 930 W: 1680 MHz predicted at the cap as
// compute-bound, simulated 705.9 W; 1665 MHz predicted under it through the two, simulated 701.4 W), so aiming at
// the cap itself lands a step over it and costs simulations (4 instead of 3 there). The price: where the step
// above the answer would meet the cap by less than this margin, the search stops one step (15 MHz) low.
constexpr double kBoostPredictionMargin = 0.01;

struct Trial {
  double hz = 0.0;
  std::vector<BoostPart> parts;
  double watts = 0.0;  // the workload's average power: weighted joules over weighted seconds
};

double average_watts(const std::vector<BoostPart>& parts) {
  double joules = 0.0, seconds = 0.0;
  for (const BoostPart& part : parts) {
    joules += part.weight * part.energy->joules;
    seconds += part.weight * part.energy->seconds;
  }
  return seconds > 0 ? joules / seconds : 0.0;
}

// Average power at clock f predicted from trial `basis`, each part's time t = a + b/f fitted through its times in
// `basis` and `other` (compute-bound, a = 0, without `other` or where the fit is not physical).
double predicted_watts(const Trial& basis, const Trial* other, const PowerParams& p, double f) {
  double joules = 0.0, seconds = 0.0;
  for (std::size_t i = 0; i < basis.parts.size(); ++i) {
    const BoostPart& part = basis.parts[i];
    const double f0 = basis.hz, t0 = part.energy->seconds;
    double a = 0.0, b = t0 * f0;
    if (other) {
      const double f1 = other->hz, t1 = other->parts[i].energy->seconds;
      const double fitted_b = (t1 - t0) / (1.0 / f1 - 1.0 / f0);
      if (fitted_b >= 0 && t0 - fitted_b / f0 >= 0) {
        b = fitted_b;
        a = t0 - b / f0;
      }
    }
    const double t = a + b / f;
    joules += part.weight * predicted_joules(part, p, f, t);
    seconds += part.weight * t;
  }
  return seconds > 0 ? joules / seconds : 0.0;
}

}  // namespace

std::string sm_clock_override(double hz) {
  return fmt::format("clocks.sm={}Hz", static_cast<std::uint64_t>(std::llround(hz)));
}

BoostSearch search_boost_clock(const PowerParams& p, const std::function<std::vector<BoostPart>(double hz)>& simulate) {
  const double step = p.clock_step_hz, top = p.reference_clock_hz, floor = std::max(step, p.idle_clock_hz);
  std::vector<Trial> trials;
  BoostSearch out;
  auto run_at = [&](double hz) {
    Trial t{hz, simulate(hz), 0.0};
    t.watts = average_watts(t.parts);
    out.clock_search.emplace_back(hz, t.watts);
    trials.push_back(std::move(t));
  };
  run_at(top);
  while (static_cast<int>(trials.size()) < kMaxBoostSimulations) {
    // The fastest trial at or under the cap so far, and the slowest over it: the answer lies between.
    const Trial* under = nullptr;
    const Trial* over = nullptr;
    for (const Trial& t : trials) {
      if (t.watts <= p.cap_w) { if (!under || t.hz > under->hz) under = &t; }
      else if (!over || t.hz < over->hz) over = &t;
    }
    if (!over) break;  // the max boost clock meets the cap
    if (under && over->hz - under->hz <= step * 1.5) break;  // adjacent steps
    // The time model is fitted through `over` and the nearest other trial: `under`, or else the next faster
    // trial over the cap (two points above the answer already show how much of the time follows the SM clock).
    const Trial* other = under;
    for (const Trial& t : trials)
      if (!under && t.hz > over->hz && (!other || t.hz < other->hz)) other = &t;
    const double lowest = under ? under->hz : floor;
    double next = lowest;
    const double target_w = p.cap_w * (1.0 - kBoostPredictionMargin);
    for (double f = over->hz - step; f >= lowest; f -= step)
      if (predicted_watts(*over, other, p, f) <= target_w) { next = f; break; }
    // The prediction through the bracket names `under` itself: no faster step meets the cap.
    if (under && next < under->hz + step / 2) break;
    if (std::any_of(trials.begin(), trials.end(), [&](const Trial& t) { return std::fabs(t.hz - next) < step / 2; })) {
      // Predicted a clock already simulated: step once below the slowest over-cap trial instead.
      next = over->hz - step;
      if (next < floor || (under && next <= under->hz)) break;
    }
    run_at(next);
  }
  bool met = false;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const bool ok = trials[i].watts <= p.cap_w;
    if ((ok && (!met || trials[i].hz > trials[out.chosen].hz)) || (!ok && !met && trials[i].hz < trials[out.chosen].hz)) {
      out.chosen = i;
      met = met || ok;
    }
  }
  return out;
}

}  // namespace warpsim
