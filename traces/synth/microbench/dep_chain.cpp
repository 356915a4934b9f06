// Microbenchmark `dep_chain`: each warp runs `ilp` independent chains of `length` dependent ALU/FP instructions of
// one opcode (each reads its own previous result), interleaved chain by chain, in a loop whose unrolled body holds
// about 64 instructions (kBenchLoopBodyInsts). At ilp = 1 and one warp per SM the time per instruction is the opcode's latency;
// with many chains or warps it is the pipe's issue rate. Grid: sm.count CTAs of `warps` warps.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/microbench/microbench.h"

namespace warpsim::synth::microbench {
namespace {

const std::vector<std::string> kOps = {"ffma", "fadd", "fmul", "hfma2", "hadd2", "iadd3", "imad", "lop3", "shf",
                                       "dfma", "dadd", "dmul", "mufu"};
// Registers per chain: the chain's value, and for FP64 its pair.
constexpr std::uint32_t kMaxDependentChains = 64;

Opcode opcode_of(const std::string& op) {
  std::string upper = op;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char ch) { return std::toupper(ch); });
  Opcode out = Opcode::NOP;
  WARPSIM_ASSERT(parse_opcode(upper, out), "dep_chain op '" + op + "' has no opcode");
  return out;
}

std::unique_ptr<TraceSource> make_dep_chain(const SynthArgs& args, const Config& config) {
  const Opcode op = opcode_of(args.text("op"));
  const std::uint32_t ilp = static_cast<std::uint32_t>(args.u64("ilp"));
  const std::uint64_t length = args.u64("length");
  const std::uint32_t regs_per_chain = op_class(op) == OpClass::Fp64 ? 2 : 1;
  KernelInfo info;
  info.block = block_of_warps("dep_chain", "warps", args.u64("warps"), config);
  info.grid.x = config.section("sm").u32("count");
  info.name = fmt::format("warpsim_dep_chain_{}_ilp{}_{}warps", args.text("op"), ilp, args.u64("warps"));
  info.registers_per_thread = std::max<std::uint32_t>(32, ilp * regs_per_chain);
  info.target_arch = config.section("gpu").str("arch");
  return one_kernel_trace(
      info,
      [op, ilp, length, regs_per_chain](std::uint64_t, std::uint32_t) {
        StepProgram prog;
        prog.steps = length;
        prog.body_steps = body_of(kBenchLoopBodyInsts, ilp);
        prog.step = [op, ilp, regs_per_chain](InstChunk& c, std::uint64_t) {
          for (std::uint32_t j = 0; j < ilp; ++j) {
            const std::uint16_t r = reg(j * regs_per_chain);
            emit_alu(c, op, r, {r, r, r});  // FMA-style: the chain's value in every operand
          }
        };
        return prog;
      },
      "synthesized " + info.name);
}

std::map<std::string, double> dep_chain_metrics(const SynthArgs& args, const Config&, const WorkloadTiming& t) {
  const double length = static_cast<double>(args.u64("length"));
  const double per_sm = length * static_cast<double>(args.u64("ilp")) * static_cast<double>(args.u64("warps"));
  const double cycles = static_cast<double>(t.cycles);
  return {{"latency_cycles", cycles / length}, {"throughput_per_clk_per_sm", cycles > 0 ? per_sm / cycles : 0.0}};
}

SynthesizerInfo dep_chain_synthesizer() {
  SynthesizerInfo info;
  info.name = "dep_chain";
  info.description = "chains of dependent ALU/FP instructions of one opcode: latency (ilp 1, 1 warp) and issue "
                     "throughput (many chains or warps)";
  info.keys = Schema("synth", "dep_chain", info.description)
                  .choice("op", kOps, std::string("ffma"), "the opcode (its pipe: sm.pipes, sm.opcodes overrides)")
                  .uint("ilp", "chains", 1, "independent chains per warp", 1, kMaxDependentChains)
                  .uint("warps", "warps", 1, "warps per SM (one CTA per SM)", 1, 64)
                  .uint("length", "instructions", 4096, "dependent instructions per chain", 1, 1ull << 20)
                  .params();
  info.factory = make_dep_chain;
  info.metrics = {{"latency_cycles", "cycles", "kernel cycles / length: the dependent-issue latency at ilp 1, 1 warp"},
                  {"throughput_per_clk_per_sm", "warp-inst/cycle/SM",
                   "warp-instructions of the chains per SM per cycle (x32 for thread operations)"}};
  info.derive = dep_chain_metrics;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::microbench

WARPSIM_REGISTER_SYNTHESIZER(dep_chain, warpsim::synth::microbench::dep_chain_synthesizer());
