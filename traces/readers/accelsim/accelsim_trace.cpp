#include "traces/readers/accelsim/accelsim_trace.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include <zstd.h>

#include "sim/core/error.h"
#include "sim/core/text.h"
#include "traces/readers/accelsim/text_stream.h"

namespace warpsim::accelsim {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail_at(const std::string& file, std::uint64_t line, const std::string& what) {
  throw TraceError(fmt::format("{}:{}: {}", file, line, what));
}

using text::ends_with;
using text::starts_with;
using text::trim;

template <class T>
bool parse_number(std::string_view text, T& out, int base = 10) {
  if (base == 16 && (starts_with(text, "0x") || starts_with(text, "0X"))) text.remove_prefix(2);
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
  return ec == std::errc() && end == text.data() + text.size();
}

// Whitespace-separated tokens of one line.
class Tokens {
 public:
  explicit Tokens(std::string_view line) : rest_(line) {}
  bool next(std::string_view& tok) {
    std::size_t i = 0;
    while (i < rest_.size() && (rest_[i] == ' ' || rest_[i] == '\t')) ++i;
    if (i == rest_.size()) return false;
    std::size_t j = i;
    while (j < rest_.size() && rest_[j] != ' ' && rest_[j] != '\t') ++j;
    tok = rest_.substr(i, j - i);
    rest_.remove_prefix(j);
    return true;
  }

 private:
  std::string_view rest_;
};

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "(x,y,z)" or "x,y,z" -> Dim3
bool parse_dim3(std::string_view text, Dim3& out) {
  text = trim(text);
  if (starts_with(text, "(") && ends_with(text, ")")) text = text.substr(1, text.size() - 2);
  std::uint32_t v[3];
  for (int i = 0; i < 3; ++i) {
    const std::size_t comma = i < 2 ? text.find(',') : text.size();
    if (comma == std::string_view::npos) return false;
    if (!parse_number(trim(text.substr(0, comma)), v[i])) return false;
    text.remove_prefix(std::min(text.size(), comma + 1));
  }
  out = {v[0], v[1], v[2]};
  return true;
}

// Known mma.sync shapes, as SASS spells them (HMMA.16816 = m16n8k16).
bool parse_mma_shape(std::string_view tok, MmaShape& out) {
  static const std::pair<std::string_view, MmaShape> kShapes[] = {
      {"884", {8, 8, 4}},       {"1684", {16, 8, 4}},     {"1688", {16, 8, 8}},     {"16816", {16, 8, 16}},
      {"16832", {16, 8, 32}},   {"16864", {16, 8, 64}},   {"168128", {16, 8, 128}}, {"168256", {16, 8, 256}},
      {"8816", {8, 8, 16}},     {"8832", {8, 8, 32}},     {"88128", {8, 8, 128}},   {"8816", {8, 8, 16}},
  };
  for (const auto& [name, shape] : kShapes)
    if (tok == name) {
      out = shape;
      return true;
    }
  // Warpgroup MMA: 64xNxK
  const std::size_t x1 = tok.find('x'), x2 = x1 == std::string_view::npos ? x1 : tok.find('x', x1 + 1);
  if (x2 == std::string_view::npos) return false;
  std::uint16_t m = 0, n = 0, k = 0;
  if (!parse_number(tok.substr(0, x1), m) || !parse_number(tok.substr(x1 + 1, x2 - x1 - 1), n) ||
      !parse_number(tok.substr(x2 + 1), k) || !m || !n || !k)
    return false;
  out = {m, n, k};
  return true;
}

// The cache operator an LDG/STG's modifiers spell: .EF (ld.cs, L1::evict_first) and .LU (ld.lu) evict first,
// .EL (L1::evict_last) last, .NA (L1::no_allocate) reads L1 without allocating, and a gpu- or system-scope strong
// access (.STRONG.GPU, .STRONG.SYS: ld.relaxed/acquire/volatile, ld.cg) goes past L1, which is not coherent at that
// scope. .STRONG.SM/.CTA and .CONSTANT (ld.global.nc) are cached as plain loads.
CacheOp cache_op_of_modifiers(const std::vector<std::string_view>& mods) {
  CacheOp op = CacheOp::Default;
  for (std::size_t i = 0; i < mods.size(); ++i) {
    if (mods[i] == "EF" || mods[i] == "LU") op = CacheOp::EvictFirst;
    else if (mods[i] == "EL") op = CacheOp::EvictLast;
    else if (mods[i] == "NA") op = CacheOp::NoAllocate;
    else if (mods[i] == "STRONG" && i + 1 < mods.size() && (mods[i + 1] == "GPU" || mods[i + 1] == "SYS"))
      return CacheOp::Bypass;
  }
  return op;
}

// Operand-type modifiers of MMAs: the warpsim type and the bytes of one element.
bool mma_type(std::string_view tok, DType& type, int& bytes) {
  if (tok == "F16") { type = DType::F16; bytes = 2; return true; }
  if (tok == "BF16") { type = DType::BF16; bytes = 2; return true; }
  if (tok == "TF32") { type = DType::TF32; bytes = 4; return true; }
  if (tok == "F32") { type = DType::F32; bytes = 4; return true; }
  if (tok == "F64") { type = DType::F64; bytes = 8; return true; }
  if (tok == "E4M3" || tok == "E5M2") { type = DType::FP8; bytes = 1; return true; }
  if (tok == "E2M1") { type = DType::FP4; bytes = 1; return true; }  // two per byte; `bytes` sizes accumulators only
  if (tok == "S8" || tok == "U8" || tok == "S4" || tok == "U4" || tok == "B1") { type = DType::I8; bytes = 1; return true; }
  if (tok == "S32") { type = DType::F32; bytes = 4; return true; }  // integer accumulator
  return false;
}

}  // namespace

// ---- one instruction line ------------------------------------------------------------------------------------

struct LineDecoder::Resolved {
  std::string opcode;             // the trace's spelling, e.g. "IMAD.MOV.U32"
  const SassOpcode* entry = nullptr;
  std::uint8_t suffix_width = 0;  // bytes per lane from a .8/.16/.32/.64/.128 or .U8/.S16... modifier (0: none)
  DType dtype = DType::None;
  MmaShape mma{};
  bool sparse = false;
  int acc_regs = 1;               // registers an MMA writes per thread (up to kMaxDst)
  int ldsm_matrices = 4;          // LDSM .1/.2/.4
  CacheOp cache = CacheOp::Default;  // LDG/STG: from the cache-operator modifiers
  std::uint32_t ldtm_columns = 0;    // LDTM: 32-bit registers per lane (the .xN modifier and the shape's width)
  // Runs as an untimed NOP although its row names a timed opcode: a tcgen05.mma without a shape modifier (the shape
  // is in an instruction descriptor the tracer does not record).
  bool untimed = false;
};

LineDecoder::LineDecoder(const KernelHeader& header, const SassOpcodeTable& table, std::string file)
    : header_(header), table_(table), file_(std::move(file)) {}

const LineDecoder::Resolved& LineDecoder::resolve(std::string_view opcode, std::uint64_t line_no) const {
  if (const auto it = cache_.find(opcode); it != cache_.end()) return *it->second;
  auto r = std::make_shared<Resolved>();
  r->opcode = std::string(opcode);
  r->entry = table_.find(opcode);
  if (!r->entry)
    fail_at(file_, line_no,
            fmt::format("unknown SASS opcode '{}' for binary version {} (not in {}; add a row there)", opcode,
                        header_.binary_version, table_.file()));
  std::vector<std::string_view> mods;
  for (std::size_t start = opcode.find('.'); start != std::string_view::npos;) {
    const std::size_t next = opcode.find('.', start + 1);
    mods.push_back(opcode.substr(start + 1, next == std::string_view::npos ? std::string_view::npos : next - start - 1));
    start = next;
  }
  const std::string_view base = opcode.substr(0, opcode.find('.'));
  const SassOpcode& e = *r->entry;
  if (e.space != MemSpace::None) {
    // As Accel-Sim's get_datawidth_from_opcode: the first numeric modifier in bits, or U<bits>/S<bits>.
    for (std::string_view m : mods) {
      std::string_view digits = m;
      if (!digits.empty() && (digits[0] == 'U' || digits[0] == 'S')) digits.remove_prefix(1);
      unsigned bits = 0;
      if (is_digits(digits) && parse_number(digits, bits) && (bits == 8 || bits == 16 || bits == 32 || bits == 64 || bits == 128)) {
        r->suffix_width = static_cast<std::uint8_t>(bits / 8);
        break;
      }
    }
    if (e.op == Opcode::LDSM) {
      const std::string_view last = mods.empty() ? std::string_view() : mods.back();
      r->ldsm_matrices = last == "1" ? 1 : last == "2" ? 2 : 4;
    }
    if (e.op == Opcode::LDG || e.op == Opcode::STG) r->cache = cache_op_of_modifiers(mods);
  }
  if (e.op_class == OpClass::Tensor) {
    bool shaped = false;
    DType first_type = DType::None, input_type = DType::None;
    int acc_bytes = 4;
    for (std::string_view m : mods) {
      DType t;
      int bytes = 0;
      if (!shaped && parse_mma_shape(m, r->mma)) {
        shaped = true;
      } else if (mma_type(m, t, bytes)) {
        if (first_type == DType::None) {
          first_type = t;
          acc_bytes = bytes;
        }
        if (t != DType::F32) input_type = t;
      } else if (m == "SP") {
        r->sparse = true;
      }
    }
    if (!shaped && e.op == Opcode::UTCMMA) {
      r->untimed = true;
      cache_.emplace(r->opcode, r);
      return *r;
    }
    if (!shaped)
      fail_at(file_, line_no, fmt::format("{}: no MMA shape modifier (expected e.g. .16816 or .64x128x16)", opcode));
    if (input_type == DType::None)
      input_type = base == "DMMA"                                                             ? DType::F64
                   : (base == "IMMA" || base == "BMMA" || base == "IGMMA" || base == "UTCIMMA") ? DType::I8
                   : base == "UTCQMMA"                                                          ? DType::FP8
                   : base == "UTCOMMA"                                                          ? DType::FP4
                                                                                                : DType::F16;
    r->dtype = input_type;
    const std::uint64_t acc_elements = std::uint64_t{r->mma.m} * r->mma.n / kWarpSize;
    r->acc_regs = static_cast<int>(std::clamp<std::uint64_t>(acc_elements * acc_bytes / 4, 1, kMaxDst));
  }
  if (e.op == Opcode::LDTM) {
    // tcgen05.ld .xN repeats the shape N times; a 16x128b or 16x256b shape gives each lane 2 or 4 registers per
    // repeat, the 32x32b and 16x64b shapes 1 (PTX ISA, tcgen05.ld). The SASS spellings of the wide shapes are
    // assumed by analogy with `16dp32bit` (no listing here shows them); no .xN is one repeat.
    std::uint32_t repeats = 1, per_repeat = 1;
    for (std::string_view m : mods) {
      if (m.size() > 1 && m[0] == 'x' && is_digits(m.substr(1))) parse_number(m.substr(1), repeats);
      if (m == "16dp128bit") per_repeat = 2;
      if (m == "16dp256bit") per_repeat = 4;
    }
    r->ldtm_columns = repeats * per_repeat;
  }
  cache_.emplace(r->opcode, r);  // the key views the Resolved's own copy of the opcode
  return *r;
}

const SassOpcode* LineDecoder::decode(std::string_view line, std::uint64_t line_no, bool last_in_warp, WarpInst& out,
                                      std::int32_t* deltas) const {
  Tokens tokens(line);
  std::string_view tok;
  auto next = [&](const char* what) -> std::string_view {
    if (!tokens.next(tok)) fail_at(file_, line_no, fmt::format("line ends where {} was expected", what));
    return tok;
  };
  auto number = [&](const char* what, int base) -> std::uint64_t {
    std::string_view t = next(what);
    std::uint64_t v = 0;
    if (!parse_number(t, v, base))
      fail_at(file_, line_no, fmt::format("'{}' is not a valid {} ({} number expected)", t, what, base == 16 ? "hexadecimal" : "decimal"));
    return v;
  };
  auto signed_number = [&](const char* what) -> std::int64_t {
    std::string_view t = next(what);
    std::int64_t v = 0;
    if (!parse_number(t, v)) fail_at(file_, line_no, fmt::format("'{}' is not a valid {} (signed decimal expected)", t, what));
    return v;
  };
  // Registers: R0..R255 (R255 = RZ). Uniform registers (UR) have no scoreboard in the model and are dropped.
  auto registers = [&](const char* what, std::uint16_t* regs, int& kept) {
    const std::uint64_t count = number(what, 10);
    if (count > 32) fail_at(file_, line_no, fmt::format("{} {} out of range", what, count));
    kept = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::string_view r = next("a register");
      unsigned id = 0;
      if (starts_with(r, "UR") && parse_number(r.substr(2), id) && id <= 255) continue;
      if (!starts_with(r, "R") || !parse_number(r.substr(1), id) || id > kRegZero)
        fail_at(file_, line_no, fmt::format("'{}' is not a register (expected R0..R255 or UR0..UR255)", r));
      if (kept < 8) regs[kept++] = static_cast<std::uint16_t>(id);
    }
  };

  if (header_.tracer_version < 3)  // tb_x tb_y tb_z warp prefix of the old tracers
    for (int i = 0; i < 4; ++i) number("thread-block/warp prefix", 10);
  if (header_.lineinfo) number("source line number", 10);
  const std::uint64_t pc = number("PC", 16);
  if (pc > 0xffffffffu) fail_at(file_, line_no, fmt::format("PC {:#x} beyond 32 bits", pc));
  const std::uint64_t mask = number("active mask", 16);
  if (mask > 0xffffffffu) fail_at(file_, line_no, fmt::format("active mask {:#x} wider than 32 lanes", mask));
  std::uint16_t dst[8], src[8];
  int num_dst = 0, num_src = 0;
  registers("destination count", dst, num_dst);
  const std::string_view opcode = next("the opcode");
  const Resolved& r = resolve(opcode, line_no);
  registers("source count", src, num_src);
  const std::uint64_t mem_width = number("memory width", 10);

  out = WarpInst{};
  out.pc = static_cast<std::uint32_t>(pc);
  out.active_mask = static_cast<std::uint32_t>(mask);
  const SassOpcode& e = *r.entry;
  out.op = r.untimed ? Opcode::NOP : e.op;
  if (out.op == Opcode::EXIT && !last_in_warp) out.op = Opcode::BRA;  // lanes exit, the warp goes on

  // Addresses: decoded for every line that has them (to reach the fields after them), kept for memory opcodes.
  std::uint64_t addr[kWarpSize];  // active lanes only (set below before any use)
  int mode = -1;
  std::int64_t stride = 0;
  int first_lane = -1;
  if (mem_width > 0) {
    mode = static_cast<int>(number("address mode", 10));
    for (int lane = 0; lane < kWarpSize; ++lane)
      if (mask >> lane & 1u) {
        first_lane = lane;
        break;
      }
    const int active = __builtin_popcount(static_cast<std::uint32_t>(mask));
    switch (mode) {
      case 0:
        for (int lane = 0; lane < kWarpSize; ++lane)
          if (mask >> lane & 1u) addr[lane] = number("lane address", 16);
        break;
      case 1: {
        const std::uint64_t base = number("base address", 16);
        stride = signed_number("stride");
        for (int lane = 0; lane < kWarpSize; ++lane)
          if (mask >> lane & 1u)  // wrapping (unsigned) arithmetic: a huge stride must not overflow a signed product
            addr[lane] = base + static_cast<std::uint64_t>(stride) * static_cast<std::uint64_t>(lane - first_lane);
        break;
      }
      case 2: {
        std::uint64_t a = number("base address", 16);
        bool first = true;
        for (int lane = 0; lane < kWarpSize; ++lane) {
          if (!(mask >> lane & 1u)) continue;
          if (!first) a += static_cast<std::uint64_t>(signed_number("address delta"));
          addr[lane] = a;
          first = false;
        }
        (void)active;
        break;
      }
      default:
        fail_at(file_, line_no, fmt::format("address mode {} unknown (expected 0 list, 1 base+stride, 2 base+deltas)", mode));
    }
  }
  std::int64_t immediate = 0;
  if (header_.tracer_version >= 5) immediate = signed_number("immediate");
  if (tokens.next(tok))
    fail_at(file_, line_no, fmt::format("unexpected '{}' after the instruction's last field (tracer version {})", tok,
                                        header_.tracer_version));

  // Registers. The tracer records one destination (MAX_DST = 1): wide loads, LDSM and MMAs write consecutive ones.
  int dst_count = num_dst;
  if (num_dst == 1 && dst[0] != kRegZero) {
    int expand = 1;
    if (e.op == Opcode::LDSM) expand = r.ldsm_matrices;
    else if (e.op == Opcode::LDTM) expand = static_cast<int>(std::min<std::uint32_t>(r.ldtm_columns, kMaxDst));
    else if (e.op_class == OpClass::Tensor) expand = r.acc_regs;
    dst_count = std::min<int>(expand, kRegZero - dst[0]);
    for (int i = 1; i < dst_count; ++i) dst[i] = static_cast<std::uint16_t>(dst[0] + i);
  }
  out.num_dst = static_cast<std::uint8_t>(std::min(dst_count, kMaxDst));
  for (int i = 0; i < out.num_dst; ++i) out.dst[i] = dst[i];
  if (num_src > kMaxSrc) {  // RZ carries no dependence: drop it first
    num_src = static_cast<int>(std::remove(src, src + num_src, kRegZero) - src);
  }
  out.num_src = static_cast<std::uint8_t>(std::min(num_src, kMaxSrc));
  for (int i = 0; i < out.num_src; ++i) out.src[i] = src[i];

  if (e.space != MemSpace::None) {
    out.space = e.space;
    std::uint8_t width = r.suffix_width;
    if (e.op == Opcode::LDSM) width = 16;  // ldmatrix: each lane names a 16-byte row
    if (!width && mem_width >= 1 && mem_width <= kMaxAccessBytes) width = static_cast<std::uint8_t>(mem_width);
    if (!width) width = e.width;
    out.access_bytes = width;
    out.cache = r.cache;
    if (!opcode_info(e.op).is_store && e.op != Opcode::LDSM && e.op != Opcode::LDGSTS && num_dst == 1 &&
        dst[0] != kRegZero && width > 4) {
      out.num_dst = static_cast<std::uint8_t>(std::min<int>({(width + 3) / 4, kMaxDst, kRegZero - dst[0]}));
      for (int i = 1; i < out.num_dst; ++i) out.dst[i] = static_cast<std::uint16_t>(dst[0] + i);
    }
    if (out.active_mask != 0) {
      if (mem_width == 0)
        fail_at(file_, line_no, fmt::format("{}: memory instruction with active lanes but no addresses (memory width 0)", opcode));
      // base+stride with the first active lane at 0: the model's own Strided mode; otherwise per-lane offsets.
      const __int128 strided_base = static_cast<__int128>(addr[first_lane]) - static_cast<__int128>(stride) * first_lane;
      if (mode == 1 && stride >= INT32_MIN && stride <= INT32_MAX && strided_base >= 0 &&
          strided_base <= static_cast<__int128>(~std::uint64_t{0})) {
        out.addr_mode = AddrMode::Strided;
        out.base = static_cast<std::uint64_t>(strided_base);
        out.stride = static_cast<std::int32_t>(stride);
      } else {
        std::uint64_t lo = ~std::uint64_t{0}, hi = 0;
        for (int lane = 0; lane < kWarpSize; ++lane)
          if (out.active_mask >> lane & 1u) {
            lo = std::min(lo, addr[lane]);
            hi = std::max(hi, addr[lane]);
          }
        if (hi - lo > 0xffffffffull)
          fail_at(file_, line_no, fmt::format("{}: lane addresses span {} bytes (from {:#x} to {:#x}); warpsim's per-lane "
                                              "offsets are 32-bit", opcode, hi - lo, lo, hi));
        const std::uint64_t base = hi - lo > 0x7fffffffull ? lo + 0x80000000ull : lo;
        out.addr_mode = AddrMode::Deltas;
        out.base = base;
        for (int lane = 0; lane < kWarpSize; ++lane)
          deltas[lane] = out.active_mask >> lane & 1u ? static_cast<std::int32_t>(static_cast<std::int64_t>(addr[lane] - base)) : 0;
        out.deltas = deltas;
      }
    }
  }
  if (e.op == Opcode::LDTM) out.aux = r.ldtm_columns;
  if (e.op_class == OpClass::Tensor && !r.untimed) {
    out.dtype = r.dtype;
    out.mma = r.mma;
    out.aux = r.sparse ? kMmaSparse : 0;
  }
  // The v5 immediate: a BAR's barrier id, a DEPBAR's count of cp.async groups allowed outstanding. The tracer
  // keeps the last immediate operand (tracer_tool.cu, accel-sim/accel-sim-framework@0111427: imm_value is
  // overwritten by each IMM_UINT64 operand), so for `BAR.SYNC id, count` and `BAR.ARV id, count` it is the
  // thread count: a multiple of 32, never a barrier id (0..15). The id is then lost; such barriers are read as
  // barrier 0 with their count (README.md, "Instruction lines").
  if (e.op == Opcode::BAR || e.op == Opcode::BAR_ARV) {
    const bool is_count = immediate >= kWarpSize && immediate <= std::int64_t{kMaxCtaWarps} * kWarpSize &&
                          immediate % kWarpSize == 0;
    if (is_count) out.group = static_cast<std::uint8_t>(immediate / kWarpSize);
    else if (e.op == Opcode::BAR && immediate >= 0 && immediate < kNamedBarriers)
      out.aux = static_cast<std::uint32_t>(immediate);
    if (e.op == Opcode::BAR_ARV && !is_count)
      fail_at(file_, line_no,
              fmt::format("{}: immediate {} is not a thread count (bar.arrive needs one: a multiple of 32 in 32..1024; "
                          "traces before tracer version 5 carry none)",
                          opcode, immediate));
  }
  if (e.op == Opcode::DEPBAR && immediate >= 0 && immediate < 64) out.aux = static_cast<std::uint32_t>(immediate);

  const std::string problem = check_inst(out);
  if (!problem.empty()) fail_at(file_, line_no, fmt::format("{}: {}", opcode, problem));
  return r.untimed || e.report_untimed ? &e : nullptr;
}

// ---- kernel files --------------------------------------------------------------------------------------------

namespace {

// "-key = value" -> key, value
bool header_field(std::string_view line, std::string_view& key, std::string_view& value) {
  if (!starts_with(line, "-")) return false;
  const std::size_t eq = line.find('=');
  if (eq == std::string_view::npos) return false;
  key = trim(line.substr(1, eq - 1));
  value = trim(line.substr(eq + 1));
  return true;
}

// Walks the structure of CTA blocks: "#BEGIN_TB", "thread block = x,y,z", ("warp = w", "insts = n", n lines)...,
// "#END_TB". Shared by the indexing pass (the whole file) and open_cta (one CTA's text).
class BlockParser {
 public:
  BlockParser(const KernelIndex& k, const std::string& file) : k_(k), file_(file) {}
  enum class State { Outside, ThreadBlock, WarpOrEnd, Insts, Body };

  struct Event {
    enum Kind { None, BeginCta, Cta, Warp, Inst, EndCta } kind = None;
    std::uint64_t cta = 0;   // linear id (Cta)
    std::uint32_t warp = 0;  // (Warp)
    std::uint64_t insts = 0; // (Warp)
    bool last_in_warp = false;
  };

  Event feed(std::string_view raw, std::uint64_t line_no) {
    const std::string_view line = trim(raw);
    Event ev;
    if (state_ == State::Body) {
      if (line.empty()) return ev;
      if (line.front() == '#' || starts_with(line, "warp"))
        fail_at(file_, line_no, fmt::format("'{}' after {} of warp {}'s {} instruction lines ('insts = {}')", clip(line),
                                            insts_ - left_, warp_, insts_, insts_));
      ev.kind = Event::Inst;
      ev.last_in_warp = --left_ == 0;
      if (left_ == 0) state_ = State::WarpOrEnd;
      return ev;
    }
    if (line.empty()) return ev;
    std::string_view key, value;
    switch (state_) {
      case State::Outside:
        if (line == "#BEGIN_TB") {
          state_ = State::ThreadBlock;
          ev.kind = Event::BeginCta;
          return ev;
        }
        if (line.front() == '#' || line.front() == '-') return ev;  // comments and header lines
        fail_at(file_, line_no, fmt::format("'{}': expected #BEGIN_TB", clip(line)));
      case State::ThreadBlock: {
        Dim3 c;
        if (!split(line, key, value) || key != "thread block" || !parse_dim3(value, c))
          fail_at(file_, line_no, fmt::format("'{}': expected 'thread block = x,y,z'", clip(line)));
        const Dim3& g = k_.header.info.grid;
        if (c.x >= g.x || c.y >= g.y || c.z >= g.z)
          fail_at(file_, line_no, fmt::format("thread block ({},{},{}) outside the grid ({},{},{})", c.x, c.y, c.z, g.x, g.y, g.z));
        ev.kind = Event::Cta;
        ev.cta = c.x + std::uint64_t{g.x} * (c.y + std::uint64_t{g.y} * c.z);
        seen_warps_.assign(k_.header.info.warps_per_cta(), false);
        state_ = State::WarpOrEnd;
        return ev;
      }
      case State::WarpOrEnd: {
        if (line == "#END_TB") {
          state_ = State::Outside;
          ev.kind = Event::EndCta;
          return ev;
        }
        std::uint32_t w = 0;
        if (std::isxdigit(static_cast<unsigned char>(line.front())) && line.find('=') == std::string_view::npos)
          fail_at(file_, line_no, fmt::format("more instruction lines than warp {}'s 'insts = {}'", warp_, insts_));
        if (!split(line, key, value) || key != "warp" || !parse_number(value, w))
          fail_at(file_, line_no, fmt::format("'{}': expected 'warp = N' or #END_TB", clip(line)));
        if (w >= seen_warps_.size())
          fail_at(file_, line_no, fmt::format("warp {} out of range (a block of {} threads has {} warps)", w,
                                              k_.header.info.block.count(), seen_warps_.size()));
        if (seen_warps_[w]) fail_at(file_, line_no, fmt::format("warp {} listed twice in this thread block", w));
        seen_warps_[w] = true;
        warp_ = w;
        state_ = State::Insts;
        return ev;
      }
      case State::Insts: {
        std::uint64_t n = 0;
        if (!split(line, key, value) || key != "insts" || !parse_number(value, n))
          fail_at(file_, line_no, fmt::format("'{}': expected 'insts = N'", clip(line)));
        ev.kind = Event::Warp;
        ev.warp = warp_;
        ev.insts = n;
        left_ = insts_ = n;
        state_ = n ? State::Body : State::WarpOrEnd;
        return ev;
      }
      case State::Body:
        break;
    }
    return ev;
  }
  State state() const { return state_; }
  std::uint64_t left() const { return left_; }

 private:
  static bool split(std::string_view line, std::string_view& key, std::string_view& value) {
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) return false;
    key = trim(line.substr(0, eq));
    value = trim(line.substr(eq + 1));
    return true;
  }
  static std::string clip(std::string_view s) { return std::string(s.substr(0, 60)) + (s.size() > 60 ? "..." : ""); }

  const KernelIndex& k_;
  const std::string& file_;
  State state_ = State::Outside;
  std::vector<bool> seen_warps_;
  std::uint32_t warp_ = 0;
  std::uint64_t left_ = 0;
  std::uint64_t insts_ = 0;  // the current warp's 'insts = N'
};

void parse_header_line(KernelHeader& h, std::string_view key, std::string_view value, const std::string& file,
                       std::uint64_t line_no) {
  auto num = [&](auto& out) {
    if (!parse_number(value, out)) fail_at(file, line_no, fmt::format("-{} = '{}': expected a number", key, value));
  };
  if (key == "kernel name") {
    h.info.name = std::string(value);
  } else if (key == "kernel id") {
    num(h.kernel_id);
  } else if (key == "grid dim") {
    if (!parse_dim3(value, h.info.grid)) fail_at(file, line_no, fmt::format("-grid dim = '{}': expected (x,y,z)", value));
  } else if (key == "block dim") {
    if (!parse_dim3(value, h.info.block)) fail_at(file, line_no, fmt::format("-block dim = '{}': expected (x,y,z)", value));
  } else if (key == "shmem") {
    num(h.info.shared_mem_bytes);
  } else if (key == "nregs") {
    num(h.info.registers_per_thread);
  } else if (key == "binary version") {
    num(h.binary_version);
  } else if (key == "cuda stream id") {
    num(h.stream_id);
  } else if (key == "accelsim tracer version") {
    num(h.tracer_version);
  } else if (key == "enable lineinfo") {
    int v = 0;
    num(v);
    h.lineinfo = v != 0;
  }
  // Other keys (nvbit version, shmem/local base addresses, fork additions such as cluster dims) do not change
  // how the body is read.
}

}  // namespace

KernelIndex index_kernel_file(const std::string& path) {
  KernelIndex k;
  k.path = path;
  TextStream in(path);
  std::string line;
  std::uint64_t line_no = 0;
  // Read and decompression errors name the line being read.
  auto next_line = [&]() -> bool {
    try {
      return in.next_line(line);
    } catch (const TextStreamError& e) {
      fail_at(path, line_no + 1, e.what());
    }
  };
  // Header: "-key = value" lines up to the first #BEGIN_TB.
  std::uint64_t begin_offset = 0;
  bool have_body = false;
  bool seen_name = false, seen_grid = false, seen_block = false, seen_version = false, seen_tracer = false,
       seen_nregs = false;
  while (true) {
    begin_offset = in.position();
    if (!next_line()) break;
    ++line_no;
    const std::string_view t = trim(line);
    if (t == "#BEGIN_TB") {
      have_body = true;
      break;
    }
    std::string_view key, value;
    if (header_field(t, key, value)) {
      parse_header_line(k.header, key, value, path, line_no);
      seen_name |= key == "kernel name";
      seen_grid |= key == "grid dim";
      seen_block |= key == "block dim";
      seen_version |= key == "binary version";
      seen_tracer |= key == "accelsim tracer version";
      seen_nregs |= key == "nregs";
      continue;
    }
    if (t.empty() || t.front() == '#') continue;
    fail_at(path, line_no, fmt::format("'{}': expected a header line '-key = value' or #BEGIN_TB", t.substr(0, 60)));
  }
  const char* missing = !seen_name ? "-kernel name" : !seen_grid ? "-grid dim" : !seen_block ? "-block dim"
                      : !seen_version ? "-binary version" : !seen_tracer ? "-accelsim tracer version"
                      : !seen_nregs ? "-nregs" : nullptr;
  if (missing) fail_at(path, line_no, fmt::format("the header has no '{} = ...' line (truncated or not a kernel trace?)", missing));
  if (k.header.tracer_version < 1 || k.header.tracer_version > 5)
    fail_at(path, line_no, fmt::format("accelsim tracer version {} unknown (this reader knows 1 to 5)", k.header.tracer_version));
  k.header.info.target_arch = "sm_" + std::to_string(k.header.binary_version);
  if (const std::string problem = check_kernel_info(k.header.info); !problem.empty())
    fail_at(path, line_no, "invalid kernel: " + problem);
  const SassOpcodeTable& table = [&]() -> const SassOpcodeTable& {
    try {
      return SassOpcodeTable::for_binary_version(k.header.binary_version);
    } catch (const InputError& e) {
      fail_at(path, line_no, e.what());
    }
  }();
  if (!have_body) fail_at(path, line_no, "no thread blocks (#BEGIN_TB): truncated?");

  const std::uint64_t num_ctas = k.header.info.grid.count();
  // Guards against a corrupt header (the tables below grow with what the file holds, not with these numbers).
  constexpr std::uint32_t kMaxWarpsPerCta = 1u << 16;  // 2M threads: far beyond any GPU's 1024 per block
  if (k.header.info.warps_per_cta() > kMaxWarpsPerCta)
    fail_at(path, line_no, fmt::format("block of {} threads: more than {} warps per CTA (corrupt header?)",
                                       k.header.info.block.count(), kMaxWarpsPerCta));
  // CTAs in file order, placed by their id at the end: memory follows the file, not the grid size in its header.
  struct Found {
    std::uint64_t id;
    KernelIndex::Cta cta;
  };
  std::vector<Found> found;
  std::map<int, std::uint64_t> untimed;  // table row (its line) -> lines run untimed
  const LineDecoder decoder(k.header, table, path);
  BlockParser blocks(k, path);
  WarpInst inst;
  std::int32_t deltas[kWarpSize];
  std::uint64_t cta = 0, cta_line = 0;
  // The #BEGIN_TB line already read: feed it, then the rest.
  blocks.feed("#BEGIN_TB", line_no);
  std::uint64_t cta_begin = begin_offset;
  cta_line = line_no;
  while (true) {
    const std::uint64_t offset = in.position();
    if (!next_line()) break;
    ++line_no;
    const BlockParser::Event ev = blocks.feed(line, line_no);
    switch (ev.kind) {
      case BlockParser::Event::BeginCta:
        cta_begin = offset;
        cta_line = line_no;
        break;
      case BlockParser::Event::Cta:
        cta = ev.cta;
        break;
      case BlockParser::Event::Inst:
        if (const SassOpcode* row = decoder.decode(line, line_no, ev.last_in_warp, inst, deltas))
          ++untimed[row->line];
        ++k.warp_instructions;
        break;
      case BlockParser::Event::EndCta:
        found.push_back({cta, {cta_begin, in.position(), cta_line}});
        break;
      default:
        break;
    }
  }
  if (blocks.state() == BlockParser::State::Body)
    fail_at(path, line_no, fmt::format("file ends {} instruction lines short of the warp's 'insts' count (truncated?)", blocks.left()));
  if (blocks.state() != BlockParser::State::Outside)
    fail_at(path, line_no, "file ends inside a thread block, before #END_TB (truncated?)");
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.id < b.id; });
  const Dim3& g = k.header.info.grid;
  auto coords = [&](std::uint64_t c) { return fmt::format("({},{},{})", c % g.x, c / g.x % g.y, c / g.x / g.y); };
  for (std::size_t i = 1; i < found.size(); ++i)
    if (found[i].id == found[i - 1].id)
      fail_at(path, std::max(found[i].cta.line, found[i - 1].cta.line),
              fmt::format("thread block {} listed twice (its other #BEGIN_TB is at line {})", coords(found[i].id),
                          std::min(found[i].cta.line, found[i - 1].cta.line)));
  for (std::uint64_t c = 0; c < num_ctas; ++c)
    if (c >= found.size() || found[c].id != c)
      fail_at(path, line_no, fmt::format("thread block {} of the grid ({},{},{}) is missing from the file", coords(c),
                                         g.x, g.y, g.z));
  k.ctas.reserve(found.size());
  for (const Found& f : found) k.ctas.push_back(f.cta);
  for (const SassOpcode& row : table.entries())
    if (const auto it = untimed.find(row.line); it != untimed.end())
      k.untimed.push_back(UntimedOpcode{row.name, it->second, row.note});
  return k;
}

// ---- sources -------------------------------------------------------------------------------------------------

namespace {

struct KernelShared {
  std::shared_ptr<const KernelIndex> index;
  std::unique_ptr<LineDecoder> decoder;
};

// A resident CTA keeps its warps' text zstd-compressed, in chunks of about kChunkBytes (trace text compresses
// well: repeated opcodes, registers, addresses), and a warp decompresses one chunk at a time. So memory is the
// compressed text of the resident CTAs plus one chunk per running warp, even for a kernel whose CTAs each run
// a large share of the file (persistent kernels).
constexpr std::size_t kChunkBytes = 16 * 1024;
constexpr int kChunkCompressionLevel = 1;  // fastest: the chunks live only while their CTA is resident

struct WarpText {
  std::vector<std::string> chunks;  // zstd frames of consecutive whole lines
  std::uint64_t count = 0;          // instruction lines ('insts = N')
  std::uint64_t line = 0;           // line number of the 'insts = N' line
};

ZSTD_DCtx* decompression_context() {
  // One per thread, reused by every warp stream: ZSTD_decompressDCtx keeps no state between frames.
  static thread_local std::unique_ptr<ZSTD_DCtx, std::size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  return ctx.get();
}

class AccelWarpStream final : public WarpStream {
 public:
  AccelWarpStream(std::shared_ptr<KernelShared> k, WarpText text)
      : k_(std::move(k)), text_(std::move(text)), left_(text_.count), line_(text_.line) {}

  std::size_t read(WarpInst* out, std::size_t max) override {
    std::size_t n = 0;
    if (deltas_.size() < max * kWarpSize) deltas_.resize(std::min<std::size_t>(max, 4096) * kWarpSize);
    max = std::min(max, deltas_.size() / kWarpSize);
    while (n < max && left_ > 0) {
      if (pos_ >= chunk_.size() && !next_chunk()) break;
      const std::size_t eol = chunk_.find('\n', pos_);
      const std::size_t end = eol == std::string::npos ? chunk_.size() : eol;
      const std::string_view line(chunk_.data() + pos_, end - pos_);
      pos_ = eol == std::string::npos ? chunk_.size() : eol + 1;
      ++line_;
      if (trim(line).empty()) continue;
      --left_;
      k_->decoder->decode(line, line_, left_ == 0, out[n], deltas_.data() + n * kWarpSize);
      ++n;
    }
    return n;
  }

 private:
  bool next_chunk() {
    if (next_ >= text_.chunks.size()) return false;
    std::string& frame = text_.chunks[next_++];
    const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
    chunk_.resize(static_cast<std::size_t>(size));
    const std::size_t got = ZSTD_decompressDCtx(decompression_context(), chunk_.data(), chunk_.size(), frame.data(), frame.size());
    WARPSIM_ASSERT(!ZSTD_isError(got) && got == size, "corrupt in-memory chunk of an Accel-Sim trace");
    std::string().swap(frame);  // consumed: release it
    pos_ = 0;
    return true;
  }

  std::shared_ptr<KernelShared> k_;
  WarpText text_;
  std::size_t next_ = 0;   // next chunk to decompress
  std::string chunk_;      // the current chunk's text
  std::size_t pos_ = 0;    // in chunk_
  std::uint64_t left_;
  std::uint64_t line_;     // line number of the last line consumed
  std::vector<std::int32_t> deltas_;
};

class AccelCta final : public CtaSource {
 public:
  AccelCta(std::shared_ptr<KernelShared> k, std::vector<WarpText> warps) : k_(std::move(k)), warps_(std::move(warps)) {}
  std::uint32_t num_warps() const override { return static_cast<std::uint32_t>(warps_.size()); }
  std::unique_ptr<WarpStream> open_warp(std::uint32_t w) override {
    if (w >= warps_.size()) throw TraceError(fmt::format("{}: warp {} out of range", k_->index->path, w));
    return std::make_unique<AccelWarpStream>(k_, warps_[w]);  // a copy: a warp may be opened again
  }

 private:
  std::shared_ptr<KernelShared> k_;
  std::vector<WarpText> warps_;
};

class AccelKernel final : public KernelSource {
 public:
  explicit AccelKernel(std::shared_ptr<const KernelIndex> index) : k_(std::make_shared<KernelShared>()) {
    k_->index = std::move(index);
    k_->decoder = std::make_unique<LineDecoder>(
        k_->index->header, SassOpcodeTable::for_binary_version(k_->index->header.binary_version), k_->index->path);
  }
  const KernelInfo& info() const override { return k_->index->header.info; }

  std::unique_ptr<CtaSource> open_cta(std::uint64_t id) override {
    const KernelIndex& k = *k_->index;
    if (id >= k.ctas.size())
      throw TraceError(fmt::format("{}: CTA {} out of range (grid has {} CTAs)", k.path, id, k.ctas.size()));
    if (!stream_) stream_ = std::make_unique<TextStream>(k.path);
    const KernelIndex::Cta& cta = k.ctas[id];
    std::vector<WarpText> warps(k.header.info.warps_per_cta());
    BlockParser blocks(k, k.path);
    std::uint64_t line_no = cta.line;
    WarpText* warp = nullptr;  // the warp whose lines are being read
    std::string chunk;
    auto flush = [&] {
      if (chunk.empty()) return;
      std::string frame(ZSTD_compressBound(chunk.size()), '\0');
      const std::size_t n = ZSTD_compress(frame.data(), frame.size(), chunk.data(), chunk.size(), kChunkCompressionLevel);
      WARPSIM_ASSERT(!ZSTD_isError(n), "zstd could not compress a chunk of trace text");
      frame.resize(n);
      frame.shrink_to_fit();
      warp->chunks.push_back(std::move(frame));
      chunk.clear();
    };
    try {
      stream_->seek(cta.begin);
      std::string line;
      for (bool first = true; stream_->position() < cta.end && stream_->next_line(line); first = false) {
        if (!first) ++line_no;
        const BlockParser::Event ev = blocks.feed(line, line_no);
        if (ev.kind == BlockParser::Event::Warp) {
          if (warp) flush();
          warp = &warps[ev.warp];
          warp->count = ev.insts;
          warp->line = line_no;
        } else if (warp && (ev.kind == BlockParser::Event::Inst || blocks.state() == BlockParser::State::Body)) {
          chunk += line;  // instruction lines, and blank lines among them (the stream counts lines)
          chunk += '\n';
          if (chunk.size() >= kChunkBytes) flush();
        }
      }
    } catch (const TextStreamError& e) {
      fail_at(k.path, line_no, e.what());
    }
    if (warp) flush();
    return std::make_unique<AccelCta>(k_, std::move(warps));
  }

 private:
  std::shared_ptr<KernelShared> k_;
  std::unique_ptr<TextStream> stream_;  // opened at the first CTA: one decoder per kernel being simulated
};

bool is_kernel_file_name(std::string_view name) { return ends_with(name, ".traceg") || ends_with(name, ".traceg.xz"); }

}  // namespace

AccelSimTrace::AccelSimTrace(const std::string& path) : path_(path) {
  std::vector<std::string> files;
  if (is_kernel_file_name(path)) {
    files.push_back(path);
  } else {
    TextStream list(path);
    const fs::path dir = fs::path(path).parent_path();
    std::string line;
    std::uint64_t line_no = 0;
    while (true) {
      try {
        if (!list.next_line(line)) break;
      } catch (const TextStreamError& e) {
        fail_at(path, line_no + 1, e.what());
      }
      ++line_no;
      const std::string_view t = trim(line);
      if (t.empty() || t.front() == '#') continue;
      if (starts_with(t, "Memcpy")) {
        // MemcpyHtoD,0x<address>,<bytes>: a host copy; warpsim does not simulate copies (README), but checks them.
        const std::size_t c1 = t.find(','), c2 = c1 == std::string_view::npos ? c1 : t.find(',', c1 + 1);
        std::uint64_t address = 0, bytes = 0;
        if (c2 == std::string_view::npos || !parse_number(trim(t.substr(c1 + 1, c2 - c1 - 1)), address, 16) ||
            !parse_number(trim(t.substr(c2 + 1)), bytes))
          fail_at(path, line_no, fmt::format("'{}': expected MemcpyHtoD,0x<address>,<bytes>", t.substr(0, 80)));
        ++memcpys_;
        continue;
      }
      if (!is_kernel_file_name(t))
        fail_at(path, line_no, fmt::format("'{}': expected a kernel file (kernel-N.traceg or kernel-N.traceg.xz) or "
                                           "MemcpyHtoD,0x<address>,<bytes>", t.substr(0, 80)));
      const fs::path file = fs::path(std::string(t)).is_absolute() ? fs::path(std::string(t)) : dir / std::string(t);
      std::error_code ec;
      const fs::file_status st = fs::status(file, ec);
      if (ec || !fs::exists(st)) fail_at(path, line_no, fmt::format("kernel file '{}' not found", file.string()));
      if (fs::is_directory(st)) fail_at(path, line_no, fmt::format("'{}' is a directory, not a kernel trace file", file.string()));
      if (!fs::is_regular_file(st)) fail_at(path, line_no, fmt::format("'{}' is not a regular file", file.string()));
      files.push_back(file.string());
    }
  }
  for (const std::string& f : files) kernels_.push_back(std::make_shared<KernelIndex>(index_kernel_file(f)));
}

std::unique_ptr<KernelSource> AccelSimTrace::open_kernel(std::size_t index) {
  if (index >= kernels_.size())
    throw TraceError(fmt::format("{}: kernel {} out of range ({} kernels)", path_, index, kernels_.size()));
  return std::make_unique<AccelKernel>(kernels_[index]);
}

}  // namespace warpsim::accelsim
