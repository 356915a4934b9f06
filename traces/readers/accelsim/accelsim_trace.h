// Accel-Sim / NVBit traces (kernelslist.g + kernel-N.traceg[.xz]) as a TraceSource: the format is in
// ../shared/docs/TRACE-FORMATS.md, what warpsim makes of it in traces/readers/accelsim/README.md.
//
// Opening a trace reads kernelslist.g and indexes every kernel file in one streaming pass each: every line is
// parsed and checked (so malformed input is reported before simulating, as "FILE:LINE: what"), and the byte range
// of each CTA is kept (24 bytes per CTA). open_cta() then fetches only that CTA's text (xz decompressed on the
// fly) and its warps decode their lines lazily, batch by batch: memory holds the resident CTAs' text, never a file.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/trace/source.h"
#include "traces/readers/accelsim/sass_opcodes.h"

namespace warpsim::accelsim {

// What a kernel file's header says (lines "-key = value").
struct KernelHeader {
  KernelInfo info;            // name, grid, block, shmem, nregs, target_arch = "sm_<binary version>"
  int kernel_id = 0;
  int binary_version = 0;
  int tracer_version = 0;     // "-accelsim tracer version"
  bool lineinfo = false;      // "-enable lineinfo": each line starts with a source line number
  int stream_id = 0;
};

// Decodes one instruction line of a kernel file into a warpsim record. Errors throw TraceError "FILE:LINE: what".
class LineDecoder {
 public:
  LineDecoder(const KernelHeader& header, const SassOpcodeTable& table, std::string file);
  // `last_in_warp`: the warp's last instruction (an EXIT elsewhere is a partial exit, timed as a branch).
  // Deltas-mode records point into `deltas` (32 entries). Returns the table row when the line runs as an untimed
  // NOP to be reported (a row marked `report`, or a tcgen05 MMA without its shape), else nullptr.
  const SassOpcode* decode(std::string_view line, std::uint64_t line_no, bool last_in_warp, WarpInst& out,
                           std::int32_t* deltas) const;

 private:
  struct Resolved;  // a SASS opcode string resolved once: table entry, width, MMA shape and type, LDSM matrices
  const Resolved& resolve(std::string_view opcode, std::uint64_t line_no) const;

  const KernelHeader& header_;
  const SassOpcodeTable& table_;
  std::string file_;
  // Opcode spellings seen so far (a kernel uses a few dozen), resolved once.
  mutable std::unordered_map<std::string_view, std::shared_ptr<Resolved>> cache_;
};

// One kernel file, indexed.
struct KernelIndex {
  std::string path;
  KernelHeader header;
  struct Cta {
    std::uint64_t begin = 0, end = 0;  // byte range of "#BEGIN_TB" .. "#END_TB" in the (decompressed) text
    std::uint64_t line = 0;            // line number of "#BEGIN_TB"
  };
  std::vector<Cta> ctas;               // by linear CTA id
  std::uint64_t warp_instructions = 0; // lines of the whole kernel (= the tracer's stats.csv total_insts)
  std::vector<UntimedOpcode> untimed;  // lines run as untimed NOPs, per opcode-table row, in table order
};

// Parses and checks the whole file, keeping the CTAs' byte ranges.
KernelIndex index_kernel_file(const std::string& path);

// A kernelslist.g (or a single kernel-N.traceg[.xz]) opened as a trace.
class AccelSimTrace final : public TraceSource {
 public:
  explicit AccelSimTrace(const std::string& path);
  std::size_t num_kernels() const override { return kernels_.size(); }
  std::unique_ptr<KernelSource> open_kernel(std::size_t index) override;
  std::string description() const override { return "Accel-Sim trace " + path_; }
  std::vector<UntimedOpcode> untimed(std::size_t index) const override { return kernels_.at(index)->untimed; }
  const KernelIndex& kernel(std::size_t index) const { return *kernels_.at(index); }
  std::size_t memcpy_commands() const noexcept { return memcpys_; }

 private:
  std::string path_;
  std::vector<std::shared_ptr<KernelIndex>> kernels_;
  std::size_t memcpys_ = 0;
};

}  // namespace warpsim::accelsim
