// Where GPU configs come from. `--gpu h100_sxm` (a name: no path separator, no ".yaml") is a shipped config,
// looked up in the config directories, never in the current directory; anything else is a path.
// The config directories, first match wins:
//   $WARPSIM_CONFIG_DIR                        when set, the only one
//   <executable dir>/../share/warpsim/configs  an installed warpsim (cmake --install)
//   <source tree>/configs                      a build tree
// The same directories serve `base: h100_sxm` in a user's own YAML, wherever that file is.
#pragma once

#include <string>
#include <vector>

#include "sim/config/config.h"

namespace warpsim {

std::vector<std::string> config_dirs();

// <executable dir>/../share/warpsim, where `cmake --install` puts the configs and tools ("" when the
// executable's path cannot be read). It may not exist (a build tree).
std::string installed_share_dir();

// The file a --gpu argument names. InputError with a suggestion when a name matches no shipped config.
std::string resolve_gpu_config(const std::string& name_or_path);

// Loads the config (with --set overrides) and logs which file was used.
Config load_gpu_config(const std::string& name_or_path, const std::vector<std::string>& overrides);

}  // namespace warpsim
