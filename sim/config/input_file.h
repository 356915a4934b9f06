// Checks on what users hand warpsim, made before anything is read or parsed, shared by the config loader and the
// trace readers: a named file must be a regular file (a FIFO, /dev/zero or /dev/urandom would hang or exhaust
// memory) within a size limit, and text that ends up in names and results must be UTF-8 (JSON requires it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace warpsim {

// Config files are read whole into memory: the largest shipped one is a few KiB.
inline constexpr std::uint64_t kMaxConfigFileBytes = std::uint64_t{16} << 20;
inline constexpr std::uint64_t kNoSizeLimit = ~std::uint64_t{0};

// "" when `path` names a regular file of at most `max_bytes` (symbolic links followed); otherwise why not, e.g.
// "No such file or directory", "Too many levels of symbolic links", "is a directory", "not a regular file ...".
// Never throws: every filesystem query uses its error_code overload.
std::string input_file_problem(const std::string& path, std::uint64_t max_bytes);

// The whole text of the regular file `path`, at most `max_bytes` (checked before reading by input_file_problem
// and again while reading: the file may grow). The one reader of every file warpsim takes whole (configs,
// reference files, Nsight Compute exports, stats.json and run.json). Throws InputError
// "cannot open WHAT 'PATH': PROBLEM" or "cannot read WHAT 'PATH': PROBLEM", `what` naming the kind of file
// ("config file", "reference file", ...).
std::string read_input_file(const std::string& path, std::uint64_t max_bytes, const std::string& what);

// Offset of the first byte of `text` that is not part of well-formed UTF-8, or npos when it is all UTF-8.
std::size_t first_invalid_utf8(std::string_view text) noexcept;

// "" when `text` is UTF-8 without NUL bytes; otherwise what is wrong ("not UTF-8 (byte 0xe9)"), and the offset of
// the offending byte in `*offset`.
std::string text_problem(std::string_view text, std::size_t& offset);

// `text` for an error message: bytes that are not UTF-8, and control characters, written as \xNN.
std::string printable(std::string_view text);

}  // namespace warpsim
