#include "traces/readers/accelsim/text_stream.h"

#include <lzma.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "sim/core/error.h"
#include "sim/core/text.h"

namespace warpsim::accelsim {

namespace {
constexpr std::size_t kBufferBytes = 1 << 16;
// The longest trace line is an instruction with 32 listed addresses (under 1 KB): a longer one is not a trace,
// and reading it whole would load the file whole.
constexpr std::size_t kMaxLineBytes = 1 << 20;

const char* lzma_problem(lzma_ret r) {
  switch (r) {
    case LZMA_MEM_ERROR: return "out of memory";
    case LZMA_MEMLIMIT_ERROR: return "memory limit reached";
    case LZMA_FORMAT_ERROR: return "not in the xz format";
    case LZMA_OPTIONS_ERROR: return "unsupported compression options";
    case LZMA_DATA_ERROR: return "corrupt compressed data";
    case LZMA_BUF_ERROR: return "truncated compressed data";
    default: return "decoder error";
  }
}
}  // namespace

struct TextStream::Xz {
  lzma_stream stream = LZMA_STREAM_INIT;
  std::vector<std::uint8_t> in = std::vector<std::uint8_t>(kBufferBytes);
  bool input_done = false;
  ~Xz() { lzma_end(&stream); }
};

TextStream::TextStream(std::string path) : path_(std::move(path)), buffer_(kBufferBytes) {
  if (text::ends_with(path_, ".xz")) xz_ = std::make_unique<Xz>();
  open();
}

TextStream::~TextStream() { close(); }

void TextStream::open() {
  file_ = std::fopen(path_.c_str(), "rb");
  if (!file_) throw TraceError(fmt::format("cannot open trace file '{}': {}", path_, std::strerror(errno)));
  if (xz_) {
    xz_->stream = LZMA_STREAM_INIT;
    xz_->input_done = false;
    // LZMA_CONCATENATED: `xz` output of several streams (e.g. appended files) reads as one text.
    const lzma_ret r = lzma_stream_decoder(&xz_->stream, UINT64_MAX, LZMA_CONCATENATED);
    if (r != LZMA_OK) throw TraceError(fmt::format("trace file '{}': xz decoder: {}", path_, lzma_problem(r)));
  }
  buffer_pos_ = buffer_end_ = 0;
  position_ = 0;
  at_end_ = false;
}

void TextStream::close() {
  if (xz_) lzma_end(&xz_->stream);
  if (file_) std::fclose(file_);
  file_ = nullptr;
}

void TextStream::rewind() {
  if (!xz_) {
    std::fseek(file_, 0, SEEK_SET);
    buffer_pos_ = buffer_end_ = 0;
    position_ = 0;
    at_end_ = false;
    return;
  }
  close();
  open();
}

std::size_t TextStream::raw_read(char* out, std::size_t max) {
  if (!xz_) {
    const std::size_t n = std::fread(out, 1, max, file_);
    if (n == 0 && std::ferror(file_))
      throw TextStreamError(fmt::format("read error: {}", std::strerror(errno)));
    compressed_read_ += n;
    return n;
  }
  lzma_stream& s = xz_->stream;
  s.next_out = reinterpret_cast<std::uint8_t*>(out);
  s.avail_out = max;
  while (s.avail_out == max) {
    if (s.avail_in == 0 && !xz_->input_done) {
      const std::size_t n = std::fread(xz_->in.data(), 1, xz_->in.size(), file_);
      if (n == 0 && std::ferror(file_))
        throw TextStreamError(fmt::format("read error: {}", std::strerror(errno)));
      compressed_read_ += n;
      s.next_in = xz_->in.data();
      s.avail_in = n;
      if (n == 0) xz_->input_done = true;
    }
    const lzma_ret r = lzma_code(&s, xz_->input_done ? LZMA_FINISH : LZMA_RUN);
    if (r == LZMA_STREAM_END) break;
    if (r != LZMA_OK)
      throw TextStreamError(fmt::format("xz: {} after {} bytes of text", lzma_problem(r), position_ + (max - s.avail_out)));
  }
  return max - s.avail_out;
}

std::size_t TextStream::fill() {
  if (buffer_pos_ < buffer_end_) return buffer_end_ - buffer_pos_;
  if (at_end_) return 0;
  const std::size_t n = raw_read(buffer_.data(), buffer_.size());
  buffer_pos_ = 0;
  buffer_end_ = n;
  position_ += n;
  if (n == 0) at_end_ = true;
  return n;
}

bool TextStream::next_line(std::string& line) {
  line.clear();
  bool any = false;
  while (fill() > 0) {
    any = true;
    const char* start = buffer_.data() + buffer_pos_;
    const std::size_t avail = buffer_end_ - buffer_pos_;
    const void* nl = std::memchr(start, '\n', avail);
    if (nl) {
      const std::size_t n = static_cast<const char*>(nl) - start;
      line.append(start, n);
      buffer_pos_ += n + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return true;
    }
    line.append(start, avail);
    buffer_pos_ = buffer_end_;
    if (line.size() > kMaxLineBytes)
      throw TextStreamError(fmt::format("line longer than {} bytes (not a trace file?)", kMaxLineBytes));
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return any;
}

void TextStream::seek(std::uint64_t offset) {
  if (!xz_) {  // plain file: straight there
    if (offset != position()) {
      std::fseek(file_, static_cast<long>(offset), SEEK_SET);
      buffer_pos_ = buffer_end_ = 0;
      position_ = offset;
      at_end_ = false;
    }
    return;
  }
  if (offset < position()) rewind();
  while (position() < offset) {  // decode forward, discarding
    if (fill() == 0)
      throw TextStreamError(fmt::format("text ends at byte {}, before byte {} (file changed since it was indexed?)",
                                        position(), offset));
    const std::uint64_t skip = std::min<std::uint64_t>(offset - position(), buffer_end_ - buffer_pos_);
    buffer_pos_ += static_cast<std::size_t>(skip);
  }
}

}  // namespace warpsim::accelsim
