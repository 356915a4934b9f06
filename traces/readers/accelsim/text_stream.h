// Sequential byte reader over a plain or xz-compressed file (liblzma, decompressed on the fly, never whole), with
// the two moves the Accel-Sim reader needs: read lines from the start (the indexing pass) and from an offset of the
// decompressed text (one CTA). An offset before the current position restarts the decoder (plain files seek);
// the simulator opens CTAs in file order, so a kernel is decompressed once per pass.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/error.h"

namespace warpsim::accelsim {

// A read or decompression failure; the message says what and where in the text, callers add the file and line.
class TextStreamError : public TraceError {
 public:
  using TraceError::TraceError;
};

class TextStream {
 public:
  // TraceError naming the file when it cannot be opened. xz when the name ends in ".xz".
  explicit TextStream(std::string path);
  ~TextStream();
  TextStream(const TextStream&) = delete;
  TextStream& operator=(const TextStream&) = delete;

  const std::string& path() const noexcept { return path_; }
  bool compressed() const noexcept { return xz_ != nullptr; }
  // Next line without its '\n' (and '\r'); false at the end. A last line without '\n' is returned too.
  bool next_line(std::string& line);
  // Decompressed offset of the next unread byte.
  std::uint64_t position() const noexcept { return position_ - (buffer_end_ - buffer_pos_); }
  // Moves to decompressed offset `offset` (xz: decoding forward, or from the start when it lies behind).
  void seek(std::uint64_t offset);
  void rewind();
  // Bytes of the file read so far (for tests of streaming).
  std::uint64_t compressed_bytes_read() const noexcept { return compressed_read_; }

 private:
  std::size_t fill();  // refills the buffer; returns the bytes now available (0 at the end)
  std::size_t raw_read(char* out, std::size_t max);  // decompressed bytes from the file
  void open();
  void close();

  struct Xz;
  std::string path_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<Xz> xz_;
  std::vector<char> buffer_;
  std::size_t buffer_pos_ = 0, buffer_end_ = 0;
  std::uint64_t position_ = 0;  // decompressed offset of buffer_end_
  std::uint64_t compressed_read_ = 0;
  bool at_end_ = false;
};

}  // namespace warpsim::accelsim
