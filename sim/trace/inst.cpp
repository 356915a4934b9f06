// Opcode table and the name <-> enum conversions declared in inst.h.
#include "sim/trace/inst.h"

#include "sim/core/text.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <string>

namespace warpsim {
namespace {

constexpr std::size_t kNumOpcodes = static_cast<std::size_t>(Opcode::Count);

// Indexed by Opcode; the static_assert below and the order check in the unit tests keep it in step with the enum.
constexpr OpcodeInfo kOpcodeTable[] = {
    // integer
    {"IADD3", OpClass::Int, MemSpace::None, false},
    {"IMAD", OpClass::Int, MemSpace::None, false},
    {"LOP3", OpClass::Int, MemSpace::None, false},
    {"SHF", OpClass::Int, MemSpace::None, false},
    {"ISETP", OpClass::Int, MemSpace::None, false},
    {"MOV", OpClass::Int, MemSpace::None, false},
    {"S2R", OpClass::Int, MemSpace::None, false},
    // fp32 pipe (packed half-precision ops issue there too)
    {"FADD", OpClass::Fp32, MemSpace::None, false},
    {"FMUL", OpClass::Fp32, MemSpace::None, false},
    {"FFMA", OpClass::Fp32, MemSpace::None, false},
    {"FSETP", OpClass::Fp32, MemSpace::None, false},
    {"HADD2", OpClass::Fp32, MemSpace::None, false},
    {"HFMA2", OpClass::Fp32, MemSpace::None, false},
    // fp64
    {"DADD", OpClass::Fp64, MemSpace::None, false},
    {"DMUL", OpClass::Fp64, MemSpace::None, false},
    {"DFMA", OpClass::Fp64, MemSpace::None, false},
    // special function
    {"MUFU", OpClass::Sfu, MemSpace::None, false},
    // tensor
    {"HMMA", OpClass::Tensor, MemSpace::None, false},
    {"HGMMA", OpClass::Tensor, MemSpace::None, false},
    // memory
    {"LDG", OpClass::Ldst, MemSpace::Global, false},
    {"STG", OpClass::Ldst, MemSpace::Global, true},
    {"LDS", OpClass::Ldst, MemSpace::Shared, false},
    {"STS", OpClass::Ldst, MemSpace::Shared, true},
    {"LDSM", OpClass::Ldst, MemSpace::Shared, false},
    {"LDGSTS", OpClass::Ldst, MemSpace::Global, false},  // reads global; the shared-memory write is implied
    {"LDL", OpClass::Ldst, MemSpace::Local, false},
    {"STL", OpClass::Ldst, MemSpace::Local, true},
    {"ATOMG", OpClass::Ldst, MemSpace::Global, true},
    {"RED", OpClass::Ldst, MemSpace::Global, true},
    {"LDC", OpClass::Ldst, MemSpace::Const, false},
    // control and synchronisation
    {"BRA", OpClass::Branch, MemSpace::None, false},
    {"BAR", OpClass::Sync, MemSpace::None, false},
    {"LDGDEPBAR", OpClass::Sync, MemSpace::None, false},
    {"DEPBAR", OpClass::Sync, MemSpace::None, false},
    {"NOP", OpClass::Sync, MemSpace::None, false},
    {"EXIT", OpClass::Exit, MemSpace::None, false},
    // appended (trace format 1.1). The hardware executes shuffles in the MIO/shared-memory crossbar; the model
    // issues SHFL to the integer ALU pipe with its own latency and issue interval (sm.opcodes.SHFL.*).
    {"SHFL", OpClass::Int, MemSpace::None, false},
    // appended (trace format 1.2): wgmma fence, commit and wait; handled by the warp scheduler, no pipe
    {"WARPGROUP_ARRIVE", OpClass::Sync, MemSpace::None, false},
    {"WARPGROUP_COMMIT", OpClass::Sync, MemSpace::None, false},
    {"WARPGROUP_DEPBAR", OpClass::Sync, MemSpace::None, false},
    // TMA load (reads global; the shared-memory write is implied, as for LDGSTS) and the mbarrier operations
    {"UTMALDG", OpClass::Ldst, MemSpace::Global, false},
    {"SYNCS_ARRIVE_TRANS64", OpClass::Sync, MemSpace::None, false},
    {"SYNCS_PHASECHK_TRANS64_TRYWAIT", OpClass::Sync, MemSpace::None, false},
    {"MBARRIER_INIT", OpClass::Sync, MemSpace::None, false},
    // appended (trace format 1.4): bar.arrive; handled by the warp scheduler, no pipe
    {"BAR_ARV", OpClass::Sync, MemSpace::None, false},
    // appended (trace format 1.8): tcgen05. UTCMMA runs on the SM's tensor core, queued (the SM times it, not a
    // sub-partition pipe); the commit and the TMEM load are handled by the warp scheduler.
    {"UTCMMA", OpClass::Tensor, MemSpace::None, false},
    {"UTCBAR", OpClass::Sync, MemSpace::None, false},
    {"LDTM", OpClass::Sync, MemSpace::None, false},
    {"USETMAXREG", OpClass::Sync, MemSpace::None, false},
};
static_assert(sizeof(kOpcodeTable) / sizeof(kOpcodeTable[0]) == kNumOpcodes,
              "kOpcodeTable must have one entry per Opcode");

constexpr std::string_view kOpClassNames[] = {"int",  "fp32", "fp64",   "sfu", "tensor",
                                              "ldst", "branch", "sync", "exit"};
static_assert(sizeof(kOpClassNames) / sizeof(kOpClassNames[0]) == static_cast<std::size_t>(OpClass::Count));

constexpr std::string_view kDTypeNames[] = {"none", "f16", "bf16", "fp8", "tf32", "f32", "f64", "i8", "fp4"};
static_assert(sizeof(kDTypeNames) / sizeof(kDTypeNames[0]) == kDTypeCount);

constexpr std::string_view kMemSpaceNames[] = {"none", "global", "shared", "local", "const"};
static_assert(sizeof(kMemSpaceNames) / sizeof(kMemSpaceNames[0]) == static_cast<std::size_t>(MemSpace::Const) + 1);

constexpr std::string_view kUnknown = "?";

// Linear search over a name array: the tables are tiny and parsing happens only at load time.
template <class Enum, std::size_t N>
bool parse_by_name(const std::string_view (&names)[N], std::string_view name, Enum& out) noexcept {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) {
      out = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}

template <std::size_t N>
std::string_view name_at(const std::string_view (&names)[N], std::size_t index) noexcept {
  return index < N ? names[index] : kUnknown;
}

}  // namespace

const OpcodeInfo& opcode_info(Opcode op) noexcept {
  const auto index = static_cast<std::size_t>(op);
  // Out-of-range values only arise from memory corruption; NOP is a harmless answer that cannot index past the end.
  return kOpcodeTable[index < kNumOpcodes ? index : static_cast<std::size_t>(Opcode::NOP)];
}

bool parse_opcode(std::string_view name, Opcode& out) noexcept {
  for (std::size_t i = 0; i < kNumOpcodes; ++i) {
    if (kOpcodeTable[i].name == name) {
      out = static_cast<Opcode>(i);
      return true;
    }
  }
  return false;
}

std::string_view op_class_name(OpClass c) noexcept { return name_at(kOpClassNames, static_cast<std::size_t>(c)); }

bool parse_op_class(std::string_view name, OpClass& out) noexcept { return parse_by_name(kOpClassNames, name, out); }

std::string_view dtype_name(DType t) noexcept { return name_at(kDTypeNames, static_cast<std::size_t>(t)); }

bool parse_dtype(std::string_view name, DType& out) noexcept { return parse_by_name(kDTypeNames, name, out); }

std::string_view mem_space_name(MemSpace s) noexcept { return name_at(kMemSpaceNames, static_cast<std::size_t>(s)); }

namespace {
constexpr std::string_view kCacheOpNames[] = {"default", "evict_first", "evict_last", "no_allocate", "bypass"};
static_assert(std::size(kCacheOpNames) == static_cast<std::size_t>(CacheOp::Count));
}  // namespace

std::string_view cache_op_name(CacheOp c) noexcept { return name_at(kCacheOpNames, static_cast<std::size_t>(c)); }

bool parse_cache_op(std::string_view name, CacheOp& out) noexcept { return parse_by_name(kCacheOpNames, name, out); }

std::vector<std::string> cache_op_names() { return {std::begin(kCacheOpNames), std::end(kCacheOpNames)}; }

namespace {

bool is_tensor_dtype(DType t) {
  switch (t) {
    case DType::F16:
    case DType::BF16:
    case DType::TF32:
    case DType::FP8:
    case DType::I8:
    case DType::F64:
    case DType::FP4:
      return true;
    case DType::None:
    case DType::F32:
      break;
  }
  return false;
}

std::string check_registers(const char* kind, const std::uint16_t* regs, int count) {
  for (int i = 0; i < count; ++i) {
    if (regs[i] > kRegZero)
      return std::string(kind) + "[" + std::to_string(i) + "] register " +
             (regs[i] == kNoReg ? std::string("kNoReg (0xffff)") : std::to_string(regs[i])) +
             " out of range (expected 0.." + std::to_string(kRegZero) + ", " + std::to_string(kRegZero) + " = RZ)";
  }
  return {};
}

// Every active lane's access must lie within the 64-bit address space: base + offset neither below 0 nor its
// last byte past 2^64 - 1 (the memory models compute lines and sectors in uint64_t and would wrap).
std::string check_lane_addresses(const WarpInst& in) {
  constexpr std::uint64_t kMaxAddress = ~std::uint64_t{0};
  const std::uint64_t width = in.access_bytes ? in.access_bytes : 1;
  for (int lane = 0; lane < kWarpSize; ++lane) {
    if (!(in.active_mask >> lane & 1u)) continue;
    const std::int64_t offset = in.lane_offset(lane);
    const std::uint64_t magnitude = offset < 0 ? 0 - static_cast<std::uint64_t>(offset) : offset;
    const bool below_zero = offset < 0 && magnitude > in.base;
    const bool past_end = offset >= 0 && (in.base > kMaxAddress - magnitude ||
                                          in.base + magnitude > kMaxAddress - (width - 1));
    if (below_zero || past_end) {
      return "lane " + std::to_string(lane) + ": access of " + std::to_string(width) + " bytes at base " +
             text::hex(in.base) + (offset < 0 ? " - " : " + ") + std::to_string(magnitude) +
             (below_zero ? " lies below address 0" : " runs past the end of the 64-bit address space");
    }
  }
  return {};
}

}  // namespace

// The rules are listed in traces/FORMAT.md ("Validity"); keep the two in step. Cheap on the valid path: a few
// comparisons, and the empty result string needs no allocation.
std::string check_inst(const WarpInst& in) {
  if (in.op >= Opcode::Count) return "opcode " + std::to_string(static_cast<unsigned>(in.op)) + " out of range";
  if (in.dtype > kLastDType) return "dtype " + std::to_string(static_cast<unsigned>(in.dtype)) + " out of range";
  if (in.space > MemSpace::Const)
    return "memory space " + std::to_string(static_cast<unsigned>(in.space)) + " out of range";
  if (in.addr_mode > AddrMode::Deltas)
    return "address mode " + std::to_string(static_cast<unsigned>(in.addr_mode)) + " out of range";
  if (in.num_dst > kMaxDst || in.num_src > kMaxSrc)
    return "register counts " + std::to_string(in.num_dst) + "/" + std::to_string(in.num_src) +
           " out of range (more than " + std::to_string(kMaxDst) + " destination or " + std::to_string(kMaxSrc) +
           " source registers)";
  std::string error = check_registers("dst", in.dst.data(), in.num_dst);
  if (error.empty()) error = check_registers("src", in.src.data(), in.num_src);
  if (!error.empty()) return error;

  const OpcodeInfo& info = opcode_info(in.op);
  if (in.space != info.space) {
    return std::string(info.name) + " in memory space " + std::string(mem_space_name(in.space)) + " (expected " +
           (info.space == MemSpace::None ? std::string("none: not a memory instruction")
                                         : std::string(mem_space_name(info.space))) +
           ")";
  }
  if (in.space != MemSpace::None && in.active_mask != 0) {
    if (in.access_bytes < 1 || in.access_bytes > kMaxAccessBytes)
      return std::string(info.name) + " access size " + std::to_string(in.access_bytes) +
             " bytes per lane out of range (expected 1.." + std::to_string(kMaxAccessBytes) + ")";
    if (in.addr_mode == AddrMode::None) return std::string(info.name) + " with active lanes but no address mode";
  }
  if (in.cache >= CacheOp::Count)
    return "cache operator " + std::to_string(static_cast<unsigned>(in.cache)) + " out of range (expected 0.." +
           std::to_string(static_cast<unsigned>(CacheOp::Count) - 1) + ")";
  if (in.cache != CacheOp::Default && in.op != Opcode::LDG && in.op != Opcode::STG)
    return std::string(info.name) + " with cache operator " + std::string(cache_op_name(in.cache)) +
           " (expected default: cache operators apply to LDG and STG)";
  if (in.addr_mode == AddrMode::Strided2D && (in.group < 1 || in.group > kWarpSize))
    return "Strided2D lane group " + std::to_string(in.group) + " out of range (expected 1.." +
           std::to_string(kWarpSize) + ")";
  if (in.addr_mode == AddrMode::Deltas && in.deltas == nullptr)
    return "Deltas address mode without lane offsets";
  if (in.space != MemSpace::None && in.addr_mode != AddrMode::None) {
    if (std::string error = check_lane_addresses(in); !error.empty()) return std::string(info.name) + " " + error;
  }

  // 1.6: an LDG with a wait count is one thread's spin-wait poll of a grid-wide semaphore (sim/slots/grid_sync.h),
  // whose loaded value the program compares (so it repeats once the value is back).
  if (in.op == Opcode::LDG && in.aux != 0 && in.active_mask != 0) {
    if (__builtin_popcount(in.active_mask) != 1)
      return "LDG spin-wait (aux " + std::to_string(in.aux) + " arrivals) issued by " +
             std::to_string(__builtin_popcount(in.active_mask)) + " lanes (expected one thread)";
    // A register, not RZ: the poll repeats once its value has landed there (into RZ it would never wait).
    if (std::none_of(in.dst.begin(), in.dst.begin() + in.num_dst, [](std::uint16_t r) { return r < kRegZero; }))
      return "LDG spin-wait (aux " + std::to_string(in.aux) + " arrivals) without a destination register other than "
             "RZ (expected the register its value is compared in)";
  }
  if (in.op == Opcode::UTMALDG && in.active_mask != 0) {  // (predicated off: no copy)
    if (in.active_mask != 1u) return "UTMALDG issued by lanes other than lane 0 alone (one thread issues a TMA copy)";
    if (in.aux < 1 || in.group_stride < 1 || in.stride < in.group_stride)
      return "UTMALDG box of " + std::to_string(in.aux) + " rows x " + std::to_string(in.group_stride) +
             " bytes, row pitch " + std::to_string(in.stride) + " (expected rows >= 1, row bytes >= 1, pitch >= row bytes)";
    if (std::uint64_t{in.aux} * static_cast<std::uint64_t>(in.group_stride) > kMaxTmaBoxBytes)
      return "UTMALDG box of " + std::to_string(std::uint64_t{in.aux} * static_cast<std::uint64_t>(in.group_stride)) +
             " bytes (expected at most " + std::to_string(kMaxTmaBoxBytes) + ")";
    const std::uint64_t last = in.base + (std::uint64_t{in.aux} - 1) * static_cast<std::uint64_t>(in.stride);
    if (in.base > ~std::uint64_t{0} - (std::uint64_t{in.aux} - 1) * static_cast<std::uint64_t>(in.stride) ||
        last > ~std::uint64_t{0} - static_cast<std::uint64_t>(in.group_stride))
      return "UTMALDG box runs past the end of the 64-bit address space";
  }
  if (in.op == Opcode::UTMALDG || in.op == Opcode::SYNCS_ARRIVE_TRANS64 || in.op == Opcode::UTCBAR ||
      in.op == Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT || in.op == Opcode::MBARRIER_INIT) {
    if (in.group >= kMbarriers)
      return std::string(info.name) + " on mbarrier " + std::to_string(in.group) + " (expected 0.." +
             std::to_string(kMbarriers - 1) + ")";
    if (in.op == Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT && in.aux > 1)
      return std::string(info.name) + " phase parity " + std::to_string(in.aux) + " (expected 0 or 1)";
    if (in.op == Opcode::MBARRIER_INIT && in.aux < 1)
      return "MBARRIER_INIT with an arrival count of 0 (expected at least 1)";
  }

  if (in.op == Opcode::BAR || in.op == Opcode::BAR_ARV) {
    if (in.aux >= kNamedBarriers)
      return std::string(info.name) + " with barrier id " + std::to_string(in.aux) + " (expected 0.." +
             std::to_string(kNamedBarriers - 1) + ")";
    if (in.op == Opcode::BAR_ARV && in.group == 0)
      return "BAR_ARV (bar.arrive) expecting 0 warps (expected 1.." + std::to_string(kMaxCtaWarps) +
             ": bar.arrive requires a thread count)";
    if (in.group > kMaxCtaWarps)
      return std::string(info.name) + " expecting " + std::to_string(in.group) + " warps (expected " +
             (in.op == Opcode::BAR ? "0 = the whole CTA, or 1.." : "1..") + std::to_string(kMaxCtaWarps) +
             ": at most 1024 threads)";
  }

  if (info.op_class == OpClass::Tensor) {
    if (!is_tensor_dtype(in.dtype))
      return std::string(info.name) + " with dtype " + std::string(dtype_name(in.dtype)) +
             " (expected f16, bf16, tf32, fp8, i8, f64 or fp4)";
    if (in.mma.m == 0 || in.mma.n == 0 || in.mma.k == 0)
      return std::string(info.name) + " shape m" + std::to_string(in.mma.m) + "n" + std::to_string(in.mma.n) + "k" +
             std::to_string(in.mma.k) + " has a zero dimension";
    if ((in.aux & ~static_cast<std::uint32_t>(kMmaSparse)) != 0)
      return std::string(info.name) + " aux " + std::to_string(in.aux) + " has bits other than the sparse flag (expected 0 or " +
             std::to_string(kMmaSparse) + ")";
    // PTX ISA, tcgen05.mma (cta_group::1): M 64 with N a multiple of 8, or M 128 with N a multiple of 16; N up to
    // 256. One thread issues it.
    if (in.op == Opcode::UTCMMA) {
      // K is 32 bytes of the operand type (kind::f16 k16, tf32 k8, f8f6f4 and i8 k32, mxf4 k64); no fp64 kind.
      if (in.dtype == DType::F64) return "UTCMMA with dtype f64 (tcgen05.mma has no fp64 kind)";
      const std::uint32_t k = in.dtype == DType::TF32 ? 8 : in.dtype == DType::FP4 ? 64
                              : (in.dtype == DType::FP8 || in.dtype == DType::I8) ? 32 : 16;
      if (in.mma.k != k)
        return "UTCMMA " + std::string(dtype_name(in.dtype)) + " with k" + std::to_string(in.mma.k) + " (expected k" +
               std::to_string(k) + ": 32 bytes of K)";
    }
    if (in.op == Opcode::UTCMMA && in.active_mask != 0) {
      if (in.active_mask != 1u) return "UTCMMA issued by lanes other than lane 0 alone (one thread issues a tcgen05.mma)";
      if (!((in.mma.m == 64 && in.mma.n % 8 == 0) || (in.mma.m == 128 && in.mma.n % 16 == 0)) || in.mma.n > 256)
        return "UTCMMA shape m" + std::to_string(in.mma.m) + "n" + std::to_string(in.mma.n) + "k" +
               std::to_string(in.mma.k) + " (expected m64 with n a multiple of 8, or m128 with n a multiple of 16; "
               "n at most 256)";
    }
  }
  if ((in.op == Opcode::LDS || in.op == Opcode::STS) && __builtin_popcount(in.cluster_cta_mask()) > 1)
    return std::string(info.name) + " on the shared memory of several CTAs (cluster mask " +
           std::to_string(in.cluster_cta_mask()) + "; expected one bit, or 0 for its own)";
  if (in.op == Opcode::USETMAXREG && (in.aux < 24 || in.aux > 256 || in.aux % 8 != 0 || in.group > 1))
    return "USETMAXREG to " + std::to_string(in.aux) + " registers, group " + std::to_string(in.group) +
           " (expected 24..256 registers, a multiple of 8; group 1 = inc, 0 = dec)";
  if (in.op == Opcode::LDTM && (in.aux < 1 || in.aux > 128))
    return "LDTM of " + std::to_string(in.aux) + " columns (expected 1..128 32-bit columns per thread)";
  return {};
}

std::uint64_t mma_flops_per_warp(const WarpInst& inst) noexcept {
  const std::uint64_t full = 2ull * inst.mma.m * inst.mma.n * inst.mma.k;
  switch (inst.op) {
    case Opcode::HMMA:
    case Opcode::UTCMMA:
      return full;
    case Opcode::HGMMA:
      return full / 4;  // each of the warpgroup's four warps issues a quarter of the MMA
    default:
      return 0;
  }
}

}  // namespace warpsim
