// Peak power over windows (models/power/energy_model.h peak_windowed_power), worked by hand: at a 100 Hz clock a
// span of 100 cycles lasts 1 s, so joules per 100 cycles are watts.
#include <catch2/catch.hpp>

#include "models/power/energy_model.h"

using warpsim::EnergySpan;
using warpsim::peak_windowed_power;

TEST_CASE("peak power: windows laid end to end over uniform spans", "[power]") {
  const std::vector<EnergySpan> spans = {{100, 100.0}, {100, 300.0}};  // 1 s at 100 W, then 1 s at 300 W
  // 1 s windows: [0,1] 100 W, [1,2] 300 W.
  CHECK(*peak_windowed_power(spans, 100, 100.0) == Approx(300.0).epsilon(1e-12));
  // 0.5 s windows inside each span: still 300 W.
  CHECK(*peak_windowed_power(spans, 50, 100.0) == Approx(300.0).epsilon(1e-12));
  // 0.8 s windows: [0,0.8] = 80 J -> 100 W; the remainder [0.8,2] (1.2 s, shorter than two windows) is the last:
  // 20 J of the first span + 300 J of the second = 320 J over 1.2 s.
  CHECK(*peak_windowed_power(spans, 80, 100.0) == Approx(320.0 / 1.2).epsilon(1e-12));
  // A whole shorter than two windows is one window: the caller's average.
  CHECK_FALSE(peak_windowed_power(spans, 101, 100.0).has_value());
  CHECK_FALSE(peak_windowed_power(spans, 1000, 100.0).has_value());
  CHECK_FALSE(peak_windowed_power({}, 10, 100.0).has_value());
}

TEST_CASE("peak power: constant power peaks at itself, and no peak is below the average", "[power]") {
  // 37 spans of 7 cycles at 10 J per 10 cycles = 100 W at 100 Hz, with a zero-length span among them.
  std::vector<EnergySpan> constant(37, EnergySpan{7, 7.0});
  constant.insert(constant.begin() + 5, EnergySpan{0, 0.0});
  for (std::uint64_t w : {1u, 3u, 10u, 64u, 129u})
    CHECK(*peak_windowed_power(constant, w, 100.0) == Approx(100.0).epsilon(1e-12));
  // Uneven power: the windows cover the whole, so the highest is at least the average, whatever the window.
  std::vector<EnergySpan> uneven;
  double joules = 0;
  std::uint64_t cycles = 0;
  for (std::uint64_t i = 1; i <= 40; ++i) {
    uneven.push_back({i % 7 + 1, static_cast<double>((i * 37) % 11)});
    joules += uneven.back().joules;
    cycles += uneven.back().cycles;
  }
  const double average = joules / (static_cast<double>(cycles) / 100.0);
  for (std::uint64_t w = 1; 2 * w <= cycles; ++w) {
    INFO("window " << w);
    CHECK(*peak_windowed_power(uneven, w, 100.0) >= average * (1 - 1e-12));
  }
}
