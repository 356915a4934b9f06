// Opcode table and the name <-> enum conversions declared in inst.h.
#include "sim/trace/inst.h"

#include <cstddef>

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
};
static_assert(sizeof(kOpcodeTable) / sizeof(kOpcodeTable[0]) == kNumOpcodes,
              "kOpcodeTable must have one entry per Opcode");

constexpr std::string_view kOpClassNames[] = {"int",  "fp32", "fp64",   "sfu", "tensor",
                                              "ldst", "branch", "sync", "exit"};
static_assert(sizeof(kOpClassNames) / sizeof(kOpClassNames[0]) == static_cast<std::size_t>(OpClass::Count));

constexpr std::string_view kDTypeNames[] = {"none", "f16", "bf16", "fp8", "tf32", "f32", "f64", "i8"};
static_assert(sizeof(kDTypeNames) / sizeof(kDTypeNames[0]) == static_cast<std::size_t>(DType::I8) + 1);

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

std::uint64_t mma_flops_per_warp(const WarpInst& inst) noexcept {
  const std::uint64_t full = 2ull * inst.mma.m * inst.mma.n * inst.mma.k;
  switch (inst.op) {
    case Opcode::HMMA:
      return full;
    case Opcode::HGMMA:
      return full / 4;  // each of the warpgroup's four warps issues a quarter of the MMA
    default:
      return 0;
  }
}

}  // namespace warpsim
