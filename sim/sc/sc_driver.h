// The SystemC layer: the only code that includes <systemc>. Each clock domain of a Simulation becomes one
// sc_module with one SC_METHOD, woken by an sc_event at the domain's next due cycle. Inside, the domain ticks
// plain C++ components from its timing wheel (see ../shared/docs/DESIGN-GUIDE.md section 1 for why: one
// SystemC process per SM or per scheduler costs 2-15x). SystemC allows one elaboration per process, so this
// may be called once per process.
#pragma once

#include <functional>

#include "sim/core/simulation.h"

namespace warpsim {

// Runs `sim` under the SystemC kernel until `finished()` or until no domain has work. Returns finished().
bool run_with_systemc(Simulation& sim, const std::function<bool()>& finished);

}  // namespace warpsim
