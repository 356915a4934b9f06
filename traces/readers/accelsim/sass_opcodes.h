// SASS opcode tables of the Accel-Sim trace reader: per architecture, which warpsim opcode (and so which pipe,
// latency and memory space) each SASS opcode takes. The tables are data, traces/readers/accelsim/opcodes/*.csv,
// compiled in (CMake embeds the files); their columns are described in traces/readers/accelsim/README.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/trace/inst.h"

namespace warpsim::accelsim {

struct SassOpcode {
  std::string name;           // the table's opcode: a base opcode ("IMAD") or one with modifiers ("IMAD.MOV")
  Opcode op = Opcode::NOP;    // latency_class: the warpsim opcode whose pipe and timing it takes
  OpClass op_class = OpClass::Sync;
  MemSpace space = MemSpace::None;
  std::uint8_t width = 0;     // bytes per lane of a memory access when neither the opcode nor the trace says
  int line = 0;               // line of the table file
  // `untimed` column "report": a NOP standing for work the model does not time from this trace (a TMA copy without
  // its box, an mbarrier without its id, a fence): its lines are counted and reported (TraceSource::untimed).
  bool report_untimed = false;
  std::string note;           // why, where the mapping is an approximation (the row's last column)
};

class SassOpcodeTable {
 public:
  // Parses a table; ConfigError-style InputError naming `file` and the line on a malformed row.
  SassOpcodeTable(std::string arch, std::string file, std::string_view csv_text);
  const std::string& arch() const noexcept { return arch_; }
  const std::string& file() const noexcept { return file_; }
  const std::vector<SassOpcode>& entries() const noexcept { return entries_; }
  // The entry for a full SASS opcode ("IMAD.MOV.U32"): the longest table name that is the opcode or a prefix of
  // it ending before a '.' ("IMAD.MOV.U32", then "IMAD.MOV", then "IMAD"). nullptr when none.
  const SassOpcode* find(std::string_view sass) const;

  // The table of a tracer "binary version" (61 -> pascal, 80 -> ampere, ...); InputError for versions without one.
  static const SassOpcodeTable& for_binary_version(int version);
  // Every compiled-in table (for tests and listings).
  static const std::vector<SassOpcodeTable>& all();

 private:
  std::string arch_, file_;
  std::vector<SassOpcode> entries_;
  std::unordered_map<std::string, std::size_t> by_name_;
};

// The architecture name of a binary version ("ampere"), or "" when none is known.
std::string_view arch_of_binary_version(int version);

}  // namespace warpsim::accelsim
