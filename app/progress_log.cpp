#include "app/progress_log.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <string>

namespace warpsim {

void ProgressLog::progress(const RunProgress& p) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::seconds(3)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  // The estimate assumes the rest of the run goes at the speed so far, every kernel weighing the same.
  const double f = p.fraction();
  const std::string eta = f > 0.0 ? fmt::format("{:.0f} s", elapsed * (1.0 - f) / f) : std::string("unknown");
  spdlog::info("kernel {}/{}: {:3.0f}% of {} CTAs done, {} SM cycles, {:.1f} M warp-instructions, {:.0f} s elapsed, ETA {}",
               p.kernel + 1, p.kernels, p.ctas ? 100.0 * static_cast<double>(p.ctas_done) / static_cast<double>(p.ctas) : 0.0,
               p.ctas, p.cycle, static_cast<double>(p.warp_instructions) / 1e6, elapsed, eta);
}

}  // namespace warpsim
