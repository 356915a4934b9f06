// torch.cat's CUDA kernels as PyTorch 2.4+ launches them (aten/src/ATen/native/cuda/Shape.cu: cat_out_cuda,
// parallel_cat, getCatGrid, getCatGridContig). Inputs of up to 4 dimensions are copied by one kernel per batch of
// inputs (128 when every input is contiguous, else 64), gridDim.y = the batch's inputs, each input's elements in a
// grid-stride loop over blockIdx.x:
//   vectorized     every input contiguous and every slice behind the cat dim a multiple of 16 bytes
//                  (CatArrayBatchedCopy_vectorized): 128 threads, one 16-byte vector per thread and iteration, the
//                  dims from the cat dim on flattened (Dims = dim + 1); grid.x = min(vectors of the largest input /
//                  128, 32 x SMs)
//   aligned        contiguous, not vectorizable (CatArrayBatchedCopy_alignedK_contig): 128 threads, a 16-byte (8 for
//                  16-bit types) vector load and one scalar store per element
//   strided        any input not contiguous (CatArrayBatchedCopy, 512 threads, grid.x = 2 x SMs): each element's
//                  output and input offsets from its linear index by CatArrIndexToOffset, scalar loads and stores.
// CatArrIndexToOffset divides the index by each dim's size (Dims - 1 unsigned 32-bit divisions by values known at
// run time only). ptxas expands a division in place as a reciprocal estimate refined by multiply-highs
// (kUint32DivisionInsts below); the estimate (I2F, MUFU.RCP, F2I) runs at the conversion rate, which bounds the strided
// kernel. See traces/synth/README.md, "cat".
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <numeric>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/core/types.h"
#include "traces/synth/emit.h"
#include "traces/synth/generated.h"
#include "traces/synth/ops/op_common.h"
#include "traces/synth/registry.h"

namespace warpsim::synth::ops {
namespace {

constexpr std::uint32_t kCatMaxDims = 4;             // CAT_ARRAY_MAX_INPUT_DIMS
constexpr std::uint32_t kCatContiguousBatch = 128;   // CAT_ARRAY_BATCH_SIZE
constexpr std::uint32_t kCatStridedBatch = 64;       // CAT_ARRAY_BATCH_SIZE / 2 (stride metadata per input)
constexpr std::uint32_t kCatStridedThreads = 512;    // getCatGrid's block: 32 x 16
constexpr std::uint32_t kCatContiguousThreads = 128; // getCatGridContig's threads_per_block
constexpr std::uint32_t kCatMaxCtasPerSm = 32;       // getCatGridContig's max_tb_per_sm
constexpr std::uint32_t kCatVectorBytes = 16;        // the vectorized kernel's bytes per access
constexpr std::uint64_t kCatMaxIndex = 0x7fffffff;   // canUse32BitIndexMath: offsets below 2^31
constexpr std::uint64_t kCatMaxBytes = 0x7fffffff;   // per-lane address offsets are 32-bit (AddrMode::Deltas)

// nvcc's unsigned 32-bit x / d for a d known at run time, in SASS order: I2F.U32.RP d, MUFU.RCP, IADD3, F2I.U32,
// IMAD.MOV, IMAD, IMAD.HI (the refined reciprocal); IMAD.HI (quotient), IMAD.MOV, IMAD (remainder), ISETP,
// 2 predicated IADD3, ISETP, predicated IADD3 (two corrections), ISETP, LOP3 (d == 0). As in the A100 trace's
// grid-stride kernels (../shared/traces/accelsim/a100-flashinfer-gemm kernel 1 has the sequence).
constexpr std::uint32_t kUint32DivisionInsts = 17;

enum class CatKernel { Vectorized, Aligned, Strided };

const char* cat_kernel_name(CatKernel k) {
  switch (k) {
    case CatKernel::Vectorized: return "vectorized";
    case CatKernel::Aligned: return "aligned";
    default: return "strided";
  }
}

struct CatInput {
  std::vector<std::uint64_t> sizes, strides;  // elements; an empty legacy input has sizes {0}
  std::uint64_t numel = 0, offset = 0;          // offset: its first index along the cat dim of the output
  std::uint64_t base = 0;                       // address of its storage
  bool contiguous() const {
    std::uint64_t expect = 1;
    for (std::size_t d = sizes.size(); d-- > 0;) {
      if (sizes[d] != 1 && strides[d] != expect) return false;
      expect *= sizes[d];
    }
    return true;
  }
};

// One launch: its plan holds the batch's inputs, blockIdx.y picks one.
struct CatLaunch {
  std::uint64_t grid_x = 0;
};

struct CatPlan {
  OpDType type;
  CatKernel kernel = CatKernel::Strided;
  std::uint32_t dims = 0, dim = 0;             // dims of the tensors, cat dim
  std::uint32_t kernel_dims = 0;               // CatArrIndexToOffset's Dims (vectorized: dim + 1)
  std::uint32_t threads = 0, ilp = 1;          // per CTA; elements per access of the aligned kernel
  std::vector<CatInput> inputs;
  std::vector<std::uint64_t> out_sizes, out_strides;
  std::uint64_t out = 0;
  std::uint16_t r_tid = 0, r_n = 0, r_param = 0, r_idx = 0, r_div = 0, r_off = 0, r_addr = 0, r_data = 0;
  std::uint32_t registers = 0;  // per thread, rounded as the GPU allocates them

  std::uint32_t vector_elems() const { return kCatVectorBytes / type.bytes; }
  // Units the kernel's loop counts for input `i`: 16-byte vectors (vectorized), else elements.
  std::uint64_t units(const CatInput& in) const { return kernel == CatKernel::Vectorized ? in.numel / vector_elems() : in.numel; }
  // Element `linear` (row-major over the input's sizes) of input `in`: its element offset in the input's storage
  // and in the output.
  std::uint64_t input_offset(const CatInput& in, std::uint64_t linear) const {
    std::uint64_t offset = 0;
    for (std::size_t d = in.sizes.size(); d-- > 0;) {
      offset += linear % in.sizes[d] * in.strides[d];
      linear /= in.sizes[d];
    }
    return offset;
  }
  std::uint64_t output_offset(const CatInput& in, std::uint64_t linear) const {
    std::uint64_t offset = 0;
    for (std::size_t d = in.sizes.size(); d-- > 0;) {
      const std::uint64_t index = linear % in.sizes[d] + (d == dim ? in.offset : 0);
      offset += index * out_strides[d];
      linear /= in.sizes[d];
    }
    return offset;
  }
};

// Lanes' byte addresses of one access: Strided when the active lanes sit `bytes` apart from lane 0's address,
// else per-lane offsets from the lowest active address.
void emit_cat_access(InstChunk& c, Opcode op, const std::array<std::uint64_t, kWarpSize>& address, std::uint32_t mask,
                     std::uint32_t bytes, std::uint16_t data, std::uint32_t data_regs, std::uint16_t addr) {
  std::uint64_t low = ~std::uint64_t{0}, lane0 = 0;
  bool strided = true, first = true;
  for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) {
    if (!(mask >> lane & 1u)) continue;
    low = std::min(low, address[lane]);
    if (first) lane0 = address[lane] - std::uint64_t{lane} * bytes;
    first = false;
    strided = strided && address[lane] == lane0 + std::uint64_t{lane} * bytes;
  }
  const LaneRows lanes{strided ? lane0 : low, bytes, kWarpSize, 0};
  if (op == Opcode::LDG)
    emit_load(c, op, MemSpace::Global, lanes, mask, data, data_regs, {addr});
  else
    emit_store(c, op, MemSpace::Global, lanes, mask, {data, addr});
  if (strided) return;
  std::array<std::int32_t, kWarpSize> deltas{};
  for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) {
    const std::uint64_t delta = mask >> lane & 1u ? address[lane] - low : 0;
    WARPSIM_ASSERT(delta <= kCatMaxBytes, "cat: a warp's accesses span 2 GiB or more (make_cat refuses such tensors)");
    deltas[lane] = static_cast<std::int32_t>(delta);
  }
  c.own_deltas(deltas);
}

class CatWarp final : public PhasedWarp {
 public:
  CatWarp(std::shared_ptr<const CatPlan> p, const CatLaunch& launch, std::uint64_t cta, std::uint32_t warp)
      : p_(std::move(p)), input_(p_->inputs[cta / launch.grid_x]) {
    const std::uint64_t threads = std::uint64_t{p_->threads};
    first_ = cta % launch.grid_x * threads + std::uint64_t{warp} * kWarpSize;
    stride_ = launch.grid_x * threads;
    const std::uint64_t units = p_->units(input_);
    // Lane l's thread handles units first_ + l + k * stride_ (aligned: ilp elements from (that) * ilp).
    const std::uint64_t per_access = p_->kernel == CatKernel::Aligned ? p_->ilp : 1;
    const std::uint64_t whole = units / per_access;  // accesses of a full vector (aligned: the main loop)
    const auto iterations = first_ < whole ? static_cast<std::uint32_t>(ceil_div(whole - first_, stride_)) : 0u;
    // The aligned kernel's thread whose vector runs past the end copies the rest element by element.
    const auto tail = static_cast<std::uint32_t>(units % per_access);
    if (tail > 0) {
      const std::uint64_t t = whole;  // the thread index whose vector is cut
      const std::uint64_t lane_thread = t % stride_;
      if (lane_thread >= first_ && lane_thread < first_ + kWarpSize) tail_lane_ = static_cast<std::uint32_t>(lane_thread - first_);
    }
    const bool any = first_ < ceil_div(units, per_access);
    set_phases({straight(), loop(any ? iterations : 0), loop(tail_lane_ < kWarpSize ? tail : 0), straight()});
    exits_early_ = !any;
  }

 private:
  enum : std::uint32_t { kSetup, kLoop, kTail, kEnd };

  void emit_phase(InstChunk& c, std::uint32_t phase, std::uint32_t j) override {
    const CatPlan& p = *p_;
    switch (phase) {
      case kSetup:
        // tid, nElements[blockIdx.y] and the early return; then the input's pointer, offset, dimSize, the stride
        // (and the strided kernel's per-input sizes and strides).
        emit_alu(c, Opcode::S2R, p.r_tid, {});
        emit_alu(c, Opcode::S2R, reg(p.r_tid + 1), {});
        emit_alu(c, Opcode::IMAD, p.r_idx, {p.r_tid, reg(p.r_tid + 1)});
        emit_alu(c, Opcode::MOV, p.r_n, {});
        emit_alu(c, Opcode::ISETP, kPredicate, {p.r_idx, p.r_n});
        if (exits_early_) return;
        for (std::uint32_t i = 0; i < setup_params(); ++i) emit_alu(c, Opcode::MOV, reg(p.r_param + i % 8), {});
        emit_alu(c, Opcode::IMAD, reg(p.r_off + 2), {reg(p.r_param), reg(p.r_param + 1)});  // dataOffset
        break;
      case kLoop:
        emit_iteration(c, j);
        break;
      case kTail:
        emit_tail_element(c, j);
        break;
      default:
        c.emit(Opcode::EXIT);
    }
  }

  std::uint32_t setup_params() const {
    return 5 + (p_->kernel == CatKernel::Strided ? 2 * p_->kernel_dims : 0);
  }

  // One CatArrIndexToOffset of `index` into `offset`: a dependent chain through the divisions.
  void emit_index(InstChunk& c, std::uint16_t index, std::uint16_t offset) const {
    const CatPlan& p = *p_;
    const std::uint16_t d = p.r_div, t1 = reg(p.r_div + 1), t2 = reg(p.r_div + 2), q = reg(p.r_div + 3);
    std::uint16_t x = index;
    for (std::uint32_t dim = 1; dim < p.kernel_dims; ++dim) {
      emit_alu(c, Opcode::MUFU, t1, {d});    // I2F.U32.RP
      emit_alu(c, Opcode::MUFU, t1, {t1});   // MUFU.RCP
      emit_alu(c, Opcode::IADD3, t1, {t1});
      emit_alu(c, Opcode::MUFU, t2, {t1});   // F2I.FTZ.U32.TRUNC
      emit_alu(c, Opcode::IMAD, t1, {t2});   // IMAD.MOV (negate)
      emit_alu(c, Opcode::IMAD, t1, {t1, d});
      emit_alu(c, Opcode::IMAD, t2, {t2, t1});  // IMAD.HI: refined reciprocal
      emit_alu(c, Opcode::IMAD, q, {t2, x});    // IMAD.HI: quotient estimate
      emit_alu(c, Opcode::IMAD, t1, {q});
      emit_alu(c, Opcode::IMAD, t1, {d, t1, x});  // remainder
      emit_alu(c, Opcode::ISETP, kPredicate, {t1, d});
      emit_alu(c, Opcode::IADD3, t1, {t1, d, kPredicate});
      emit_alu(c, Opcode::IADD3, q, {q, kPredicate});
      emit_alu(c, Opcode::ISETP, kPredicate, {t1, d});
      emit_alu(c, Opcode::IADD3, q, {q, kPredicate});
      emit_alu(c, Opcode::ISETP, kPredicate, {d});
      emit_alu(c, Opcode::LOP3, q, {q, kPredicate});
      emit_alu(c, Opcode::IMAD, t1, {q, d, x});                             // curDimIndex
      emit_alu(c, Opcode::IMAD, offset, {t1, dim == 1 ? t1 : offset});    // offset += curDimIndex * stride
      x = q;
    }
    emit_alu(c, Opcode::IMAD, offset, {x, p.kernel_dims > 1 ? offset : x});
  }

  // Iteration j of the grid-stride loop.
  void emit_iteration(InstChunk& c, std::uint32_t j) {
    const CatPlan& p = *p_;
    const std::uint64_t units = p.units(input_), per_access = p.kernel == CatKernel::Aligned ? p.ilp : 1;
    std::array<std::uint64_t, kWarpSize> thread{};
    std::uint32_t mask = 0;
    for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) {
      thread[lane] = first_ + lane + std::uint64_t{j} * stride_;
      if ((thread[lane] + 1) * per_access <= units) mask |= 1u << lane;
    }
    const std::uint16_t out_off = p.r_off, in_off = reg(p.r_off + 1);
    std::array<std::uint64_t, kWarpSize> in_addr{}, out_addr{};
    switch (p.kernel) {
      case CatKernel::Strided:
        // The load is scheduled as early as its address allows (before the output offset, which does not feed
        // it), so the output offset's divisions overlap the load's latency.
        for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) {
          in_addr[lane] = input_.base + p.input_offset(input_, thread[lane]) * p.type.bytes;
          out_addr[lane] = p.out + p.output_offset(input_, thread[lane]) * p.type.bytes;
        }
        emit_index(c, p.r_idx, in_off);
        emit_alu(c, Opcode::IMAD, p.r_addr, {in_off});
        emit_cat_access(c, Opcode::LDG, in_addr, mask, p.type.bytes, p.r_data, 1, p.r_addr);
        emit_index(c, p.r_idx, out_off);
        emit_alu(c, Opcode::IADD3, out_off, {out_off, reg(p.r_off + 2)});
        emit_alu(c, Opcode::IMAD, reg(p.r_addr + 1), {out_off});
        emit_cat_access(c, Opcode::STG, out_addr, mask, p.type.bytes, p.r_data, 1, reg(p.r_addr + 1));
        break;
      case CatKernel::Vectorized: {
        const std::uint32_t v = p.vector_elems();
        emit_index(c, p.r_idx, out_off);
        emit_alu(c, Opcode::IMAD, p.r_addr, {p.r_idx});
        emit_alu(c, Opcode::IMAD, reg(p.r_addr + 1), {out_off, reg(p.r_off + 2)});
        for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) {
          in_addr[lane] = input_.base + thread[lane] * kCatVectorBytes;
          out_addr[lane] = p.out + p.output_offset(input_, thread[lane] * v) * p.type.bytes;
        }
        emit_cat_access(c, Opcode::LDG, in_addr, mask, kCatVectorBytes, p.r_data, kCatVectorBytes / 4, p.r_addr);
        emit_cat_access(c, Opcode::STG, out_addr, mask, kCatVectorBytes, p.r_data, kCatVectorBytes / 4, reg(p.r_addr + 1));
        break;
      }
      default: {  // aligned: ilp offsets, one vector load, ilp scalar stores
        for (std::uint32_t e = 0; e < p.ilp; ++e) emit_index(c, p.r_idx, reg(p.r_off + 3 + e));
        emit_alu(c, Opcode::IMAD, p.r_addr, {p.r_idx});
        for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) in_addr[lane] = input_.base + thread[lane] * p.ilp * p.type.bytes;
        emit_cat_access(c, Opcode::LDG, in_addr, mask, p.ilp * p.type.bytes, p.r_data, packed_regs(p.type, p.ilp), p.r_addr);
        for (std::uint32_t e = 0; e < p.ilp; ++e) {
          for (std::uint32_t lane = 0; lane < kWarpSize; ++lane)
            out_addr[lane] = p.out + p.output_offset(input_, thread[lane] * p.ilp + e) * p.type.bytes;
          emit_alu(c, Opcode::IMAD, reg(p.r_addr + 1), {reg(p.r_off + 3 + e), reg(p.r_off + 2)});
          emit_cat_access(c, Opcode::STG, out_addr, mask, p.type.bytes, reg(p.r_data + e * p.type.bytes / 4), 1, reg(p.r_addr + 1));
        }
      }
    }
    emit_loop_tail(c, p.r_idx, kPredicate);
  }

  // The aligned kernel's tail: element j of the vector cut by the end, on the one lane that holds it.
  void emit_tail_element(InstChunk& c, std::uint32_t j) {
    const CatPlan& p = *p_;
    const std::uint64_t element = input_.numel / p.ilp * p.ilp + j;
    std::array<std::uint64_t, kWarpSize> in_addr{}, out_addr{};
    in_addr[tail_lane_] = input_.base + element * p.type.bytes;
    out_addr[tail_lane_] = p.out + p.output_offset(input_, element) * p.type.bytes;
    const std::uint32_t mask = 1u << tail_lane_;
    emit_index(c, p.r_idx, p.r_off);
    emit_alu(c, Opcode::IMAD, p.r_addr, {p.r_idx});
    emit_cat_access(c, Opcode::LDG, in_addr, mask, p.type.bytes, p.r_data, 1, p.r_addr);
    emit_alu(c, Opcode::IMAD, reg(p.r_addr + 1), {p.r_off, reg(p.r_off + 2)});
    emit_cat_access(c, Opcode::STG, out_addr, mask, p.type.bytes, p.r_data, 1, reg(p.r_addr + 1));
    emit_loop_tail(c, p.r_idx, kPredicate);
  }

  std::shared_ptr<const CatPlan> p_;
  const CatInput& input_;
  std::uint64_t first_ = 0, stride_ = 0;  // the warp's first thread index in its input; the grid's threads
  std::uint32_t tail_lane_ = kWarpSize;  // the lane that copies the aligned kernel's tail (kWarpSize: none)
  bool exits_early_ = false;
};

// "2x8x128,2x8x1x128" -> shapes; "0" is the legacy empty 1-D input. Sizes and strides below 2^31: PyTorch's cat
// kernels index with 32-bit integers.
std::vector<std::vector<std::uint64_t>> parse_cat_shapes(const std::string& key, const std::string& text) {
  static const std::regex grammar("[0-9]{1,10}(x[0-9]{1,10})*(,[0-9]{1,10}(x[0-9]{1,10})*)*");
  if (!std::regex_match(text, grammar))
    throw InputError(fmt::format("cat key '{}': '{}' is not a list like {} (non-negative integers joined by 'x', one list "
                                 "per input, separated by ',')", key, text,
                                 key == "strides" ? "4194304x64x2048x1,8388608x128x4096x1" : "1x8x2048x128,1x8x1x128"));
  std::vector<std::vector<std::uint64_t>> shapes;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    std::vector<std::uint64_t> shape;
    std::stringstream dims(item);
    std::string value;
    while (std::getline(dims, value, 'x')) {
      const std::uint64_t v = std::stoull(value);
      if (v > kCatMaxIndex)
        throw InputError(fmt::format("cat key '{}': {} in '{}' is 2^31 or more (PyTorch's cat kernels index with 32 bits)", key, v, text));
      shape.push_back(v);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

// The kernel of one batch: its plan (the batch's inputs; the vectorized kernel's view flattened) and grid.
std::shared_ptr<CatPlan> batch_plan(const CatPlan& all, std::uint32_t first, std::uint32_t count, CatKernel kernel) {
  auto plan = std::make_shared<CatPlan>(all);
  CatPlan& p = *plan;
  p.inputs.assign(all.inputs.begin() + first, all.inputs.begin() + first + count);
  p.kernel = kernel;
  p.kernel_dims = kernel == CatKernel::Vectorized ? p.dim + 1 : p.dims;
  p.threads = kernel == CatKernel::Strided ? kCatStridedThreads : kCatContiguousThreads;
  p.ilp = kernel == CatKernel::Aligned ? (p.type.bytes > 2 ? kCatVectorBytes : 8) / p.type.bytes : 1;
  if (kernel == CatKernel::Vectorized) {
    // The dims from the cat dim on flattened into one, whose size counts a slice's elements (the kernel counts
    // them in 16-byte vectors).
    for (CatInput& in : p.inputs) {
      if (in.numel == 0) continue;
      const std::uint64_t trailing = in.numel / std::accumulate(in.sizes.begin(), in.sizes.begin() + p.dim + 1, std::uint64_t{1},
                                                                std::multiplies<>());
      in.sizes.resize(p.dim + 1);
      in.sizes[p.dim] *= trailing;
      in.offset *= trailing;
    }
    p.out_sizes.resize(p.dim + 1);
    p.out_sizes[p.dim] = p.dim == 0 ? p.out_strides[0] * all.out_sizes[0] : p.out_strides[p.dim - 1];
    p.out_strides.resize(p.dim + 1);
    p.out_strides[p.dim] = 1;
  }
  RegisterAllocator regs;
  p.r_tid = regs.take(2);
  p.r_n = regs.take();
  p.r_idx = regs.take();
  p.r_param = regs.take(8);
  p.r_div = regs.take(4);
  p.r_off = regs.take(3 + p.ilp);
  p.r_addr = regs.take(2);
  p.r_data = regs.take(kCatVectorBytes / 4);
  p.registers = (regs.used() + 7u) / 8u * 8u;
  return plan;
}

std::unique_ptr<TraceSource> make_cat(const SynthArgs& args, const Config& config) {
  CatPlan p;
  p.type = op_dtype(args);
  const auto shapes = parse_cat_shapes("inputs", args.text("inputs"));
  const std::string& stride_text = args.text("strides");
  const auto strides = stride_text == "contiguous" ? std::vector<std::vector<std::uint64_t>>{} : parse_cat_shapes("strides", stride_text);
  if (!strides.empty() && strides.size() != shapes.size())
    throw InputError(fmt::format("cat key 'strides': {} stride lists for {} inputs", strides.size(), shapes.size()));
  if (shapes.size() < 2)
    throw InputError("cat key 'inputs': one input; torch.cat of a single tensor is a copy_ (synthesize it as elementwise op=copy)");

  // The legacy 1-D empty input (size 0) is skipped; the others must agree on every size but the cat dim's.
  std::size_t valid = shapes.size();
  for (std::size_t i = 0; i < shapes.size() && valid == shapes.size(); ++i)
    if (!(shapes[i].size() == 1 && shapes[i][0] == 0)) valid = i;
  if (valid == shapes.size()) throw InputError("cat key 'inputs': every input is empty; torch.cat launches no kernel");
  p.dims = static_cast<std::uint32_t>(shapes[valid].size());
  if (p.dims > kCatMaxDims)
    throw InputError(fmt::format("cat key 'inputs': {}-dimensional tensors; PyTorch's cat kernels take at most {} dims and it "
                                 "copies each input with copy_ instead (synthesize those as elementwise op=copy)", p.dims, kCatMaxDims));
  const std::string& dim_text = args.text("dim");
  long long dim = 0;
  try {
    std::size_t used = 0;
    dim = std::stoll(dim_text, &used);
    if (used != dim_text.size()) throw std::invalid_argument(dim_text);
  } catch (const std::exception&) {
    throw InputError(fmt::format("cat key 'dim': '{}' is not an integer", dim_text));
  }
  if (dim < -static_cast<long long>(p.dims) || dim >= static_cast<long long>(p.dims))
    throw InputError(fmt::format("cat key 'dim': {} is out of range for {}-dimensional inputs (expected {} to {})", dim, p.dims,
                                 -static_cast<long long>(p.dims), p.dims - 1));
  p.dim = static_cast<std::uint32_t>(dim < 0 ? dim + p.dims : dim);

  // Sizes below 2^31 each (parse_cat_shapes): products are checked as they grow.
  const auto too_big = [&](std::uint64_t value, std::uint64_t limit, const std::string& key, const std::string& what) {
    if (value > limit)
      throw InputError(fmt::format("cat key '{}': {}: {} > {} (PyTorch's cat kernels index with 32 bits; warpsim "
                                   "synthesizes tensors below 2 GiB)", key, what, value, limit));
  };
  ArrayLayout arrays;
  p.out_sizes = shapes[valid];
  p.out_sizes[p.dim] = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    CatInput in;
    in.sizes = shapes[i];
    const bool empty_legacy = in.sizes.size() == 1 && in.sizes[0] == 0 && p.dims != 1;
    if (!empty_legacy) {
      if (in.sizes.size() != p.dims)
        throw InputError(fmt::format("cat key 'inputs': input {} has {} dims, input {} has {}", i, in.sizes.size(), valid, p.dims));
      for (std::uint32_t d = 0; d < p.dims; ++d)
        if (d != p.dim && in.sizes[d] != shapes[valid][d])
          throw InputError(fmt::format("cat key 'inputs': input {} is {} in dim {} where input {} is {} (only the cat dim {} may differ)",
                                       i, in.sizes[d], d, valid, shapes[valid][d], p.dim));
      p.out_sizes[p.dim] += in.sizes[p.dim];
      too_big(p.out_sizes[p.dim], kCatMaxIndex, "inputs", "the output's size along the cat dim");
    }
    in.numel = 1;
    for (std::uint64_t size : in.sizes) {
      in.numel *= size;
      too_big(in.numel, kCatMaxIndex, "inputs", fmt::format("input {} has too many elements", i));
    }
    if (strides.empty() || empty_legacy) {
      in.strides.assign(in.sizes.size(), 1);
      for (std::size_t d = in.sizes.size(); d-- > 1;) in.strides[d - 1] = in.strides[d] * in.sizes[d];
    } else {
      in.strides = strides[i];
      if (in.strides.size() != in.sizes.size())
        throw InputError(fmt::format("cat key 'strides': input {} has {} sizes and {} strides", i, in.sizes.size(), in.strides.size()));
    }
    std::uint64_t extent = in.numel == 0 ? 0 : 1;  // elements its storage spans (each term below 2^62)
    for (std::size_t d = 0; d < in.sizes.size() && in.numel > 0; ++d) extent += (in.sizes[d] - 1) * in.strides[d];
    too_big(extent * p.type.bytes, kCatMaxBytes, strides.empty() ? "inputs" : "strides",
            fmt::format("input {}'s storage spans too many bytes", i));
    in.base = arrays.add(extent * p.type.bytes);
    p.inputs.push_back(std::move(in));
  }
  // Offsets along the cat dim, skipping the legacy empties.
  std::uint64_t offset = 0;
  for (CatInput& in : p.inputs) {
    in.offset = offset;
    if (in.sizes.size() == p.dims && in.numel > 0) offset += in.sizes[p.dim];
  }
  p.out_strides.assign(p.dims, 1);
  std::uint64_t out_numel = p.out_sizes[p.dims - 1];
  for (std::uint32_t d = p.dims; d-- > 1;) {
    p.out_strides[d - 1] = p.out_strides[d] * p.out_sizes[d];
    out_numel = p.out_strides[d - 1] * p.out_sizes[d - 1];
    too_big(out_numel, kCatMaxIndex, "inputs", "the output has too many elements");
  }
  if (out_numel == 0) throw InputError("cat key 'inputs': the output is empty; torch.cat launches no kernel");
  too_big(out_numel * p.type.bytes, kCatMaxBytes, "inputs", "the output has too many bytes");
  p.out = arrays.add(out_numel * p.type.bytes);

  // The kernel of each batch, as parallel_cat decides it: strided unless every input is contiguous (cat_out_cuda);
  // vectorized while the output's and every input's slice behind the cat dim so far are multiples of 16 bytes
  // (isInOutAligned is not reset between batches), else aligned. The grid follows the largest input so far (nor is
  // max_elements_per_tensor reset), and a batch launches nothing while that is 0.
  bool contiguous = true;
  for (const CatInput& in : p.inputs) contiguous = contiguous && (in.numel == 0 || in.contiguous());
  bool slices_aligned = p.dim == 0 || p.out_strides[p.dim - 1] * p.type.bytes % kCatVectorBytes == 0;
  std::uint64_t most = 0;
  const std::uint64_t sms = config.section("sm").u64("count");
  const std::uint32_t batch = contiguous ? kCatContiguousBatch : kCatStridedBatch;
  std::vector<GeneratedKernelSpec> kernels;
  std::string kinds;
  for (std::uint32_t first = 0; first < p.inputs.size(); first += batch) {
    const auto count = std::min<std::uint32_t>(batch, static_cast<std::uint32_t>(p.inputs.size()) - first);
    for (std::uint32_t i = first; i < first + count; ++i) {
      const CatInput& in = p.inputs[i];
      most = std::max(most, in.numel);
      if (in.numel == 0) continue;
      const std::uint64_t slice = p.dim == 0 ? in.numel : in.numel / std::accumulate(in.sizes.begin(), in.sizes.begin() + p.dim,
                                                                                   std::uint64_t{1}, std::multiplies<>());
      slices_aligned = slices_aligned && slice * p.type.bytes % kCatVectorBytes == 0;
    }
    if (most == 0) continue;
    const CatKernel kernel = !contiguous ? CatKernel::Strided : slices_aligned ? CatKernel::Vectorized : CatKernel::Aligned;
    std::shared_ptr<const CatPlan> plan = batch_plan(p, first, count, kernel);
    CatLaunch launch;
    if (kernel == CatKernel::Strided) {
      launch.grid_x = 2 * sms;
    } else {
      const std::uint64_t per_thread = kernel == CatKernel::Vectorized ? plan->vector_elems() : plan->ilp;
      launch.grid_x = std::min(ceil_div(ceil_div(most, per_thread), std::uint64_t{kCatContiguousThreads}), kCatMaxCtasPerSm * sms);
    }
    GeneratedKernelSpec spec;
    spec.info.name = fmt::format("warpsim_cat_{}_{} ({} inputs, dim {})", cat_kernel_name(kernel), p.type.name, count, p.dim);
    spec.info.grid = Dim3{static_cast<std::uint32_t>(launch.grid_x), count, 1};
    spec.info.block = Dim3{plan->threads, 1, 1};
    spec.info.registers_per_thread = plan->registers;
    spec.info.shared_mem_bytes = 0;
    spec.info.target_arch = config.section("gpu").str("arch");
    spec.info.flops = 0;
    spec.make_warp = [plan, launch](std::uint64_t cta, std::uint32_t warp) {
      return std::make_unique<CatWarp>(plan, launch, cta, warp);
    };
    kernels.push_back(std::move(spec));
    if (kinds.find(cat_kernel_name(kernel)) == std::string::npos) kinds += std::string(kinds.empty() ? "" : ", ") + cat_kernel_name(kernel);
  }
  return std::make_unique<GeneratedTrace>(std::move(kernels), fmt::format("synthesized torch.cat of {} inputs ({} kernel)",
                                                                          p.inputs.size(), kinds));
}

SynthesizerInfo cat_synthesizer() {
  SynthesizerInfo info;
  info.name = "cat";
  info.description =
      "torch.cat's kernels (CatArrayBatchedCopy: vectorized, aligned or strided, as PyTorch chooses from the inputs' "
      "layout), one per batch of inputs (traces/synth/README.md, \"cat\")";
  Schema s("synth", "cat", info.description);
  s.string("inputs", std::nullopt,
           "shapes of the inputs, e.g. 1x8x2048x128,1x8x1x128 (up to 4 dims; 0 is a legacy empty input, skipped)")
      .string("dim", std::string("0"), "the dim to concatenate along (negative: from the end, as torch.cat)")
      .string("strides", std::string("contiguous"),
              "strides of the inputs in elements, as the shapes (e.g. 4194304x64x2048x1,...), or contiguous; a "
              "non-contiguous input takes the strided kernel");
  declare_dtype(s);
  info.keys = s.params();
  info.factory = make_cat;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::ops

namespace warpsim {
WARPSIM_REGISTER_SYNTHESIZER(cat, synth::ops::cat_synthesizer());
}
