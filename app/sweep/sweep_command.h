// `warpsim sweep <plan|submit|run-jobs|status|collect>`: design-space sweeps (README.md, "Sweeps").
#pragma once

namespace warpsim {
// argv[0] is "sweep". Returns the exit status (commands.h); throws InputError for bad input.
int cmd_sweep(int argc, char** argv);
// `warpsim report RUN_DIR... -o report.html` (app/sweep/sweep_report.h).
int cmd_report(int argc, char** argv);
}  // namespace warpsim
