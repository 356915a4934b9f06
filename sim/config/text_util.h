// Internal to sim/config: small string helpers for messages.
#pragma once

#include <string>
#include <vector>

namespace warpsim::config_detail {

inline std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// The text as a message shows a value the user wrote: "twelve" -> "\"twelve\"".
inline std::string quoted(const std::string& text) { return "\"" + text + "\""; }

inline std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

}  // namespace warpsim::config_detail
