// Small string helpers shared by the readers of text formats (one definition each, so that no two files carry
// their own copy).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warpsim::text {

inline bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
// Without the blanks (spaces, tabs, carriage returns: files written on Windows) at either end.
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}
// An address as people write one in messages: 0x1f40.
inline std::string hex(std::uint64_t v) {
  static const char* const kDigits = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[v & 0xf]);
    v >>= 4;
  } while (v);
  return "0x" + out;
}

}  // namespace warpsim::text
