// Reading JSON that someone hands the application (stats.json and run.json given to `compare`): every problem
// becomes an InputError naming the file, never a crash or an internal error.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace warpsim {

// Deeper nesting than any file warpsim writes (stats.json nests 4 levels) is refused rather than parsed:
// the parser and the document's destructor recurse per level.
inline constexpr int kMaxJsonDepth = 64;

// The text of a regular file. Throws InputError naming `path` when it is missing, not a regular file (a
// directory, a FIFO, /dev/zero), unreadable, or a symlink loop.
std::string read_regular_file(const std::filesystem::path& path);

// `text` parsed, `where` (a file name) naming it in errors: syntax errors and nesting deeper than kMaxJsonDepth.
nlohmann::json parse_json_input(const std::string& text, const std::string& where);

}  // namespace warpsim
