#include "app/json_input.h"

#include <fmt/format.h>

#include "sim/core/error.h"

namespace warpsim {

nlohmann::json parse_json_input(const std::string& text, const std::string& where) {
  const auto limit_depth = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxJsonDepth)
      throw InputError(fmt::format("'{}': JSON nested deeper than {} levels (not a warpsim file)", where, kMaxJsonDepth));
    return true;
  };
  try {
    return nlohmann::json::parse(text, limit_depth);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number beyond a double
    throw InputError(fmt::format("cannot read '{}': {}", where, e.what()));
  }
}

}  // namespace warpsim
