// A shipped GPU config (configs/NAME.yaml) with overrides, as the unit tests load them.
#pragma once

#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/registry/registry.h"

namespace warpsim::test {

inline Config gpu(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/" + name + ".yaml", overrides, Registry::instance());
}

}  // namespace warpsim::test
