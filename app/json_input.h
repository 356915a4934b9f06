// Reading JSON that someone hands the application (stats.json and run.json given to `compare`): every problem
// becomes an InputError naming the file, never a crash or an internal error.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace warpsim {

// Deeper nesting than any file warpsim writes (stats.json nests 4 levels) is refused rather than parsed:
// the parser and the document's destructor recurse per level.
inline constexpr int kMaxJsonDepth = 64;

// Files of a run directory (stats.json, run.json, timeline.json, ...) are read whole with read_input_file
// (sim/config/input_file.h). warpsim writes each from one string in memory; 1 GiB is far above any it writes and
// keeps a stray multi-gigabyte file from exhausting memory.
inline constexpr std::uint64_t kMaxResultFileBytes = std::uint64_t{1} << 30;

// `text` parsed, `where` (a file name) naming it in errors: syntax errors and nesting deeper than kMaxJsonDepth.
nlohmann::json parse_json_input(const std::string& text, const std::string& where);

}  // namespace warpsim
