// `validate --plots DIR`: simulated against measured, one scatter plot per category (DIR/<category>.png and
// .svg), drawn by tools/validation/plot_validation.py (python3 with matplotlib) from validate's JSON.
// The script is found as the shipped configs are (app/gpu_configs.h), first match wins:
//   $WARPSIM_TOOLS_DIR/validation/plot_validation.py     when the variable is set, the only place
//   <executable dir>/../share/warpsim/tools/validation/   an installed warpsim (cmake --install)
//   <source tree>/tools/validation/                       a build tree
#pragma once

#include <string>

namespace warpsim {

// The script's path. InputError when it is in none of the places, or when python3 or matplotlib is missing
// (checked by running the script with --check): called before anything is simulated.
std::string check_plotting();

// Draws the plots of `json_file` into `dir` (created when needed). InputError when the script fails.
void draw_validation_plots(const std::string& script, const std::string& json_file, const std::string& dir);

}  // namespace warpsim
