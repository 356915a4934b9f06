// The native binary trace format (traces/FORMAT.md): a streaming writer and a random-access reader.
// A file holds kernels; each CTA is one independently zstd-compressed block, and an index at the end lets the
// reader open CTA i of kernel k directly. Readers decode a warp's instructions lazily, batch by batch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/trace/source.h"

namespace warpsim {

namespace detail {
struct NativeTraceFile;  // an open file and its kernel table, shared by a reader and the sources it opened
}

// Format version written by this build. Readers accept any minor version of their major version
// (minor versions only add data that older readers can skip, but for 1.5's access byte and 1.6's LDG aux, which
// readers interpret by the file's minor version: traces/FORMAT.md, "Versioning") and reject every other major version.
inline constexpr std::uint16_t kTraceFormatMajor = 1;
inline constexpr std::uint16_t kTraceFormatMinor = 8;  // 1.1: opcode SHFL appended; 1.2: WARPGROUP_*, UTMALDG, SYNCS_*, MBARRIER_INIT;
                                                       // 1.3: KINF cluster dimensions, UTMALDG/SYNCS_ARRIVE cluster CTA mask;
                                                       // 1.4: BAR's group = warps expected, opcode BAR_ARV appended;
                                                       // 1.5: global accesses' cache operator (access byte bits 5-7);
                                                       // 1.6: LDG's aux = a spin-wait's arrivals awaited;
                                                       // 1.7: dtype FP4 (8) appended;
                                                       // 1.8: opcodes UTCMMA, UTCBAR, LDTM (tcgen05), USETMAXREG appended,
                                                       //      LDS/STS's cluster CTA mask (mma.m)
inline constexpr int kDefaultTraceCompressionLevel = 3;  // zstd's default: fast, and most of the gain of higher levels

// True when `path` can be opened and starts with the native trace magic (no further validation).
bool is_native_trace(const std::string& path);

// Totals of what a writer has written so far.
struct TraceWriteStats {
  std::uint64_t kernels = 0;
  std::uint64_t ctas = 0;
  std::uint64_t warps = 0;
  std::uint64_t instructions = 0;
  std::uint64_t encoded_bytes = 0;  // instruction blocks before compression
  std::uint64_t file_bytes = 0;     // bytes written to the file, header/index/footer included once closed
};

// Streams kernels into a trace file: begin_kernel, add_cta for CTA ids 0..grid.count()-1 in order, end_kernel;
// repeat; close. Only the CTA being added is held in memory (plus 16 bytes of index per CTA until close()).
// Every error (I/O, misuse, an instruction the format cannot hold, a record, kernel or CTA that breaks the
// validity rules of FORMAT.md: check_inst, check_kernel_info, warps per CTA) throws TraceError naming the file.
// A file whose writer did not close() successfully has no footer, so readers reject it.
class TraceWriter {
 public:
  // `level`: zstd compression level, in [ZSTD_minCLevel(), ZSTD_maxCLevel()].
  explicit TraceWriter(const std::string& path, int level = kDefaultTraceCompressionLevel);
  ~TraceWriter();  // closes if needed; errors are swallowed there (call close() to see them)
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void begin_kernel(const KernelInfo& info);
  // One CTA: warps[w] is warp w's instruction list; the k-th Deltas-mode record of a warp takes its
  // offsets from lane_deltas[k] (WarpInst::deltas is ignored here).
  void add_cta(const std::vector<InMemoryKernel::Warp>& warps);
  // One CTA streamed from any source, warp by warp, in read() batches (WarpInst::deltas is used).
  void add_cta(CtaSource& cta);
  // Throws unless exactly grid.count() CTAs were added.
  void end_kernel();
  // Writes the index and footer and closes the file. Throws if a kernel is still open.
  void close();

  const TraceWriteStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes every kernel, CTA and warp of `source` to `path`, one CTA at a time. (Takes a non-const source
// because TraceSource::open_kernel is non-const.)
TraceWriteStats write_trace(const std::string& path, TraceSource& source,
                            int level = kDefaultTraceCompressionLevel);

// Reads a native trace file. Opening reads the header, footer and kernel table only; open_kernel reads that
// kernel's info block; open_cta reads and decompresses exactly one CTA block; warp streams decode lazily.
// The returned sources share the open file and stay usable after the reader is destroyed.
// Malformed input of any kind, invalid records and kernels included (FORMAT.md "Validity"), throws TraceError
// naming the file, kernel/CTA/warp, instruction and byte offset.
// Not thread-safe: use one reader (or one KernelSource) per thread.
class TraceFileReader final : public TraceSource {
 public:
  explicit TraceFileReader(const std::string& path);
  ~TraceFileReader() override;

  std::size_t num_kernels() const override;
  std::unique_ptr<KernelSource> open_kernel(std::size_t index) override;
  std::string description() const override;

  const std::string& path() const;
  // From the index, without decoding anything (for progress reporting and `info`-style listings).
  std::uint64_t kernel_cta_count(std::size_t index) const;
  std::uint64_t kernel_instruction_count(std::size_t index) const;

 private:
  std::shared_ptr<detail::NativeTraceFile> file_;
};

}  // namespace warpsim
