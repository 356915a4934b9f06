// The progress display of long runs: an observer of the run that prints, through spdlog on stderr, how far the
// run is, how long it has taken and an estimate of the time left.
#pragma once

#include <chrono>

#include "models/gpu/run_observer.h"

namespace warpsim {

// At most one line every 3 seconds; quiet during the first seconds, so short runs print nothing.
class ProgressLog final : public RunObserver {
 public:
  void progress(const RunProgress& p) override;

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
};

}  // namespace warpsim
