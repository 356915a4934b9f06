// Microbenchmark `tensor_throughput`: each warp runs `ilp` independent accumulator chains of `iterations`
// tensor-core MMAs (each MMA accumulates into its chain's registers, so a chain is serial). mma: mma.sync (HMMA)
// per warp; wgmma: warpgroup MMA (HGMMA, issued by each warp of a 4-warp group, a quarter of the work each;
// sm_90), asynchronous: each iteration is wgmma.fence, one HGMMA per chain, commit_group, wait_group
// `wgmma_pending` (0: each iteration waits for its own MMAs, the dependent chain that measures latency; 1: the
// next group is issued while one executes, the throughput loop). One warp (one warpgroup) with one chain gives
// the MMA's latency; many warps give the tensor peak. Grid: `ctas` CTAs (0 = sm.count) of `warps` warps.
// tcgen05 (sm_100): lane 0 of warp 0 of each CTA issues `iterations` x `ilp` tcgen05.mmas back to back (they run
// in order on the SM's tensor core, accumulating in tensor memory), then commits them to an mbarrier and waits for
// it: the SM's tcgen05 throughput per shape (the CTA's other warps exit at once).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>

#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/microbench/microbench.h"

namespace warpsim::synth::microbench {
namespace {

constexpr std::uint32_t kMaxMmaChains = 16;
constexpr std::uint32_t kChainRegs = 8;  // register ids per chain (4 accumulator ids, room for wgmma's spread)

struct TensorDtype {
  const char* name;
  DType dtype;
  std::uint16_t mma_k[2];  // allowed K of mma.sync (PTX ISA: m16n8kK shapes per type)
  std::uint16_t wgmma_k;   // K of wgmma.m64nNkK
};
constexpr std::array<TensorDtype, 5> kTypes = {{{"fp16", DType::F16, {8, 16}, 16},
                                                {"bf16", DType::BF16, {8, 16}, 16},
                                                {"tf32", DType::TF32, {4, 8}, 8},
                                                {"fp8", DType::FP8, {32, 32}, 32},
                                                {"int8", DType::I8, {16, 32}, 32}}};

const TensorDtype& type_of(const std::string& name) {
  for (const TensorDtype& t : kTypes)
    if (name == t.name) return t;
  WARPSIM_ASSERT(false, "tensor_throughput dtype '" + name + "' not in the table");
  return kTypes[0];
}

MmaShape parse_shape(const std::string& text) {
  unsigned m = 0, n = 0, k = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "m%un%uk%u%c", &m, &n, &k, &tail) != 3 || !m || !n || !k || m > 256 || n > 256 || k > 256)
    throw InputError("tensor_throughput key 'shape': expected mMnNkK (e.g. m16n8k16, m64n256k16), got '" + text + "'");
  return MmaShape{static_cast<std::uint16_t>(m), static_cast<std::uint16_t>(n), static_cast<std::uint16_t>(k)};
}

std::unique_ptr<TraceSource> make_tensor(const SynthArgs& args, const Config& config) {
  const bool wgmma = args.text("instruction") == "wgmma";
  const bool tcgen05 = args.text("instruction") == "tcgen05";
  const TensorDtype& type = type_of(args.text("dtype"));
  const std::string arch = config.section("gpu").str("arch");
  if (wgmma && arch != "sm_90")
    throw InputError("tensor_throughput: wgmma (warpgroup MMA) exists on sm_90 only; this GPU is " + arch +
                     " (use instruction=mma)");
  if (tcgen05 && config.section("sm").u64("tensor.tcgen05.latency") == 0)
    throw InputError("tensor_throughput: tcgen05 exists on sm_100; this GPU (" + arch +
                     ") has none (sm.tensor.tcgen05.latency is 0; use instruction=mma or wgmma)");
  if (type.dtype == DType::FP8 && arch == "sm_80")
    throw InputError("tensor_throughput: sm_80 has no FP8 tensor-core MMA (dtype fp8 needs sm_89 or later)");
  const std::string flops_key = "tensor.flops_per_cycle." + std::string(dtype_name(type.dtype));
  if (config.section("sm").u64(flops_key) == 0)
    throw InputError("tensor_throughput: this GPU's sm." + flops_key + " is 0: no " + type.name + " tensor cores");
  const std::string shape_text = args.text("shape") != "auto" ? args.text("shape")
                                 : tcgen05                  ? fmt::format("m128n256k{}", type.wgmma_k)
                                 : wgmma                    ? fmt::format("m64n256k{}", type.wgmma_k)
                                                            : fmt::format("m16n8k{}", type.mma_k[1]);
  const MmaShape shape = parse_shape(shape_text);
  if (tcgen05) {
    // PTX ISA, tcgen05.mma cta_group::1: M 64 (N a multiple of 8) or 128 (N a multiple of 16), N up to 256, K of
    // 32 bytes (the wgmma K of the type).
    if (!((shape.m == 64 && shape.n % 8 == 0) || (shape.m == 128 && shape.n % 16 == 0)) || shape.n > 256 ||
        shape.k != type.wgmma_k)
      throw InputError(fmt::format("tensor_throughput key 'shape': tcgen05 {} shapes are m64nNk{} (N a multiple of 8) "
                                   "and m128nNk{} (N a multiple of 16), N up to 256, got '{}'",
                                   type.name, type.wgmma_k, type.wgmma_k, shape_text));
  } else if (wgmma) {
    if (shape.m != 64 || shape.n % 8 || shape.n > 256 || shape.k != type.wgmma_k)
      throw InputError(fmt::format("tensor_throughput key 'shape': wgmma {} shapes are m64nNk{} with N a multiple of 8 "
                                   "up to 256, got '{}'", type.name, type.wgmma_k, shape_text));
  } else if (shape.m != 16 || shape.n != 8 || (shape.k != type.mma_k[0] && shape.k != type.mma_k[1])) {
    throw InputError(fmt::format("tensor_throughput key 'shape': mma.sync {} shapes are m16n8k{} and m16n8k{}, got '{}'",
                                 type.name, type.mma_k[0], type.mma_k[1], shape_text));
  }
  const std::uint64_t warps = args.u64("warps");
  if (wgmma && warps % kWarpgroupWarps)
    throw InputError(fmt::format("tensor_throughput key 'warps': wgmma needs whole warpgroups (a multiple of 4), got {}", warps));
  const std::uint32_t ilp = static_cast<std::uint32_t>(args.u64("ilp"));
  const std::uint64_t iterations = args.u64("iterations");
  const std::uint32_t pending = static_cast<std::uint32_t>(args.u64("wgmma_pending"));
  const bool sparse = args.text("sparse") == "true";
  if (tcgen05 && sparse) throw InputError("tensor_throughput key 'sparse': not generated for tcgen05");
  if (!wgmma && pending)
    throw InputError("tensor_throughput key 'wgmma_pending': only for instruction=wgmma (mma.sync is synchronous)");
  KernelInfo info;
  info.block = block_of_warps("tensor_throughput", "warps", warps, config);
  const std::uint64_t ctas = args.u64("ctas") ? args.u64("ctas") : config.section("sm").u64("count");
  info.grid.x = static_cast<std::uint32_t>(ctas);
  info.name = fmt::format("warpsim_tensor_{}{}_{}_{}_ilp{}{}", tcgen05 ? "tcgen05" : wgmma ? "wgmma" : "mma",
                          sparse ? "_sp" : "", type.name, shape_text, ilp,
                          pending ? fmt::format("_pending{}", pending) : std::string());
  // Accumulators, then the A and B fragments (never written: ready from the start).
  const std::uint16_t a_frag = reg(ilp * kChainRegs), b_frag = reg(a_frag + kMmaARegs);
  info.registers_per_thread = std::max<std::uint32_t>(32, (b_frag + kMmaBRegs + 7) / 8 * 8);
  info.target_arch = arch;
  WarpInst probe;
  probe.op = tcgen05 ? Opcode::UTCMMA : wgmma ? Opcode::HGMMA : Opcode::HMMA;
  probe.mma = shape;
  info.flops = mma_flops_per_warp(probe) * ctas * (tcgen05 ? 1 : warps) * ilp * iterations;
  const DType dtype = type.dtype;
  return one_kernel_trace(
      info,
      [=](std::uint64_t, std::uint32_t warp) {
        if (tcgen05) {
          StepProgram prog;
          if (warp != 0) return prog;  // no steps: the warp exits
          prog.prologue = [](InstChunk& c) { emit_mbarrier_init(c, 0, 1); };
          prog.steps = iterations;
          prog.body_steps = body_of(kBenchLoopBodyInsts, ilp);
          prog.step = [=](InstChunk& c, std::uint64_t) {
            for (std::uint32_t j = 0; j < ilp; ++j) emit_utcmma(c, dtype, shape);
          };
          prog.epilogue = [](InstChunk& c) {
            emit_utcbar(c, 0);
            emit_mbarrier_wait(c, 0, 0);
          };
          return prog;
        }
        StepProgram prog;
        prog.steps = iterations;
        prog.body_steps = body_of(kBenchLoopBodyInsts, ilp + 3);  // the MMAs, and a wgmma's fence, commit, wait
        prog.step = [=](InstChunk& c, std::uint64_t) {
          if (wgmma) emit_wgmma_fence(c);
          for (std::uint32_t j = 0; j < ilp; ++j) {
            const std::uint16_t acc = reg(j * kChainRegs);
            WarpInst& mma = wgmma ? emit_hgmma(c, dtype, shape, std::array<std::uint16_t, 4>{acc, reg(acc + 2), reg(acc + 4), reg(acc + 6)})
                                  : emit_hmma(c, dtype, shape, acc, kMmaAccRegs, a_frag, b_frag);
            if (sparse) make_sparse(mma);
          }
          if (wgmma) {
            emit_wgmma_commit(c);
            emit_wgmma_wait(c, pending);
          }
        };
        return prog;
      },
      "synthesized " + info.name);
}

std::map<std::string, double> tensor_metrics(const SynthArgs& args, const Config& config, const WorkloadTiming& t) {
  // The flops the factory counted: rebuild the kernel info cheaply through the factory's own arithmetic.
  const auto source = make_tensor(args, config);
  const double flops = static_cast<double>(source->open_kernel(0)->info().flops);
  return {{"tflops", per_second(flops, t) / 1e12},
          {"latency_cycles", static_cast<double>(t.cycles) / static_cast<double>(args.u64("iterations"))}};
}

SynthesizerInfo tensor_synthesizer() {
  SynthesizerInfo info;
  info.name = "tensor_throughput";
  info.description = "chains of dependent tensor-core MMAs (mma.sync or warpgroup wgmma): MMA latency (1 warp) "
                     "and tensor throughput (many warps)";
  info.keys = Schema("synth", "tensor_throughput", info.description)
                  .choice("instruction", {"mma", "wgmma", "tcgen05"}, std::string("mma"),
                          "mma.sync (HMMA), wgmma (HGMMA, sm_90) or tcgen05 (UTCMMA by one thread per CTA, sm_100)")
                  .choice("dtype", {"fp16", "bf16", "tf32", "fp8", "int8"}, std::string("fp16"), "operand type")
                  .string("shape", std::string("auto"),
                          "mMnNkK: mma m16n8k16 (fp16/bf16; k8 too), m16n8k8/k4 (tf32), m16n8k32 (fp8, int8; int8 k16 "
                          "too); wgmma m64nNk16 (fp16/bf16), k8 (tf32), k32 (fp8, int8); tcgen05 m64nNkK or m128nNkK "
                          "with the wgmma K; auto = m16n8kK, m64n256kK or m128n256kK")
                  .uint("warps", "warps", 4, "warps per CTA (wgmma: a multiple of 4)", 1, 64)
                  .uint("ilp", "chains", 1, "independent accumulator chains per warp", 1, kMaxMmaChains)
                  .uint("iterations", "MMAs", 1024, "MMAs per chain", 1, 1ull << 24)
                  .uint("ctas", "CTAs", 0, "CTAs (0 = sm.count)", 0, 1ull << 20)
                  .choice("sparse", {"false", "true"}, std::string("false"),
                          "2:4 structured-sparse MMAs (mma.sp / wgmma .sp): flops counted dense-equivalent")
                  .uint("wgmma_pending", "groups", 0,
                        "wgmma: committed groups left executing at each iteration's wait_group (0 = latency chain, "
                        "1 = next group issued while one executes)", 0, 8)
                  .params();
  info.factory = make_tensor;
  info.metrics = {{"tflops", "TFLOP/s", "tensor operations (2mnk per MMA) / kernel time, whole GPU"},
                  {"latency_cycles", "cycles",
                   "kernel cycles / iterations: one MMA's latency at 1 warp (wgmma: 1 warpgroup, wgmma_pending 0), "
                   "ilp 1; wgmma adds the issue of its fence, commit and wait (2 cycles per iteration)"}};
  info.derive = tensor_metrics;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::microbench

WARPSIM_REGISTER_SYNTHESIZER(tensor_throughput, warpsim::synth::microbench::tensor_synthesizer());
