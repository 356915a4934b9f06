// `warpsim sweep <plan|submit|run-jobs|status|collect>`: design-space sweeps (README.md, "Sweeps").
#pragma once

namespace warpsim {
// argv[0] is "sweep". Returns the exit status (commands.h); throws InputError for bad input.
int cmd_sweep(int argc, char** argv);
}  // namespace warpsim
