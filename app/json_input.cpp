#include "app/json_input.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "sim/core/error.h"

namespace warpsim {

namespace fs = std::filesystem;

std::string read_regular_file(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found)
    throw InputError(fmt::format("cannot open '{}': no such file or directory", path.string()));
  if (ec) throw InputError(fmt::format("cannot open '{}': {}", path.string(), ec.message()));
  if (status.type() != fs::file_type::regular) throw InputError(fmt::format("'{}' is not a regular file", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("cannot open '{}' for reading", path.string()));
  std::ostringstream text;
  if (in.peek() != std::ifstream::traits_type::eof()) text << in.rdbuf();  // an empty file is read as ""
  if (in.bad()) throw InputError(fmt::format("cannot read '{}'", path.string()));
  return text.str();
}

nlohmann::json parse_json_input(const std::string& text, const std::string& where) {
  const auto limit_depth = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxJsonDepth)
      throw InputError(fmt::format("'{}': JSON nested deeper than {} levels (not a warpsim file)", where, kMaxJsonDepth));
    return true;
  };
  try {
    return nlohmann::json::parse(text, limit_depth);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("cannot read '{}': {}", where, e.what()));
  }
}

}  // namespace warpsim
