#include "sim/config/input_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "sim/core/error.h"

namespace warpsim {

namespace fs = std::filesystem;

std::string input_file_problem(const std::string& path, std::uint64_t max_bytes) {
  if (path.empty()) return "empty file name";
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec) return ec.message();
  if (fs::is_directory(status)) return "is a directory";
  if (!fs::is_regular_file(status))
    return "not a regular file (a FIFO, socket or device); warpsim reads configs and traces from regular files only";
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) return ec.message();
  if (size > max_bytes)
    return "file of " + std::to_string(size) + " bytes is larger than the limit of " + std::to_string(max_bytes) +
           " bytes";
  return "";
}

// stdio rather than ifstream: errno then says why ("No such file or directory", "Is a directory").
std::string read_input_file(const std::string& path, std::uint64_t max_bytes, const std::string& what) {
  const std::string named = what + " '" + path + "': ";
  if (const std::string problem = input_file_problem(path, max_bytes); !problem.empty())
    throw InputError("cannot open " + named + problem);
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) throw InputError("cannot open " + named + std::strerror(errno));
  std::string text;
  constexpr std::size_t kReadChunk = 65536;
  char buffer[kReadChunk];
  std::size_t n;
  // Bounded again while reading: the file may have grown since it was checked.
  while (text.size() <= max_bytes && (n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
  const bool failed = std::ferror(file) != 0;
  const int read_errno = errno;  // e.g. EISDIR
  std::fclose(file);
  if (failed) throw InputError("cannot read " + named + std::strerror(read_errno));
  if (text.size() > max_bytes)
    throw InputError("cannot read " + named + "larger than the limit of " + std::to_string(max_bytes) + " bytes");
  return text;
}

std::size_t first_invalid_utf8(std::string_view text) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char lead = byte(i);
    std::size_t length;
    unsigned char min_second = 0x80, max_second = 0xbf;  // overlong forms and surrogates are not UTF-8
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      if (lead == 0xe0) min_second = 0xa0;
      if (lead == 0xed) max_second = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      if (lead == 0xf0) min_second = 0x90;
      if (lead == 0xf4) max_second = 0x8f;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const unsigned char lo = k == 1 ? min_second : 0x80, hi = k == 1 ? max_second : 0xbf;
      if (byte(i + k) < lo || byte(i + k) > hi) return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

namespace {

const char* const kHex = "0123456789abcdef";

std::string hex_escape(unsigned char b) { return std::string("\\x") + kHex[b >> 4] + kHex[b & 0xf]; }

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const std::size_t invalid = std::min(first_invalid_utf8(text), text.size());
    for (const char c : text.substr(0, invalid)) {
      const auto b = static_cast<unsigned char>(c);
      if (b < 0x20 || b == 0x7f) out += hex_escape(b);
      else out += c;
    }
    if (invalid == text.size()) break;
    out += hex_escape(static_cast<unsigned char>(text[invalid]));
    text.remove_prefix(invalid + 1);
  }
  return out;
}

std::string text_problem(std::string_view text, std::size_t& offset) {
  const std::size_t nul = text.find('\0');
  const std::size_t invalid = first_invalid_utf8(text);
  offset = std::min(nul, invalid);
  if (offset == std::string_view::npos) return "";
  if (nul < invalid) return "NUL byte (not a text file?)";
  const auto b = static_cast<unsigned char>(text[invalid]);
  return std::string("not UTF-8 (byte 0x") + kHex[b >> 4] + kHex[b & 0xf] + ")";
}

}  // namespace warpsim
