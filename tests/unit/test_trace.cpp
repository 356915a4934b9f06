// Opcode table, in-memory sources, and the native trace format (sim/trace/trace_file.h, traces/FORMAT.md):
// round trips, random access, batch sizes, compression, and rejection of malformed files.
#include <zstd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/unit/temp_dir.h"
#include "sim/core/error.h"
#include "sim/slots/cluster.h"
#include "sim/trace/inst.h"
#include "sim/trace/source.h"
#include "sim/trace/trace_file.h"
#include "tests/common/crafted_trace.h"

namespace fs = std::filesystem;
using namespace warpsim;
using Catch::Contains;

namespace {

using warpsim::test::TempDir;

using Bytes = std::vector<std::uint8_t>;
using Lanes = std::array<std::int32_t, kWarpSize>;
constexpr std::size_t kNumOpcodes = static_cast<std::size_t>(Opcode::Count);

// A directory removed at the end of the test case.
Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}
void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// ---- deterministic random kernels ---------------------------------------------------------------------------

// Raw engine output only: std distributions differ between standard libraries, the engine does not.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  std::uint64_t next() { return engine_(); }
  std::uint64_t below(std::uint64_t n) { return engine_() % n; }
  bool percent(unsigned p) { return below(100) < p; }
  std::int32_t any_i32() {
    switch (below(4)) {
      case 0: return std::numeric_limits<std::int32_t>::min();
      case 1: return std::numeric_limits<std::int32_t>::max();
      case 2: return static_cast<std::int32_t>(below(4096)) - 2048;
      default: return static_cast<std::int32_t>(static_cast<std::uint32_t>(next()));
    }
  }

 private:
  std::mt19937_64 engine_;
};


// Appends one instruction with opcode `op` and address mode `mode`, exercising optional fields, extreme values
// and field combinations the encoder must still round-trip exactly (registers in odd slots, unused fields set).
// Every record is valid (check_inst, FORMAT.md "Validity"): only fields the rules leave free take odd values.
void add_random_inst(Rng& rng, Opcode op, AddrMode mode, std::uint64_t& pc, InMemoryKernel::Warp& warp) {
  WarpInst inst;
  const std::uint64_t pc_kind = rng.below(10);
  if (pc_kind == 0) pc = rng.below(1ull << 32);                 // far jump, anywhere in 32 bits
  else if (pc_kind == 1) pc = pc >= 64 ? pc - 64 : pc;          // loop back edge
  else if (pc_kind == 2) pc = 0xfffffff0u;                       // top of the range
  inst.pc = static_cast<std::uint32_t>(pc);
  pc = std::uint64_t{inst.pc} + 16;
  inst.op = op;

  if (rng.percent(85)) {  // canonical registers: first num slots used
    inst.num_dst = static_cast<std::uint8_t>(rng.below(kMaxDst + 1));
    inst.num_src = static_cast<std::uint8_t>(rng.below(kMaxSrc + 1));
    for (int i = 0; i < inst.num_dst; ++i) inst.dst[i] = static_cast<std::uint16_t>(rng.below(256));
    for (int i = 0; i < inst.num_src; ++i) inst.src[i] = static_cast<std::uint16_t>(rng.below(256));
  } else {  // counts unrelated to the slots used: counted slots hold R0..RZ, the others anything up to 0xfffe
    inst.num_dst = static_cast<std::uint8_t>(rng.below(kMaxDst + 1));
    inst.num_src = static_cast<std::uint8_t>(rng.below(kMaxSrc + 1));
    for (int i = 0; i < kMaxDst; ++i)
      if (i < inst.num_dst) inst.dst[i] = static_cast<std::uint16_t>(rng.below(256));
      else if (rng.percent(50)) inst.dst[i] = static_cast<std::uint16_t>(rng.below(0xffff));
    for (int i = 0; i < kMaxSrc; ++i)
      if (i < inst.num_src) inst.src[i] = static_cast<std::uint16_t>(rng.below(256));
      else if (rng.percent(50)) inst.src[i] = static_cast<std::uint16_t>(rng.below(0xffff));
  }
  if (rng.percent(30)) inst.active_mask = static_cast<std::uint32_t>(rng.next());
  if (rng.percent(20)) inst.dtype = static_cast<DType>(rng.below(kDTypeCount));

  const OpcodeInfo& info = opcode_info(op);
  if (info.op_class == OpClass::Tensor) inst.dtype = kTensorDTypes[rng.below(std::size(kTensorDTypes))];
  // A memory opcode without an address mode is valid only with no active lane.
  if (info.space != MemSpace::None && mode == AddrMode::None) inst.active_mask = 0;
  // Non-memory opcodes may carry memory fields too (the encoder keeps them), only not a memory space.
  if (mode != AddrMode::None || info.space != MemSpace::None || rng.percent(5)) {
    inst.space = info.space;
    inst.addr_mode = mode;
    inst.access_bytes = static_cast<std::uint8_t>(1u << rng.below(5));
    // Format 1.5: a cache operator on global loads and stores.
    if ((op == Opcode::LDG || op == Opcode::STG) && rng.percent(30))
      inst.cache = static_cast<CacheOp>(rng.below(static_cast<std::uint64_t>(CacheOp::Count)));
    inst.base = rng.percent(50) ? 0x7f0000000000ull + rng.below(1 << 20) * 16 : rng.next();
    if (mode == AddrMode::Strided || mode == AddrMode::Strided2D || rng.percent(10)) inst.stride = rng.any_i32();
    if (mode == AddrMode::Strided2D || rng.percent(10)) {
      // Strided2D needs a group of 1..32 lanes; other modes ignore the field, so any value round-trips.
      inst.group = static_cast<std::uint8_t>(1 + rng.below(mode == AddrMode::Strided2D ? 32 : 255));
      inst.group_stride = rng.any_i32();
    }
    if (mode == AddrMode::Deltas) {
      Lanes lanes;
      for (auto& d : lanes) d = rng.any_i32();
      warp.lane_deltas.push_back(lanes);
    }
  }
  if (info.op_class == OpClass::Tensor || rng.percent(5)) {
    inst.mma = rng.percent(50) ? MmaShape{16, 8, 16} : MmaShape{64, static_cast<std::uint16_t>(8 * (1 + rng.below(32))),
                                                                  static_cast<std::uint16_t>(1 + rng.below(0xffff))};
  }
  if (op == Opcode::BAR || op == Opcode::DEPBAR) inst.aux = static_cast<std::uint32_t>(rng.below(16));
  if (rng.percent(5)) inst.aux = static_cast<std::uint32_t>(rng.next());
  // Format 1.2: a TMA box is lane 0's (or predicated off), at most 1 MiB, pitch >= row; mbarrier ids < 32.
  if (op == Opcode::UTMALDG && inst.active_mask) {
    inst.active_mask = 1;
    inst.aux = static_cast<std::uint32_t>(1 + rng.below(64));
    inst.group_stride = static_cast<std::int32_t>(1 + rng.below(256));
    inst.stride = inst.group_stride + static_cast<std::int32_t>(rng.below(4096));
    inst.base = 0x7f0000000000ull + rng.below(1 << 20) * 16;
  }
  if (op == Opcode::UTMALDG || op == Opcode::SYNCS_ARRIVE_TRANS64 || op == Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT ||
      op == Opcode::MBARRIER_INIT || op == Opcode::UTCBAR)
    inst.group = static_cast<std::uint8_t>(mode == AddrMode::Strided2D ? 1 + rng.below(kMbarriers - 1)  // both rules
                                                                        : rng.below(kMbarriers));
  if (op == Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT) inst.aux = static_cast<std::uint32_t>(rng.below(2));
  if (op == Opcode::MBARRIER_INIT) inst.aux = static_cast<std::uint32_t>(1 + rng.below(1024));
  if (op == Opcode::HMMA || op == Opcode::HGMMA || op == Opcode::UTCMMA) inst.aux &= kMmaSparse;  // its only flag
  // Format 1.8: a tcgen05.mma is lane 0's (or predicated off), m64 (n a multiple of 8) or m128 (of 16), n <= 256;
  // a TMEM load reads 1..128 columns.
  if (op == Opcode::UTCMMA) {
    if (inst.active_mask) inst.active_mask = 1;
    constexpr std::pair<DType, std::uint16_t> kinds[] = {{DType::F16, 16}, {DType::BF16, 16}, {DType::TF32, 8},
                                                         {DType::FP8, 32}, {DType::I8, 32}, {DType::FP4, 64}};
    const auto& kind = kinds[rng.below(std::size(kinds))];
    inst.dtype = kind.first;
    inst.mma = {static_cast<std::uint16_t>(rng.percent(50) ? 64 : 128), static_cast<std::uint16_t>(16 * (1 + rng.below(16))),
                kind.second};
  }
  if (op == Opcode::LDTM) inst.aux = static_cast<std::uint32_t>(1 + rng.below(128));
  if (op == Opcode::USETMAXREG) {
    inst.aux = static_cast<std::uint32_t>(8 * (3 + rng.below(30)));
    inst.group = static_cast<std::uint8_t>(mode == AddrMode::Strided2D ? 1 : rng.below(2));  // Strided2D: 1..32
  }
  // LDS/STS: the cluster CTA whose shared memory they access, one bit at most.
  if (op == Opcode::LDS || op == Opcode::STS) inst.mma.m &= static_cast<std::uint16_t>(-inst.mma.m);
  // Format 1.6: an LDG with a wait count is a spin-wait poll, one thread's, into a register.
  if (op == Opcode::LDG && inst.aux != 0 && inst.active_mask != 0) {
    inst.active_mask = 1u << rng.below(kWarpSize);
    if (inst.num_dst == 0) inst.num_dst = 1;
    inst.dst[0] = 7;  // a register, not RZ (check_inst)
  }
  // Format 1.4: barrier ids < 16; `group` = warps expected, at most 32 (BAR: 0 = the whole CTA; BAR_ARV: >= 1),
  // and 1..32 for Strided2D anyway.
  if (op == Opcode::BAR || op == Opcode::BAR_ARV) {
    inst.aux %= kNamedBarriers;
    const bool at_least_one = op == Opcode::BAR_ARV || mode == AddrMode::Strided2D;
    inst.group = static_cast<std::uint8_t>(at_least_one ? 1 + inst.group % kMaxCtaWarps : inst.group % (kMaxCtaWarps + 1));
  }
  warp.insts.push_back(inst);
}

InMemoryKernel::Warp random_warp(Rng& rng, std::size_t length) {
  InMemoryKernel::Warp warp;
  std::uint64_t pc = rng.percent(50) ? 0 : rng.below(1 << 16) * 16;
  for (std::size_t i = 0; i < length; ++i) {
    auto op = static_cast<Opcode>(rng.below(kNumOpcodes));
    if (op == Opcode::EXIT && i + 1 < length) op = Opcode::NOP;  // EXIT ends a warp (FORMAT.md, "Validity")
    const bool memory = opcode_info(op).op_class == OpClass::Ldst;
    const auto mode = memory ? static_cast<AddrMode>(rng.below(4)) : AddrMode::None;
    add_random_inst(rng, op, mode, pc, warp);
  }
  return warp;
}

// Every opcode in every address mode, so each combination crosses the encoder at least once.
InMemoryKernel::Warp exhaustive_warp(Rng& rng) {
  InMemoryKernel::Warp warp;
  std::uint64_t pc = 0;
  for (std::size_t op = 0; op < kNumOpcodes; ++op)
    for (int mode = 0; mode <= static_cast<int>(AddrMode::Deltas); ++mode)
      if (static_cast<Opcode>(op) != Opcode::EXIT)
        add_random_inst(rng, static_cast<Opcode>(op), static_cast<AddrMode>(mode), pc, warp);
  add_random_inst(rng, Opcode::EXIT, AddrMode::None, pc, warp);  // last: nothing may follow it
  return warp;
}

InMemoryKernel random_kernel(Rng& rng, KernelInfo info, std::size_t max_len) {
  InMemoryKernel k;
  k.info = std::move(info);
  for (std::uint64_t c = 0; c < k.info.grid.count(); ++c) {
    std::vector<InMemoryKernel::Warp> warps;
    for (std::uint32_t w = 0; w < k.info.warps_per_cta(); ++w)
      warps.push_back(random_warp(rng, rng.below(max_len + 1)));
    k.ctas.push_back(std::move(warps));
  }
  return k;
}

KernelInfo make_info(std::string name, Dim3 grid, Dim3 block) {
  KernelInfo info;
  info.name = std::move(name);
  info.grid = grid;
  info.block = block;
  return info;
}

// Three kernels: 12 CTAs of 4 warps (the first warp holding every opcode x mode), a single one-warp CTA with
// an empty stream, and a 3-D grid.
std::vector<InMemoryKernel> sample_kernels(std::uint64_t seed) {
  Rng rng(seed);
  KernelInfo a = make_info("void gemm<128, 64>(float const*, float*)", {4, 3, 1}, {128, 1, 1});
  a.registers_per_thread = 168;
  a.shared_mem_bytes = 49152;
  a.target_arch = "sm_90";
  a.flops = (1ull << 40) + 12345;
  KernelInfo b = make_info("empty", {1, 1, 1}, {32, 1, 1});
  KernelInfo c = make_info("", {2, 2, 3}, {64, 2, 1});
  c.target_arch = "sm_80";
  c.registers_per_thread = 255;  // the largest valid value

  std::vector<InMemoryKernel> kernels;
  kernels.push_back(random_kernel(rng, a, 120));
  kernels[0].ctas[0][0] = exhaustive_warp(rng);
  kernels[0].ctas[3][2] = {};  // an empty warp among full ones
  kernels.push_back(random_kernel(rng, b, 0));
  kernels.push_back(random_kernel(rng, c, 40));
  return kernels;
}

void write_kernels(const std::string& path, const std::vector<InMemoryKernel>& kernels, int level = 3) {
  TraceWriter writer(path, level);
  for (const InMemoryKernel& k : kernels) {
    writer.begin_kernel(k.info);
    for (const auto& cta : k.ctas) writer.add_cta(cta);
    writer.end_kernel();
  }
  writer.close();
}

// ---- reading and comparing ----------------------------------------------------------------------------------

// A warp read back, with each Deltas record's offsets copied while its pointer was valid.
InMemoryKernel::Warp read_warp(WarpStream& stream, std::size_t batch) {
  InMemoryKernel::Warp out;
  std::vector<WarpInst> buf(batch);
  while (const std::size_t n = stream.read(buf.data(), batch)) {
    for (std::size_t i = 0; i < n; ++i) {
      WarpInst inst = buf[i];
      if (inst.addr_mode == AddrMode::Deltas) {
        REQUIRE(inst.deltas != nullptr);
        Lanes lanes;
        std::copy(inst.deltas, inst.deltas + kWarpSize, lanes.begin());
        out.lane_deltas.push_back(lanes);
      } else {
        REQUIRE(inst.deltas == nullptr);
      }
      inst.deltas = nullptr;
      out.insts.push_back(inst);
    }
  }
  REQUIRE(stream.read(buf.data(), batch) == 0);  // stays ended
  return out;
}

// Names of the fields that differ ("" when none): a failure then says which field broke.
std::string field_diff(const WarpInst& a, const WarpInst& b) {
  std::string d;
  auto check = [&d](bool same, const char* name) {
    if (!same) d += std::string(d.empty() ? "" : ",") + name;
  };
  check(a.pc == b.pc, "pc");
  check(a.op == b.op, "op");
  check(a.dtype == b.dtype, "dtype");
  check(a.num_dst == b.num_dst, "num_dst");
  check(a.num_src == b.num_src, "num_src");
  check(a.active_mask == b.active_mask, "active_mask");
  check(a.dst == b.dst, "dst");
  check(a.src == b.src, "src");
  check(a.space == b.space, "space");
  check(a.addr_mode == b.addr_mode, "addr_mode");
  check(a.access_bytes == b.access_bytes, "access_bytes");
  check(a.group == b.group, "group");
  check(a.base == b.base, "base");
  check(a.stride == b.stride, "stride");
  check(a.group_stride == b.group_stride, "group_stride");
  check(a.cache == b.cache, "cache");
  check(a.mma.m == b.mma.m && a.mma.n == b.mma.n && a.mma.k == b.mma.k, "mma");
  check(a.aux == b.aux, "aux");
  return d;
}

void require_same_warp(const InMemoryKernel::Warp& want, const InMemoryKernel::Warp& got) {
  REQUIRE(got.insts.size() == want.insts.size());
  for (std::size_t i = 0; i < want.insts.size(); ++i) {
    INFO("instruction " << i << " (" << opcode_info(want.insts[i].op).name << ")");
    REQUIRE(field_diff(want.insts[i], got.insts[i]) == "");
  }
  REQUIRE(got.lane_deltas == want.lane_deltas);
}

void require_same_info(const KernelInfo& a, const KernelInfo& b) {
  CHECK(a.name == b.name);
  CHECK(a.grid == b.grid);
  CHECK(a.block == b.block);
  CHECK(a.registers_per_thread == b.registers_per_thread);
  CHECK(a.shared_mem_bytes == b.shared_mem_bytes);
  CHECK(a.target_arch == b.target_arch);
  CHECK(a.flops == b.flops);
  CHECK(a.cluster == b.cluster);
}

void require_same_cta(const std::vector<InMemoryKernel::Warp>& want, CtaSource& cta, std::size_t batch) {
  REQUIRE(cta.num_warps() == want.size());
  for (std::uint32_t w = 0; w < want.size(); ++w) {
    INFO("warp " << w);
    auto stream = cta.open_warp(w);
    require_same_warp(want[w], read_warp(*stream, batch));
  }
}

void require_same_trace(const std::vector<InMemoryKernel>& want, TraceSource& got, std::size_t batch) {
  REQUIRE(got.num_kernels() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    INFO("kernel " << k);
    auto kernel = got.open_kernel(k);
    require_same_info(want[k].info, kernel->info());
    for (std::uint64_t c = 0; c < want[k].ctas.size(); ++c) {
      INFO("CTA " << c);
      auto cta = kernel->open_cta(c);
      require_same_cta(want[k].ctas[c], *cta, batch);
    }
  }
}

// Decodes everything a source holds and touches every delta, for the corruption tests (ASan watches).
std::uint64_t read_everything(TraceSource& src) {
  std::uint64_t checksum = 0;
  std::array<WarpInst, 7> buf;
  for (std::size_t k = 0; k < src.num_kernels(); ++k) {
    auto kernel = src.open_kernel(k);
    for (std::uint64_t c = 0; c < kernel->info().grid.count(); ++c) {
      auto cta = kernel->open_cta(c);
      for (std::uint32_t w = 0; w < cta->num_warps(); ++w) {
        auto stream = cta->open_warp(w);
        while (const std::size_t n = stream->read(buf.data(), buf.size())) {
          for (std::size_t i = 0; i < n; ++i) {
            checksum += buf[i].pc + buf[i].base;
            if (buf[i].addr_mode == AddrMode::Deltas)
              for (int lane = 0; lane < kWarpSize; ++lane) checksum += static_cast<std::uint32_t>(buf[i].deltas[lane]);
          }
        }
      }
    }
  }
  return checksum;
}

// Hand-crafted files (tests/common/crafted_trace.h).
using crafted::build_file;
using crafted::CraftedFile;
using crafted::cta_payload;
using crafted::one_warp_file;

constexpr std::uint8_t kFFMA = static_cast<std::uint8_t>(Opcode::FFMA);
constexpr std::uint8_t kLDG = static_cast<std::uint8_t>(Opcode::LDG);
constexpr std::uint8_t kLDS = static_cast<std::uint8_t>(Opcode::LDS);
constexpr std::uint8_t kHMMA = static_cast<std::uint8_t>(Opcode::HMMA);
constexpr std::uint8_t kHGMMA = static_cast<std::uint8_t>(Opcode::HGMMA);
// FORMAT.md states the number of opcodes of each version; appending one must update it (and bump the minor version).
static_assert(kNumOpcodes == 49, "traces/FORMAT.md: Opcode::Count is 49 in version 1.8");

}  // namespace

// ================================================================================================================

TEST_CASE("opcode table: names, classes, spaces and parsing", "[trace][opcode]") {
  // Enum order, spelled out: catches a table entry out of step with the enum.
  const char* names[] = {"IADD3", "IMAD", "LOP3",  "SHF",   "ISETP", "MOV",    "S2R", "FADD",  "FMUL",  "FFMA",
                         "FSETP", "HADD2", "HFMA2", "DADD",  "DMUL",  "DFMA",   "MUFU", "HMMA", "HGMMA", "LDG",
                         "STG",   "LDS",   "STS",   "LDSM",  "LDGSTS", "LDL",  "STL", "ATOMG", "RED",   "LDC",
                         "BRA",   "BAR",   "LDGDEPBAR", "DEPBAR", "NOP", "EXIT", "SHFL", "WARPGROUP_ARRIVE",
                         "WARPGROUP_COMMIT", "WARPGROUP_DEPBAR", "UTMALDG", "SYNCS_ARRIVE_TRANS64",
                         "SYNCS_PHASECHK_TRANS64_TRYWAIT", "MBARRIER_INIT", "BAR_ARV", "UTCMMA", "UTCBAR", "LDTM", "USETMAXREG"};
  REQUIRE(std::size(names) == kNumOpcodes);
  for (std::size_t i = 0; i < kNumOpcodes; ++i) {
    const auto op = static_cast<Opcode>(i);
    INFO(names[i]);
    CHECK(opcode_info(op).name == names[i]);
    Opcode parsed = Opcode::Count;
    REQUIRE(parse_opcode(opcode_info(op).name, parsed));
    CHECK(parsed == op);
    CHECK(op_class(op) == opcode_info(op).op_class);
    // Memory opcodes, and only they, have a default space.
    CHECK((opcode_info(op).op_class == OpClass::Ldst) == (opcode_info(op).space != MemSpace::None));
  }
  Opcode unused;
  CHECK_FALSE(parse_opcode("ffma", unused));
  CHECK_FALSE(parse_opcode("", unused));
  CHECK_FALSE(parse_opcode("Count", unused));

  CHECK(op_class(Opcode::IMAD) == OpClass::Int);
  CHECK(op_class(Opcode::S2R) == OpClass::Int);
  CHECK(op_class(Opcode::HFMA2) == OpClass::Fp32);
  CHECK(op_class(Opcode::DFMA) == OpClass::Fp64);
  CHECK(op_class(Opcode::MUFU) == OpClass::Sfu);
  CHECK(op_class(Opcode::HGMMA) == OpClass::Tensor);
  CHECK(op_class(Opcode::LDGSTS) == OpClass::Ldst);
  CHECK(op_class(Opcode::LDC) == OpClass::Ldst);
  CHECK(op_class(Opcode::BRA) == OpClass::Branch);
  CHECK(op_class(Opcode::LDGDEPBAR) == OpClass::Sync);
  CHECK(op_class(Opcode::NOP) == OpClass::Sync);
  CHECK(op_class(Opcode::EXIT) == OpClass::Exit);

  CHECK(opcode_info(Opcode::LDGSTS).space == MemSpace::Global);
  CHECK_FALSE(opcode_info(Opcode::LDGSTS).is_store);
  CHECK(opcode_info(Opcode::LDSM).space == MemSpace::Shared);
  CHECK(opcode_info(Opcode::STL).space == MemSpace::Local);
  CHECK(opcode_info(Opcode::LDC).space == MemSpace::Const);
  CHECK(opcode_info(Opcode::RED).space == MemSpace::Global);
  for (Opcode op : {Opcode::STG, Opcode::STS, Opcode::STL, Opcode::RED, Opcode::ATOMG})
    CHECK(opcode_info(op).is_store);
  for (Opcode op : {Opcode::LDG, Opcode::LDS, Opcode::LDSM, Opcode::LDL, Opcode::LDC, Opcode::FFMA})
    CHECK_FALSE(opcode_info(op).is_store);
}

TEST_CASE("op class, dtype and memory space names", "[trace][opcode]") {
  const char* classes[] = {"int", "fp32", "fp64", "sfu", "tensor", "ldst", "branch", "sync", "exit"};
  for (std::size_t i = 0; i < std::size(classes); ++i) {
    const auto c = static_cast<OpClass>(i);
    CHECK(op_class_name(c) == classes[i]);
    OpClass parsed = OpClass::Count;
    REQUIRE(parse_op_class(classes[i], parsed));
    CHECK(parsed == c);
  }
  const char* dtypes[] = {"none", "f16", "bf16", "fp8", "tf32", "f32", "f64", "i8"};
  for (std::size_t i = 0; i < std::size(dtypes); ++i) {
    const auto t = static_cast<DType>(i);
    CHECK(dtype_name(t) == dtypes[i]);
    DType parsed = DType::None;
    REQUIRE(parse_dtype(dtypes[i], parsed));
    CHECK(parsed == t);
  }
  OpClass c;
  DType t;
  CHECK_FALSE(parse_op_class("INT", c));
  CHECK_FALSE(parse_dtype("fp16", t));
  CHECK(mem_space_name(MemSpace::Shared) == "shared");
  CHECK(mem_space_name(MemSpace::Const) == "const");
}

TEST_CASE("mma flops per warp", "[trace][opcode]") {
  WarpInst i;
  i.op = Opcode::HMMA;
  i.mma = {16, 8, 16};
  CHECK(mma_flops_per_warp(i) == 2 * 16 * 8 * 16);
  i.op = Opcode::HGMMA;
  i.mma = {64, 256, 16};
  CHECK(mma_flops_per_warp(i) == 2ull * 64 * 256 * 16 / 4);
  i.op = Opcode::FFMA;
  CHECK(mma_flops_per_warp(i) == 0);
}

TEST_CASE("in-memory trace: streams, deltas and range checks", "[trace][source]") {
  std::vector<InMemoryKernel> kernels = sample_kernels(7);
  InMemoryTrace trace(kernels, "sample");
  for (std::size_t batch : {1, 3, 1000}) require_same_trace(kernels, trace, batch);
  auto kernel = trace.open_kernel(0);
  REQUIRE_THROWS_AS(trace.open_kernel(3), TraceError);
  REQUIRE_THROWS_AS(kernel->open_cta(12), TraceError);
  REQUIRE_THROWS_AS(kernel->open_cta(0)->open_warp(4), TraceError);

  // A Deltas record without offsets is an error, not a dangling pointer.
  WarpInst bad;
  bad.addr_mode = AddrMode::Deltas;
  VectorWarpStream stream({bad});
  WarpInst out;
  REQUIRE_THROWS_AS(stream.read(&out, 1), TraceError);
}

TEST_CASE("native trace: multi-kernel round trip, field by field", "[trace][file]") {
  TempDir dir;
  const std::string path = dir.path("round_trip.wst");
  const std::vector<InMemoryKernel> kernels = sample_kernels(1);
  write_kernels(path, kernels);
  REQUIRE(is_native_trace(path));

  TraceFileReader reader(path);
  CHECK(reader.path() == path);
  CHECK_THAT(reader.description(), Contains(path) && Contains("3 kernels"));
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    std::uint64_t insts = 0;
    for (const auto& cta : kernels[k].ctas)
      for (const auto& warp : cta) insts += warp.insts.size();
    CHECK(reader.kernel_cta_count(k) == kernels[k].ctas.size());
    CHECK(reader.kernel_instruction_count(k) == insts);
  }
  require_same_trace(kernels, reader, 64);

  // Every compression level the CLI might pass yields the same content.
  for (int level : {-5, 1, 19}) {
    write_kernels(path, kernels, level);
    TraceFileReader again(path);
    require_same_trace(kernels, again, 64);
  }
}

TEST_CASE("native trace: random access to CTAs and warps", "[trace][file]") {
  TempDir dir;
  const std::string path = dir.path("random_access.wst");
  const std::vector<InMemoryKernel> kernels = sample_kernels(2);
  write_kernels(path, kernels);

  TraceFileReader reader(path);
  auto last = reader.open_kernel(2);  // kernels in any order, too
  auto first = reader.open_kernel(0);
  auto cta7 = first->open_cta(7);
  auto cta2 = first->open_cta(2);
  // Warps out of order, interleaved across two open CTAs.
  for (std::uint32_t w : {3u, 0u, 2u, 1u}) {
    auto s7 = cta7->open_warp(w);
    auto s2 = cta2->open_warp(w);
    require_same_warp(kernels[0].ctas[2][w], read_warp(*s2, 5));
    require_same_warp(kernels[0].ctas[7][w], read_warp(*s7, 5));
  }
  auto cta11 = last->open_cta(11);
  require_same_cta(kernels[2].ctas[11], *cta11, 16);

  // Streams outlive their CTA source, kernel source and reader.
  std::unique_ptr<WarpStream> orphan;
  {
    TraceFileReader scoped(path);
    orphan = scoped.open_kernel(0)->open_cta(5)->open_warp(1);
  }
  require_same_warp(kernels[0].ctas[5][1], read_warp(*orphan, 8));
}

TEST_CASE("native trace: small read batches equal one big batch", "[trace][file]") {
  TempDir dir;
  const std::string path = dir.path("batches.wst");
  const std::vector<InMemoryKernel> kernels = sample_kernels(3);
  write_kernels(path, kernels);
  TraceFileReader reader(path);
  auto kernel = reader.open_kernel(0);
  for (std::uint64_t c : {0u, 5u}) {
    auto cta = kernel->open_cta(c);
    for (std::uint32_t w = 0; w < cta->num_warps(); ++w) {
      auto big_stream = cta->open_warp(w);
      const InMemoryKernel::Warp big = read_warp(*big_stream, 100000);
      for (std::size_t batch : {1, 3}) {
        auto small_stream = cta->open_warp(w);
        require_same_warp(big, read_warp(*small_stream, batch));
      }
    }
  }
  // A batch's Deltas pointers are all valid together, each pointing at its own record's offsets.
  auto cta = kernel->open_cta(0);
  auto stream = cta->open_warp(0);
  std::vector<WarpInst> all(kernels[0].ctas[0][0].insts.size());
  REQUIRE(stream->read(all.data(), all.size()) == all.size());
  std::size_t k = 0;
  for (const WarpInst& inst : all) {
    if (inst.addr_mode != AddrMode::Deltas) continue;
    const Lanes& want = kernels[0].ctas[0][0].lane_deltas[k++];
    REQUIRE(std::equal(want.begin(), want.end(), inst.deltas));
    CHECK(inst.lane_address(31) == inst.base + static_cast<std::int64_t>(want[31]));
  }
  CHECK(k == kernels[0].ctas[0][0].lane_deltas.size());
}

TEST_CASE("native trace: write_trace streams any TraceSource", "[trace][file]") {
  TempDir dir;
  const std::vector<InMemoryKernel> kernels = sample_kernels(4);
  InMemoryTrace source(kernels);
  const std::string path = dir.path("from_source.wst");
  const TraceWriteStats stats = write_trace(path, source);
  CHECK(stats.kernels == 3);
  CHECK(stats.ctas == 12 + 1 + 12);
  CHECK(stats.warps == 12 * 4 + 1 + 12 * 4);
  CHECK(stats.file_bytes == fs::file_size(path));
  TraceFileReader reader(path);
  require_same_trace(kernels, reader, 32);

  // And a file copies to an identical file through the reader.
  const std::string copy = dir.path("copy.wst");
  write_trace(copy, reader);
  CHECK(read_file(copy) == read_file(path));
}

TEST_CASE("native trace: compression of a repetitive stream", "[trace][file]") {
  // A typical tiled loop: the same 12-instruction body, addresses advancing per iteration.
  KernelInfo info = make_info("loop", {64, 1, 1}, {128, 1, 1});
  InMemoryKernel kernel{info, {}};
  const Opcode body[] = {Opcode::LDG, Opcode::LDG, Opcode::IMAD, Opcode::FFMA, Opcode::FFMA, Opcode::FFMA,
                         Opcode::FFMA, Opcode::IADD3, Opcode::ISETP, Opcode::STS, Opcode::BAR, Opcode::BRA};
  std::uint64_t total = 0;
  for (std::uint64_t c = 0; c < info.grid.count(); ++c) {
    std::vector<InMemoryKernel::Warp> warps(info.warps_per_cta());
    for (std::uint32_t w = 0; w < warps.size(); ++w) {
      for (std::uint32_t iter = 0; iter < 200; ++iter) {
        for (std::uint32_t j = 0; j < std::size(body); ++j) {
          WarpInst inst;
          inst.op = body[j];
          inst.pc = 0x100 + j * 16;
          inst.num_dst = 1;
          inst.dst[0] = static_cast<std::uint16_t>(4 + j);
          inst.num_src = 2;
          inst.src = {static_cast<std::uint16_t>(j), static_cast<std::uint16_t>(j + 1), kNoReg, kNoReg};
          const OpcodeInfo& oi = opcode_info(inst.op);
          if (oi.space != MemSpace::None) {
            inst.space = oi.space;
            inst.addr_mode = AddrMode::Strided;
            inst.access_bytes = 4;
            inst.stride = 4;
            inst.base = 0x7f0000000000ull + (c * 4 + w) * 0x10000 + iter * 128 + j * 0x1000;
          }
          if (inst.op == Opcode::BAR) inst.aux = 0;
          warps[w].insts.push_back(inst);
        }
      }
      total += warps[w].insts.size();
    }
    kernel.ctas.push_back(std::move(warps));
  }
  TempDir dir;
  const std::string path = dir.path("repetitive.wst");
  TraceWriter writer(path);
  writer.begin_kernel(kernel.info);
  for (const auto& cta : kernel.ctas) writer.add_cta(cta);
  writer.end_kernel();
  writer.close();
  const TraceWriteStats& stats = writer.stats();
  const double file_bytes = static_cast<double>(fs::file_size(path));
  const double per_inst = file_bytes / static_cast<double>(total);
  const double encoded_per_inst = static_cast<double>(stats.encoded_bytes) / static_cast<double>(total);
  INFO("repetitive stream: " << total << " instructions, " << encoded_per_inst << " encoded bytes/instruction, "
                             << per_inst << " file bytes/instruction (sizeof(WarpInst) = " << sizeof(WarpInst) << ")");
  CHECK(stats.instructions == total);
  CHECK(stats.file_bytes == fs::file_size(path));
  CHECK(encoded_per_inst < 12);                      // the varint encoding alone is compact
  CHECK(file_bytes * 4 < stats.encoded_bytes);       // and zstd shrinks it a good deal further
  CHECK(per_inst < 0.5);
  TraceFileReader reader(path);
  require_same_trace({kernel}, reader, 256);
}

TEST_CASE("native trace: writer misuse and unrepresentable records", "[trace][file]") {
  TempDir dir;
  const std::string path = dir.path("misuse.wst");
  const KernelInfo two_ctas = make_info("k", {2, 1, 1}, {32, 1, 1});
  const std::vector<InMemoryKernel::Warp> cta(1);

  SECTION("CTA count must match the grid") {
    TraceWriter w(path);
    w.begin_kernel(two_ctas);
    w.add_cta(cta);
    REQUIRE_THROWS_WITH(w.end_kernel(), Contains(path) && Contains("1 CTAs added") && Contains("holds 2"));
  }
  SECTION("too many CTAs") {
    TraceWriter w(path);
    w.begin_kernel(make_info("one", {1, 1, 1}, {32, 1, 1}));
    w.add_cta(cta);
    REQUIRE_THROWS_WITH(w.add_cta(cta), Contains("more CTAs"));
  }
  SECTION("calls out of order") {
    TraceWriter w(path);
    REQUIRE_THROWS_AS(w.add_cta(cta), TraceError);
    REQUIRE_THROWS_AS(w.end_kernel(), TraceError);
    w.begin_kernel(two_ctas);
    REQUIRE_THROWS_AS(w.begin_kernel(two_ctas), TraceError);
    REQUIRE_THROWS_WITH(w.close(), Contains("still open"));
    REQUIRE_THROWS_AS(w.begin_kernel(two_ctas), TraceError);  // closed now
    // The file has no footer: readers reject it.
    REQUIRE_THROWS_WITH(TraceFileReader(path), Contains("footer"));
  }
  SECTION("a Deltas record needs its lane offsets") {
    TraceWriter w(path);
    w.begin_kernel(make_info("d", {1, 1, 1}, {32, 1, 1}));
    std::vector<InMemoryKernel::Warp> warps(1);
    warps[0].insts.resize(3);
    warps[0].insts[2].addr_mode = AddrMode::Deltas;
    REQUIRE_THROWS_WITH(w.add_cta(warps), Contains("CTA 0, warp 0, instruction 2") && Contains("lane offsets"));
  }
  SECTION("enum values out of range") {
    TraceWriter w(path);
    w.begin_kernel(make_info("e", {1, 1, 1}, {32, 1, 1}));
    std::vector<InMemoryKernel::Warp> warps(1);
    warps[0].insts.resize(1);
    warps[0].insts[0].op = Opcode::Count;
    REQUIRE_THROWS_WITH(w.add_cta(warps), Contains("opcode " + std::to_string(kNumOpcodes) + " out of range"));
    warps[0].insts[0].op = Opcode::NOP;
    warps[0].insts[0].num_src = 5;
    REQUIRE_THROWS_WITH(w.add_cta(warps), Contains("registers"));
  }
  SECTION("bad compression level and unwritable path") {
    REQUIRE_THROWS_WITH(TraceWriter(path, 1000), Contains("compression level"));
    REQUIRE_THROWS_WITH(TraceWriter(dir.path("no/such/dir/x.wst")), Contains("cannot create trace file"));
  }
  SECTION("the destructor closes a complete trace") {
    {
      TraceWriter w(path);
      w.begin_kernel(two_ctas);
      w.add_cta(cta);
      w.add_cta(cta);
      w.end_kernel();
    }
    TraceFileReader reader(path);
    CHECK(reader.num_kernels() == 1);
    CHECK(read_everything(reader) == 0);
  }
  SECTION("an empty trace") {
    TraceWriter(path).close();
    TraceFileReader reader(path);
    CHECK(reader.num_kernels() == 0);
  }
}

TEST_CASE("native trace: a file built from FORMAT.md alone reads back", "[trace][file][format]") {
  TempDir dir;
  const std::string path = dir.path("crafted.wst");
  // FFMA at pc 0 and 16 (implicit pcs), then LDG at pc 0x40 with mask, registers R1 <- R2, R3 and a strided
  // access: base 0x1000, stride 4 (zigzag 8).
  Bytes records = {kFFMA, 0, kFFMA, 0};
  const Bytes ldg = {kLDG, 0x01 | 0x02 | 0x08 | 0x20, /*pc delta +32*/ 64, /*regs*/ 0x31, 1, 2, 3,
                     /*mask*/ 0xff, 0, 0, 0, /*mem: global, strided, stride*/ 1 | (1 << 3) | 0x20, 4,
                     /*base delta 0x1000 zigzag*/ 0x80, 0x40, /*stride*/ 8};
  records.insert(records.end(), ldg.begin(), ldg.end());
  CraftedFile f;
  f.block = {64, 1, 1};        // two warps
  f.minor = 9;                 // a later minor version ...
  f.info_extra = {2, 1, 1, 7, 8};  // ... with 1.3's cluster (2x1x1) and then fields this reader does not know
  f.grid = {2, 1, 1};
  for (int c = 0; c < 2; ++c) f.ctas.push_back(cta_payload({{3, records}, {0, {}}}));
  write_file(path, build_file(f));

  TraceFileReader reader(path);
  CHECK_THAT(reader.description(), Contains("1.9"));
  auto kernel = reader.open_kernel(0);
  CHECK(kernel->info().name == "crafted");
  CHECK(kernel->info().target_arch == "sm_90");
  CHECK(kernel->info().cluster == (Dim3{2, 1, 1}));
  auto cta = kernel->open_cta(0);
  REQUIRE(cta->num_warps() == 2);
  const InMemoryKernel::Warp w = read_warp(*cta->open_warp(0), 10);
  REQUIRE(w.insts.size() == 3);
  CHECK(w.insts[1].pc == 16);
  CHECK(w.insts[1].op == Opcode::FFMA);
  const WarpInst& l = w.insts[2];
  CHECK(l.pc == 0x40);
  CHECK(l.op == Opcode::LDG);
  CHECK(l.num_dst == 1);
  CHECK(l.num_src == 2);
  CHECK(l.dst[0] == 1);
  CHECK(l.src[0] == 2);
  CHECK(l.src[1] == 3);
  CHECK(l.active_mask == 0xff);
  CHECK(l.space == MemSpace::Global);
  CHECK(l.addr_mode == AddrMode::Strided);
  CHECK(l.access_bytes == 4);
  CHECK(l.base == 0x1000);
  CHECK(l.stride == 4);
  CHECK(read_warp(*cta->open_warp(1), 10).insts.empty());
}

TEST_CASE("native trace: malformed input is a TraceError naming the place", "[trace][file][robustness]") {
  TempDir dir;
  const std::string path = dir.path("bad.wst");
  auto expect_error = [&path](const Bytes& file, const std::string& what) {
    write_file(path, file);
    INFO("expected error: " << what);
    try {
      TraceFileReader reader(path);
      read_everything(reader);
      FAIL("no error");
    } catch (const TraceError& e) {
      const std::string msg = e.what();
      CHECK_THAT(msg, Contains(path) && Contains(what));
    }
  };
  const Bytes ffma = {kFFMA, 0};

  SECTION("missing file") {
    REQUIRE_THROWS_WITH(TraceFileReader(dir.path("absent.wst")),
                        Contains("cannot open trace file '" + dir.path("absent.wst") + "'"));
    CHECK_FALSE(is_native_trace(dir.path("absent.wst")));
  }
  SECTION("bad magic") {
    Bytes file = one_warp_file(1, ffma);
    file[1] = 'X';
    expect_error(file, "bad magic");
    write_file(path, file);
    CHECK_FALSE(is_native_trace(path));
    write_file(path, {'h', 'i'});
    CHECK_FALSE(is_native_trace(path));
    expect_error({}, "file header");
  }
  SECTION("unknown major version") {
    CraftedFile f;
    f.major = 2;
    f.ctas.push_back(cta_payload({{1, ffma}}));
    expect_error(build_file(f), "unsupported trace format version 2.0");
  }
  SECTION("index outside the file") {
    Bytes file = one_warp_file(1, ffma);
    file[file.size() - 32 + 5] = 0x7f;  // index offset far beyond the end
    expect_error(file, "footer points to an index");
  }
  SECTION("CTA block offset outside the data area") {
    Bytes file = one_warp_file(1, ffma);
    const std::size_t cta_entry = file.size() - 32 - 16;  // the last CTA table entry
    file[cta_entry + 6] = 0x10;
    expect_error(file, "kernel 0 ('crafted'), CTA 0 (block at byte");
  }
  SECTION("corrupt zstd frame") {
    // A 4 KiB payload, so the frame has a compressed body to damage.
    Bytes records;
    for (int i = 0; i < 2048; ++i) records.insert(records.end(), {static_cast<std::uint8_t>(i % 30), 0});
    const Bytes file = one_warp_file(2048, records);
    // Layout: file header (16), KINF header (24) + frame, CTAB header (24) + frame.
    const std::size_t cta_block = 16 + 24 + (file[32] | file[33] << 8);
    const std::size_t stored = file[cta_block + 16] | file[cta_block + 17] << 8;
    REQUIRE(stored > 20);
    for (std::size_t at = cta_block + 24; at < cta_block + 24 + stored; ++at) {
      Bytes bad = file;
      bad[at] ^= 0x55;
      expect_error(bad, "kernel 0 ('crafted'), CTA 0 (block at byte " + std::to_string(cta_block) + "): ");
    }
  }
  SECTION("opcode out of range") {
    expect_error(one_warp_file(2, {kFFMA, 0, 200, 1, 0}),
                 "CTA 0, warp 0, instruction 1 (byte 14 of the decompressed CTA block): opcode 200 out of range");
  }
  SECTION("enum fields out of range") {
    expect_error(one_warp_file(1, {kFFMA, 0x10, 9}), "dtype 9 out of range");
    expect_error(one_warp_file(1, {kLDG, 0x20, 7, 4, 0}), "memory space 7 out of range");
    expect_error(one_warp_file(1, {kFFMA, 0x04, 0x05}), "register counts 5/0 out of range");
    expect_error(one_warp_file(1, {kFFMA, 0x02, 0x02, 7}), "register mask 2 has gaps");
    expect_error(one_warp_file(1, {kLDG, 0x20, 1 | 0x20, 4, 0, 0xfe, 0xff, 0xff, 0xff, 0x7f}),
                 "stride 17179869183 does not fit");
    expect_error(one_warp_file(1, {kFFMA, 0x01, 0x3f}), "pc -32 out of the 32-bit range");  // zigzag 63 = -32
  }
  SECTION("varint overrun and overlong varints") {
    expect_error(one_warp_file(1, {kFFMA, 0x01, 0x80}), "varint pc delta runs past the end");
    expect_error(one_warp_file(1, {kFFMA, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}),
                 "overflows 64 bits");
    expect_error(one_warp_file(2, {kFFMA, 0x01, 0x02, kFFMA}),
                 "instruction 1 (byte 16 of the decompressed CTA block): data ends where flags was expected");
  }
  SECTION("warp table inconsistent with the data") {
    expect_error(one_warp_file(3, ffma), "claims 3 instructions in 2 bytes");
    expect_error(one_warp_file(1, {kFFMA, 0, kFFMA, 0}), "2 bytes left after the warp's last instruction");
    Bytes payload = cta_payload({{1, ffma}, {1, ffma}});
    payload[4] = 0;  // warp 0's offset no longer follows the table
    CraftedFile f;
    f.block = {64, 1, 1};
    f.ctas.push_back(payload);
    expect_error(build_file(f), "warp 0 data offset 0 inconsistent");
    payload = cta_payload({{1, ffma}});
    payload[0] = 0xff;  // warp count
    f.ctas = {payload};
    expect_error(build_file(f), "warp table of 255 entries does not fit");
  }
  SECTION("grid and index disagree") {
    CraftedFile f;
    f.grid = {2, 1, 1};
    f.ctas.push_back(cta_payload({{1, ffma}}));
    expect_error(build_file(f), "grid of 2 CTAs but the index lists 1");
  }
  SECTION("kernel, CTA and warp numbers out of range") {
    write_file(path, one_warp_file(1, ffma));
    TraceFileReader reader(path);
    REQUIRE_THROWS_WITH(reader.open_kernel(1), Contains(path) && Contains("kernel 1 out of range"));
    auto kernel = reader.open_kernel(0);
    REQUIRE_THROWS_WITH(kernel->open_cta(1), Contains(path) && Contains("CTA 1 out of range"));
    auto cta = kernel->open_cta(0);
    REQUIRE_THROWS_WITH(cta->open_warp(1), Contains(path) && Contains("CTA 0: warp 1 out of range"));
  }
}

TEST_CASE("native trace: truncated and bit-flipped files never crash", "[trace][file][robustness]") {
  TempDir dir;
  const std::string good_path = dir.path("good.wst");
  const std::string path = dir.path("damaged.wst");
  // Small but varied: two kernels with deltas, strided and 2-D accesses.
  Rng rng(11);
  std::vector<InMemoryKernel> kernels;
  kernels.push_back(random_kernel(rng, make_info("a", {2, 1, 1}, {64, 1, 1}), 12));
  kernels.push_back(random_kernel(rng, make_info("b", {1, 1, 1}, {32, 1, 1}), 12));
  kernels[1].ctas[0][0] = exhaustive_warp(rng);
  write_kernels(good_path, kernels);
  const Bytes good = read_file(good_path);

  // Any truncation loses the footer.
  for (std::size_t size = 0; size < good.size(); ++size) {
    write_file(path, Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size)));
    INFO("truncated to " << size << " bytes");
    REQUIRE_THROWS_AS(TraceFileReader(path), TraceError);
  }

  // Every byte, three ways: either a TraceError or a well-formed read; anything else (another exception,
  // a sanitizer report, a crash) fails the test.
  std::size_t detected = 0, accepted = 0;
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (std::uint8_t flip : {0x01, 0x80, 0xff}) {
      Bytes bad = good;
      bad[at] ^= flip;
      write_file(path, bad);
      try {
        TraceFileReader reader(path);
        read_everything(reader);
        ++accepted;
      } catch (const TraceError&) {
        ++detected;
      }
    }
  }
  INFO("file of " << good.size() << " bytes, byte flips: " << detected << " detected, " << accepted
                    << " read as well-formed");
  CHECK(detected > accepted);
}

// ---- validity of records and kernels (check_inst, check_kernel_info; FORMAT.md "Validity") ---------------------

namespace {

WarpInst valid_ffma() {  // R1 = R2 * R3 + R4
  WarpInst in;
  in.op = Opcode::FFMA;
  in.num_dst = 1;
  in.dst[0] = 1;
  in.num_src = 3;
  in.src = {2, 3, 4, kNoReg};
  return in;
}

WarpInst valid_ldg() {  // R5 <- [R6 + lane*4]
  WarpInst in;
  in.op = Opcode::LDG;
  in.num_dst = 1;
  in.dst[0] = 5;
  in.num_src = 1;
  in.src[0] = 6;
  in.space = MemSpace::Global;
  in.addr_mode = AddrMode::Strided;
  in.access_bytes = 4;
  in.base = 0x1000;
  in.stride = 4;
  return in;
}

WarpInst valid_mma(Opcode op) {
  WarpInst in;
  in.op = op;
  in.dtype = DType::BF16;
  in.mma = op == Opcode::HMMA ? MmaShape{16, 8, 16} : MmaShape{64, 128, 16};
  in.num_dst = 4;
  in.dst = {8, 9, 10, 11};
  in.num_src = 3;
  in.src = {0, 4, 8, kNoReg};
  return in;
}

// One record that breaks one rule, and what the message must say.
struct InvalidCase {
  const char* rule;
  WarpInst inst;
  std::string message;
};

std::vector<InvalidCase> invalid_cases() {
  std::vector<InvalidCase> v;
  auto add = [&v](const char* rule, WarpInst in, std::string msg) { v.push_back({rule, in, std::move(msg)}); };
  WarpInst i = valid_ffma();
  i.dst[0] = 256;
  add("register above RZ", i, "dst[0] register 256 out of range (expected 0..255, 255 = RZ)");
  i = valid_ffma();
  i.src[2] = kNoReg;
  add("no register in a counted slot", i, "src[2] register kNoReg (0xffff) out of range");
  i = valid_ffma();
  i.num_dst = kMaxDst + 1;
  add("too many destinations", i, "register counts 5/3 out of range");
  i = valid_ffma();
  i.num_src = kMaxSrc + 1;
  add("too many sources", i, "register counts 1/5 out of range");
  i = valid_ffma();
  i.space = MemSpace::Global;
  add("memory space on a non-memory opcode", i, "FFMA in memory space global (expected none");
  i = valid_ldg();
  i.space = MemSpace::None;
  add("memory opcode without a space", i, "LDG in memory space none (expected global)");
  i = valid_ldg();
  i.op = Opcode::LDS;
  add("LDS in global memory", i, "LDS in memory space global (expected shared)");
  i = valid_ldg();
  i.op = Opcode::LDGSTS;
  i.space = MemSpace::Shared;
  add("LDGSTS in shared memory", i, "LDGSTS in memory space shared (expected global)");
  i = valid_ldg();
  i.op = Opcode::STL;
  add("STL in global memory", i, "STL in memory space global (expected local)");
  i = valid_ldg();
  i.op = Opcode::LDC;
  i.space = MemSpace::Shared;
  add("LDC in shared memory", i, "LDC in memory space shared (expected const)");
  i = valid_ldg();
  i.access_bytes = 0;
  add("zero access size", i, "LDG access size 0 bytes per lane out of range (expected 1..16)");
  i = valid_ldg();
  i.access_bytes = 17;
  add("access size above 16", i, "LDG access size 17 bytes per lane out of range (expected 1..16)");
  i = valid_ldg();
  i.cache = CacheOp::Count;
  add("cache operator out of range", i, "cache operator 5 out of range (expected 0..4)");
  i = valid_ldg();
  i.op = Opcode::LDS;
  i.space = MemSpace::Shared;
  i.cache = CacheOp::EvictFirst;
  add("cache operator on shared memory", i,
      "LDS with cache operator evict_first (expected default: cache operators apply to LDG and STG)");
  i = valid_ldg();
  i.op = Opcode::RED;
  i.cache = CacheOp::Bypass;
  add("cache operator on a reduction", i, "RED with cache operator bypass (expected default: cache operators apply to LDG and STG)");
  i = valid_ldg();
  i.addr_mode = AddrMode::None;
  add("memory access without an address mode", i, "LDG with active lanes but no address mode");
  i = valid_ldg();
  i.addr_mode = AddrMode::Strided2D;
  i.group = 0;
  add("Strided2D group of 0", i, "Strided2D lane group 0 out of range (expected 1..32)");
  i.group = 33;
  add("Strided2D group above 32", i, "Strided2D lane group 33 out of range (expected 1..32)");
  i = valid_mma(Opcode::HMMA);
  i.dtype = DType::None;
  add("HMMA without dtype", i, "HMMA with dtype none (expected f16, bf16, tf32, fp8, i8, f64 or fp4)");
  i.dtype = DType::F32;
  add("HMMA with an accumulator dtype", i, "HMMA with dtype f32");
  i = valid_mma(Opcode::HGMMA);
  i.mma.k = 0;
  add("HGMMA with k = 0", i, "HGMMA shape m64n128k0 has a zero dimension");
  i = valid_mma(Opcode::HMMA);
  i.mma = {};
  add("HMMA without a shape", i, "HMMA shape m0n0k0 has a zero dimension");
  i = valid_ffma();
  i.op = Opcode::Count;
  add("opcode out of range", i, "opcode " + std::to_string(kNumOpcodes) + " out of range");
  i = valid_ffma();
  i.dtype = static_cast<DType>(kDTypeCount);
  add("dtype out of range", i, "dtype " + std::to_string(kDTypeCount) + " out of range");
  // Format 1.4: named barriers.
  i = WarpInst{};
  i.op = Opcode::BAR_ARV;
  i.aux = 1;
  add("bar.arrive without a count", i, "BAR_ARV (bar.arrive) expecting 0 warps (expected 1..32: bar.arrive requires a thread count)");
  i.group = 33;
  add("bar.arrive above 1024 threads", i, "BAR_ARV expecting 33 warps (expected 1..32: at most 1024 threads)");
  i = WarpInst{};
  i.op = Opcode::BAR;
  i.aux = 16;
  add("barrier id 16", i, "BAR with barrier id 16 (expected 0..15)");
  i.aux = 15;
  i.group = 40;
  add("bar.sync above 1024 threads", i, "BAR expecting 40 warps (expected 0 = the whole CTA, or 1..32: at most 1024 threads)");
  // Format 1.8: tcgen05.
  i = WarpInst{};
  i.op = Opcode::UTCMMA;
  i.dtype = DType::BF16;
  i.mma = {128, 256, 16};
  i.active_mask = 1u;
  REQUIRE(check_inst(i).empty());
  i.active_mask = 3u;
  add("tcgen05.mma by two lanes", i, "UTCMMA issued by lanes other than lane 0 alone (one thread issues a tcgen05.mma)");
  i.active_mask = 1u;
  i.mma = {128, 136, 16};
  add("tcgen05.mma m128 with n not a multiple of 16", i, "UTCMMA shape m128n136k16 (expected m64 with n a multiple of 8, "
      "or m128 with n a multiple of 16; n at most 256)");
  i.mma = {96, 128, 16};
  add("tcgen05.mma of 96 rows", i, "UTCMMA shape m96n128k16");
  i.mma = {64, 264, 16};
  add("tcgen05.mma wider than 256", i, "UTCMMA shape m64n264k16");
  i.mma = {128, 256, 32};
  add("tcgen05.mma bf16 with k32", i, "UTCMMA bf16 with k32 (expected k16: 32 bytes of K)");
  i.dtype = DType::F64;
  add("tcgen05.mma on fp64", i, "UTCMMA with dtype f64 (tcgen05.mma has no fp64 kind)");
  i = WarpInst{};
  i.op = Opcode::UTCBAR;
  i.group = 32;
  add("tcgen05.commit on mbarrier 32", i, "UTCBAR on mbarrier 32 (expected 0..31)");
  i = WarpInst{};
  i.op = Opcode::LDTM;
  add("tcgen05.ld of no columns", i, "LDTM of 0 columns (expected 1..128 32-bit columns per thread)");
  i = WarpInst{};
  i.op = Opcode::LDS;
  i.space = MemSpace::Shared;
  i.active_mask = 0;
  i.mma.m = 3;
  {
    WarpInst s;
    s.op = Opcode::USETMAXREG;
    s.aux = 20;
    add("setmaxnreg below 24", s, "USETMAXREG to 20 registers, group 0 (expected 24..256 registers, a multiple of 8; group 1 = inc, 0 = dec)");
    s.aux = 100;
    add("setmaxnreg not a multiple of 8", s, "USETMAXREG to 100 registers");
  }
  add("distributed shared memory of two CTAs", i, "LDS on the shared memory of several CTAs (cluster mask 3; expected one bit, or 0 for its own)");
  return v;
}

InMemoryKernel one_warp_kernel(const std::string& name, std::vector<WarpInst> insts) {
  InMemoryKernel k;
  k.info = make_info(name, {1, 1, 1}, {32, 1, 1});
  k.ctas.push_back({InMemoryKernel::Warp{std::move(insts), {}}});
  return k;
}

}  // namespace

TEST_CASE("check_inst accepts valid records", "[trace][validity]") {
  CHECK(check_inst(WarpInst{}) == "");  // NOP
  CHECK(check_inst(valid_ffma()) == "");
  CHECK(check_inst(valid_ldg()) == "");
  CHECK(check_inst(valid_mma(Opcode::HMMA)) == "");
  CHECK(check_inst(valid_mma(Opcode::HGMMA)) == "");
  WarpInst i = valid_ffma();
  i.dst[0] = kRegZero;  // RZ
  i.src[0] = 254;
  CHECK(check_inst(i) == "");
  i.num_src = 1;
  i.src[3] = 0x1234;  // slots beyond the counts are not registers the simulator reads
  CHECK(check_inst(i) == "");
  for (DType t : kTensorDTypes) {
    i = valid_mma(Opcode::HMMA);
    i.dtype = t;
    CHECK(check_inst(i) == "");
  }
  i = valid_ldg();
  i.addr_mode = AddrMode::None;
  i.access_bytes = 0;
  i.active_mask = 0;  // no lane accesses memory: address fields are not needed
  CHECK(check_inst(i) == "");
  i = valid_ldg();
  i.access_bytes = 16;
  i.addr_mode = AddrMode::Strided2D;
  for (std::uint8_t g : {1, 32}) {
    i.group = g;
    CHECK(check_inst(i) == "");
  }
  const std::array<std::int32_t, kWarpSize> lanes{};
  i.addr_mode = AddrMode::Deltas;
  i.deltas = lanes.data();
  CHECK(check_inst(i) == "");
  for (std::size_t op = 0; op < kNumOpcodes; ++op) {  // every memory opcode in its own space
    const OpcodeInfo& info = opcode_info(static_cast<Opcode>(op));
    if (info.space == MemSpace::None) continue;
    WarpInst m = valid_ldg();
    m.op = static_cast<Opcode>(op);
    m.space = info.space;
    if (m.op == Opcode::UTMALDG) {  // one thread's box: 2 rows of 64 bytes, 128 bytes apart
      m.active_mask = 1;
      m.aux = 2;
      m.group_stride = 64;
      m.stride = 128;
    }
    INFO(info.name);
    CHECK(check_inst(m) == "");
  }
}

TEST_CASE("check_inst names what is wrong", "[trace][validity]") {
  for (const InvalidCase& c : invalid_cases()) {
    INFO(c.rule);
    CHECK_THAT(check_inst(c.inst), Contains(c.message));
  }
  WarpInst i = valid_ldg();
  i.addr_mode = AddrMode::Deltas;  // and no offsets
  CHECK_THAT(check_inst(i), Contains("Deltas address mode without lane offsets"));
}

TEST_CASE("in-memory sources reject invalid records, kernels and warp counts", "[trace][validity][source]") {
  SECTION("an invalid record: TraceError naming kernel, CTA, warp, instruction and the problem") {
    for (const InvalidCase& c : invalid_cases()) {
      INFO(c.rule);
      InMemoryTrace trace({one_warp_kernel("k", {valid_ffma(), c.inst})}, "mem");
      auto stream = trace.open_kernel(0)->open_cta(0)->open_warp(0);
      std::array<WarpInst, 4> buf;
      REQUIRE_THROWS_WITH(stream->read(buf.data(), buf.size()),
                          Contains("mem: kernel 'k', CTA 0, warp 0, instruction 1: " + c.message));
      VectorWarpStream vector_stream({valid_ffma(), c.inst});
      REQUIRE_THROWS_WITH(vector_stream.read(buf.data(), buf.size()), Contains("instruction 1: " + c.message));
    }
  }
  SECTION("a valid record reads back") {
    InMemoryTrace trace({one_warp_kernel("k", {valid_ffma(), valid_ldg(), valid_mma(Opcode::HMMA)})});
    auto stream = trace.open_kernel(0)->open_cta(0)->open_warp(0);
    std::array<WarpInst, 4> buf;
    CHECK(stream->read(buf.data(), buf.size()) == 3);
  }
  SECTION("a CTA with the wrong number of warps") {
    InMemoryKernel k = one_warp_kernel("k", {valid_ffma()});
    k.info.block = {33, 1, 1};  // two warps, the second partial
    InMemoryTrace trace({k}, "mem");
    auto kernel = trace.open_kernel(0);
    REQUIRE_THROWS_WITH(kernel->open_cta(0),
                        Contains("mem: kernel 'k', CTA 0: 1 warps, but a block of 33 threads has 2"));
    k.info.block = {32, 1, 1};
    k.ctas[0].push_back(k.ctas[0][0]);
    InMemoryTrace two({k}, "mem");
    REQUIRE_THROWS_WITH(two.open_kernel(0)->open_cta(0), Contains("CTA 0: 2 warps, but a block of 32 threads has 1"));
  }
  SECTION("invalid kernel info") {
    auto expect = [](KernelInfo info, const std::string& msg) {
      CHECK_THAT(check_kernel_info(info), Contains(msg));
      InMemoryKernel k = one_warp_kernel("k", {});
      k.info = info;
      InMemoryTrace trace({k}, "mem");
      REQUIRE_THROWS_WITH(trace.open_kernel(0), Contains("mem: kernel 0 ('k'): " + msg));
    };
    const KernelInfo good = make_info("k", {1, 1, 1}, {32, 1, 1});
    CHECK(check_kernel_info(good) == "");
    KernelInfo i = good;
    i.registers_per_thread = 0;
    expect(i, "registers_per_thread 0 out of range (expected 1..255)");
    i.registers_per_thread = 256;
    expect(i, "registers_per_thread 256 out of range (expected 1..255)");
    i.registers_per_thread = 1;
    CHECK(check_kernel_info(i) == "");
    i = good;
    i.block = {32, 0, 1};
    expect(i, "block 32x0x1 has no threads");
    i = good;
    i.grid = {0, 1, 1};
    expect(i, "grid 0x1x1 has no CTAs");
    i = good;
    i.grid = {3, 1, 1};
    i.cluster = {2, 1, 1};
    expect(i, "grid 3x1x1 is not a whole number of clusters 2x1x1");
    i.cluster = {0, 1, 1};
    expect(i, "cluster 0x1x1 must have 1 to 16 CTAs");
    i.grid = {32, 1, 1};
    i.cluster = {32, 1, 1};
    expect(i, "cluster 32x1x1 must have 1 to 16 CTAs");
    i.cluster = {16, 1, 1};
    CHECK(check_kernel_info(i) == "");
  }
}

TEST_CASE("native trace 1.3: cluster dimensions and cluster CTA masks round trip", "[trace][file][cluster]") {
  TempDir dir;
  const std::string path = dir.path("cluster.wst");
  InMemoryKernel k;
  k.info = make_info("clustered", {4, 2, 1}, {32, 1, 1});
  k.info.cluster = {2, 2, 1};
  WarpInst arrive;
  arrive.op = Opcode::SYNCS_ARRIVE_TRANS64;
  arrive.group = 3;
  arrive.mma.m = 0xb;  // ranks 0, 1 and 3
  WarpInst exit;
  exit.op = Opcode::EXIT;
  arrive.pc = 0;
  exit.pc = 16;
  for (std::uint64_t c = 0; c < k.info.grid.count(); ++c) k.ctas.push_back({InMemoryKernel::Warp{{arrive, exit}, {}}});
  InMemoryKernel plain = one_warp_kernel("plain", {exit});
  write_kernels(path, {k, plain});
  TraceFileReader reader(path);
  require_same_trace({k, plain}, reader, 4);
  auto kernel = reader.open_kernel(0);
  CHECK(kernel->info().cluster == (Dim3{2, 2, 1}));
  CHECK(reader.open_kernel(1)->info().cluster == Dim3{});  // no cluster field written: 1x1x1
  std::array<WarpInst, 2> buf;
  REQUIRE(kernel->open_cta(5)->open_warp(0)->read(buf.data(), buf.size()) == 2);
  CHECK(buf[0].cluster_cta_mask() == 0xbu);
  CHECK(buf[1].cluster_cta_mask() == 0u);  // EXIT: mma.m is no mask
  // Ranks are x fastest over the cluster (%cluster_ctarank); CTA 5 = (1, 1) is rank 3 of the cluster at (0, 0).
  CHECK(cluster_rank(kernel->info(), 5) == 3);
  CHECK(cluster_peer(kernel->info(), 5, 0) == 0);
  CHECK(cluster_peer(kernel->info(), 5, 1) == 1);
  CHECK(cluster_peer(kernel->info(), 5, 2) == 4);
  CHECK(cluster_peer(kernel->info(), 6, 1) == 3);  // CTA 6 = (2, 1): cluster at (2, 0), rank 1 = (3, 0)
}

TEST_CASE("native trace 1.4: named barriers with a count and bar.arrive round trip", "[trace][file][barrier]") {
  TempDir dir;
  const std::string path = dir.path("named_barriers.wst");
  auto barrier = [](Opcode op, std::uint32_t id, std::uint8_t warps, std::uint32_t pc) {
    WarpInst in;
    in.op = op;
    in.aux = id;
    in.group = warps;
    in.pc = pc;
    return in;
  };
  WarpInst exit;
  exit.op = Opcode::EXIT;
  exit.pc = 64;
  // bar.sync 0 (whole CTA), bar.sync 1, 64; bar.arrive 2, 64; bar.sync 15, 1024; then EXIT.
  const std::vector<WarpInst> insts = {barrier(Opcode::BAR, 0, 0, 0), barrier(Opcode::BAR, 1, 2, 16),
                                       barrier(Opcode::BAR_ARV, 2, 2, 32), barrier(Opcode::BAR, 15, 32, 48), exit};
  for (const WarpInst& in : insts) CHECK(check_inst(in) == "");
  const InMemoryKernel k = one_warp_kernel("named", insts);
  write_kernels(path, {k});
  TraceFileReader reader(path);
  require_same_trace({k}, reader, 1);
  std::array<WarpInst, 5> buf;
  REQUIRE(reader.open_kernel(0)->open_cta(0)->open_warp(0)->read(buf.data(), buf.size()) == 5);
  CHECK(buf[0].op == Opcode::BAR);
  CHECK(buf[0].group == 0);
  CHECK(buf[1].op == Opcode::BAR);
  CHECK(buf[1].aux == 1);
  CHECK(buf[1].group == 2);
  CHECK(buf[2].op == Opcode::BAR_ARV);
  CHECK(buf[2].aux == 2);
  CHECK(buf[2].group == 2);
  CHECK(buf[3].aux == 15);
  CHECK(buf[3].group == 32);
}

TEST_CASE("the trace writer refuses invalid records and kernels", "[trace][validity][file]") {
  TempDir dir;
  const std::string path = dir.path("invalid.wst");
  for (const InvalidCase& c : invalid_cases()) {
    INFO(c.rule);
    const InMemoryKernel k = one_warp_kernel("k", {valid_ffma(), c.inst});
    TraceWriter w(path);
    w.begin_kernel(k.info);
    const std::string place = "kernel 0 ('k'), CTA 0, warp 0, instruction 1: invalid instruction: ";
    REQUIRE_THROWS_WITH(w.add_cta(k.ctas[0]), Contains(path) && Contains(place + c.message));
    // The same through write_trace, from an in-memory source (which rejects the record itself).
    InMemoryTrace source({k});
    REQUIRE_THROWS_WITH(write_trace(path, source), Contains(c.message));
  }
  {
    TraceWriter w(path);
    KernelInfo info = make_info("r", {1, 1, 1}, {32, 1, 1});
    info.registers_per_thread = 300;
    REQUIRE_THROWS_WITH(w.begin_kernel(info),
                        Contains("kernel 0 ('r'): invalid kernel info: registers_per_thread 300 out of range"));
  }
  {
    TraceWriter w(path);
    w.begin_kernel(make_info("w", {1, 1, 1}, {64, 1, 1}));
    REQUIRE_THROWS_WITH(w.add_cta(std::vector<InMemoryKernel::Warp>(1)),
                        Contains("kernel 0 ('w'), CTA 0: 1 warps, but a block of 64 threads has 2"));
  }
  {  // Valid (predicated off: any access size), but 1.5 keeps the size in 5 bits of the access byte.
    WarpInst off = valid_ldg();
    off.active_mask = 0;
    off.access_bytes = 40;
    REQUIRE(check_inst(off).empty());
    const InMemoryKernel k = one_warp_kernel("k", {off});
    TraceWriter w(path);
    w.begin_kernel(k.info);
    REQUIRE_THROWS_WITH(w.add_cta(k.ctas[0]), Contains("access size above 31 bytes per lane"));
  }
}

TEST_CASE("the trace reader rejects invalid records and kernels", "[trace][validity][file]") {
  TempDir dir;
  const std::string path = dir.path("invalid.wst");
  auto read_all = [&path](const Bytes& file) {
    write_file(path, file);
    TraceFileReader reader(path);
    read_everything(reader);
  };
  auto expect_error = [&](const Bytes& file, const std::string& what) {
    INFO("expected error: " << what);
    try {
      read_all(file);
      FAIL("no error");
    } catch (const TraceError& e) {
      CHECK_THAT(std::string(e.what()), Contains(path) && Contains(what));
    }
  };
  // Records: see FORMAT.md "Instruction record". Flags: 0x02 registers, 0x08 mask, 0x10 dtype, 0x20 memory,
  // 0x40 mma. Memory descriptor: space (1 global, 2 shared) | mode << 3 (1 strided, 2 strided2d) | 0x40 group.
  const std::uint8_t global_strided = 1 | (1 << 3), global_2d = 1 | (2 << 3);
  const std::uint8_t bf16 = static_cast<std::uint8_t>(DType::BF16), f32 = static_cast<std::uint8_t>(DType::F32);

  // The place: a valid FFMA first, so the bad record is instruction 1, at byte 4 + 8 + 2 of the CTA block.
  expect_error(one_warp_file(2, {kFFMA, 0, kFFMA, 0x02, 0x01, 0xac, 0x02}),
               "kernel 0 ('crafted'), CTA 0, warp 0, instruction 1 (byte 14 of the decompressed CTA block): "
               "invalid instruction: dst[0] register 300 out of range (expected 0..255, 255 = RZ)");
  expect_error(one_warp_file(1, {kFFMA, 0x02, 0x10, 0xff, 0xff, 0x03}), "src[0] register kNoReg (0xffff)");
  expect_error(one_warp_file(1, {kLDG, 0}), "LDG in memory space none (expected global)");
  expect_error(one_warp_file(1, {kFFMA, 0x20, 1, 4, 0}), "FFMA in memory space global (expected none");
  expect_error(one_warp_file(1, {kLDS, 0x20, global_strided, 4, 0}), "LDS in memory space global (expected shared)");
  expect_error(one_warp_file(1, {kLDG, 0x20, global_strided, 0, 0}), "LDG access size 0 bytes per lane");
  expect_error(one_warp_file(1, {kLDG, 0x20, global_strided, 17, 0}), "LDG access size 17 bytes per lane");
  // From 1.5 the access byte's bits 5-7 are the cache operator: 5 and above are unknown; 0x20 | 0 is evict_first
  // on a zero access size; a shared load with a cache operator is refused.
  expect_error(one_warp_file(1, {kLDG, 0x20, global_strided, 5 << 5 | 4, 0}, 5), "cache operator 5 out of range");
  expect_error(one_warp_file(1, {kLDG, 0x20, global_strided, 1 << 5, 0}, 5), "LDG access size 0 bytes per lane");
  expect_error(one_warp_file(1, {kLDS, 0x20, 2 | (1 << 3), 4 << 5 | 4, 0}, 5),
               "LDS with cache operator bypass (expected default: cache operators apply to LDG and STG)");
  // Before 1.5 the whole byte is the access size.
  expect_error(one_warp_file(1, {kLDG, 0x20, global_strided, 4 << 5 | 16, 0}, 4), "LDG access size 144 bytes per lane");
  expect_error(one_warp_file(1, {kLDG, 0x20, 1, 4, 0}), "LDG with active lanes but no address mode");
  expect_error(one_warp_file(1, {kLDG, 0x20, global_2d, 4, 0}), "Strided2D lane group 0 out of range");
  expect_error(one_warp_file(1, {kLDG, 0x20, global_2d | 0x40, 4, 0, 33}), "Strided2D lane group 33 out of range");
  expect_error(one_warp_file(1, {kHMMA, 0x40, 16, 8, 16}), "HMMA with dtype none");
  expect_error(one_warp_file(1, {kHMMA, 0x50, f32, 16, 8, 16}), "HMMA with dtype f32");
  expect_error(one_warp_file(1, {kHGMMA, 0x50, bf16, 64, 0x80, 0x01, 0}),  // n = 128: a two-byte varint
               "HGMMA shape m64n128k0 has a zero dimension");
  expect_error(one_warp_file(1, {kHGMMA, 0x10, bf16}), "HGMMA shape m0n0k0 has a zero dimension");
  // (A Deltas record always carries its offsets in a file; more than 4 registers cannot be encoded.)

  // Valid neighbours of the cases above read back.
  CHECK_NOTHROW(read_all(one_warp_file(1, {kFFMA, 0x02, 0x01, 0xff, 0x01})));  // RZ = 255
  CHECK_NOTHROW(read_all(one_warp_file(1, {kLDG, 0x28, 0, 0, 0, 0, 1, 0, 0})));  // no active lane, no mode
  CHECK_NOTHROW(read_all(one_warp_file(1, {kLDG, 0x20, global_2d | 0x40, 16, 0, 32})));
  auto first_record = [&](const Bytes& file) {
    write_file(path, file);
    TraceFileReader reader(path);
    std::array<WarpInst, 2> buf;
    REQUIRE(reader.open_kernel(0)->open_cta(0)->open_warp(0)->read(buf.data(), buf.size()) == 1);
    return buf[0];
  };
  {  // 1.5, access byte 4 << 5 | 16: a 16-byte load past L1
    const WarpInst hinted = first_record(one_warp_file(1, {kLDG, 0x20, global_strided, 4 << 5 | 16, 0}, 5));
    CHECK(hinted.cache == CacheOp::Bypass);
    CHECK(hinted.access_bytes == 16);
  }
  {  // 1.4: a predicated-off load may carry any access size, 40 here, and keeps it
    const WarpInst off = first_record(one_warp_file(1, {kLDG, 0x28, 0, 0, 0, 0, global_strided, 40, 0}, 4));
    CHECK(off.active_mask == 0);
    CHECK(off.access_bytes == 40);
    CHECK(off.cache == CacheOp::Default);
  }
  CHECK_NOTHROW(read_all(one_warp_file(1, {kHGMMA, 0x50, bf16, 64, 0x80, 0x01, 16})));
  {  // 1.6: an LDG with aux is a spin-wait poll, one thread's, into a register (flags: regs, mask, memory, aux)
    const Bytes poll = {kLDG, 0xaa, 0x01, 7, 0x01, 0, 0, 0, global_strided, 4, 0, 3};
    const WarpInst wait = first_record(one_warp_file(1, poll, 6));
    CHECK(wait.aux == 3);
    CHECK(wait.active_mask == 1u);
    expect_error(one_warp_file(1, {kLDG, 0xaa, 0x01, 7, 0x03, 0, 0, 0, global_strided, 4, 0, 3}, 6),
                 "LDG spin-wait (aux 3 arrivals) issued by 2 lanes (expected one thread)");
    expect_error(one_warp_file(1, {kLDG, 0xa8, 0x01, 0, 0, 0, global_strided, 4, 0, 3}, 6),
                 "LDG spin-wait (aux 3 arrivals) without a destination register other than RZ");
    // Into RZ the poll would never wait for its value: refused too.
    expect_error(one_warp_file(1, {kLDG, 0xaa, 0x01, 0xff, 0x01, 0x01, 0, 0, 0, global_strided, 4, 0, 3}, 6),
                 "LDG spin-wait (aux 3 arrivals) without a destination register other than RZ");
    // Before 1.6 an LDG's aux is free and means nothing: not a wait, whatever the lanes.
    const WarpInst plain = first_record(one_warp_file(1, {kLDG, 0xaa, 0x01, 7, 0x03, 0, 0, 0, global_strided, 4, 0, 3}, 5));
    CHECK(plain.aux == 0);
    CHECK(plain.active_mask == 3u);
  }
  {  // 1.8: an LDS's mma.m names the cluster CTA whose shared memory it reads; before, the field was free.
    const Bytes lds = {kLDS, 0x60, 2 | (1 << 3), 4, 0, 3, 0, 0};  // memory + mma fields, mma.m = 3
    expect_error(one_warp_file(1, lds, 8), "LDS on the shared memory of several CTAs (cluster mask 3");
    CHECK(first_record(one_warp_file(1, lds, 7)).mma.m == 0);
    CHECK(first_record(one_warp_file(1, {kLDS, 0x60, 2 | (1 << 3), 4, 0, 2, 0, 0}, 8)).cluster_cta_mask() == 2u);
  }

  // Kernel info and warp counts.
  CraftedFile f;
  f.ctas.push_back(cta_payload({{1, {kFFMA, 0}}}));
  f.block = {64, 1, 1};
  expect_error(build_file(f), "kernel 0 ('crafted'), CTA 0 (byte 0 of the decompressed CTA block): 1 warps, but a "
                              "block of 64 threads has 2");
  f.block = {32, 1, 1};
  f.registers = 0;
  expect_error(build_file(f), "kernel 0 ('crafted'): invalid kernel info: registers_per_thread 0 out of range");
  f.registers = 256;
  expect_error(build_file(f), "registers_per_thread 256 out of range (expected 1..255)");
  f.registers = 255;
  CHECK_NOTHROW(read_all(build_file(f)));
  f.block = {0, 1, 1};
  expect_error(build_file(f), "invalid kernel info: block 0x1x1 has no threads");
  CraftedFile empty;
  empty.grid = {4, 0, 1};  // and no CTAs, as the index says
  expect_error(build_file(empty), "invalid kernel info: grid 4x0x1 has no CTAs");
}

// Issue 6: inputs the reader used to accept, each of which the simulator then ran wrongly.
TEST_CASE("the trace reader rejects what it used to accept silently", "[trace][validity][file]") {
  TempDir dir;
  const std::string path = dir.path("accepted.wst");
  auto read_error = [&path](const Bytes& file) -> std::string {
    write_file(path, file);
    try {
      TraceFileReader reader(path);
      read_everything(reader);
    } catch (const TraceError& e) {
      return e.what();
    }
    return "no error";
  };
  const std::uint8_t kEXIT = static_cast<std::uint8_t>(Opcode::EXIT);
  const std::uint8_t global_strided = 1 | (1 << 3);

  SECTION("a grid whose CTA count wraps around 64 bits (it ran as 1 CTA)") {
    CraftedFile f;
    f.grid = {2996173443u, 1119412321u, 11};  // the product modulo 2^64 is 1
    f.ctas.push_back(cta_payload({{1, {kFFMA, 0}}}));
    CHECK_THAT(read_error(build_file(f)),
               Contains(path) && Contains("invalid kernel info: grid 2996173443x1119412321x11 has more than 2^64 - 1 CTAs"));
  }
  SECTION("records after EXIT (they were ignored)") {
    CHECK_THAT(read_error(one_warp_file(2, {kEXIT, 0, kFFMA, 0})),
               Contains(path) && Contains("kernel 0 ('crafted'), CTA 0, warp 0, instruction 1") &&
                   Contains("instruction after the warp's EXIT"));
    CHECK(read_error(one_warp_file(2, {kFFMA, 0, kEXIT, 0})) == "no error");
  }
  SECTION("an access running past the end of the 64-bit address space (the coalescer wrapped)") {
    // base = 2^64 - 2 (zigzag of the difference -2 from 0 is 3), 4 bytes per lane.
    CHECK_THAT(read_error(one_warp_file(1, {kLDG, 0x20, global_strided, 4, 3})),
               Contains("instruction 0") &&
                   Contains("LDG lane 0: access of 4 bytes at base 0xfffffffffffffffe + 0 runs past the end of the "
                            "64-bit address space"));
    // The last line itself is legal: base 2^64 - 128 (zigzag 255), stride 4 (zigzag 8).
    CHECK(read_error(one_warp_file(1, {kLDG, 0x20, global_strided | 0x20, 4, 0xff, 0x01, 8})) == "no error");
  }
  SECTION("a kernel name that is not UTF-8 (it went raw into stats.json)") {
    CraftedFile f;
    f.name = "gemm_\xe9";
    f.ctas.push_back(cta_payload({{1, {kFFMA, 0}}}));
    CHECK_THAT(read_error(build_file(f)), Contains("invalid kernel info: kernel name: not UTF-8 (byte 0xe9) at byte 5"));
  }
}

TEST_CASE("check_inst keeps every lane's access inside the 64-bit address space", "[trace][validity]") {
  WarpInst in = valid_ldg();
  in.base = 64;
  in.stride = -4;  // lane 17 would be at 64 - 68
  CHECK_THAT(check_inst(in), Contains("LDG lane 17: access of 4 bytes at base 0x40 - 68 lies below address 0"));
  in.active_mask = 0xffff;  // lanes 0..15 reach down to address 4
  CHECK(check_inst(in).empty());
  in = valid_ldg();
  in.base = ~std::uint64_t{0} - 127;
  in.stride = 4;
  in.access_bytes = 4;
  CHECK(check_inst(in).empty());  // exactly the last line
  in.access_bytes = 8;
  CHECK_THAT(check_inst(in), Contains("LDG lane 31: access of 8 bytes"));
}

TEST_CASE("the trace writer refuses records after EXIT and kernels with overflowing sizes", "[trace][validity][file]") {
  TempDir dir;
  const std::string path = dir.path("refused.wst");
  WarpInst exit_inst;
  exit_inst.op = Opcode::EXIT;
  {
    const InMemoryKernel k = one_warp_kernel("k", {exit_inst, valid_ffma()});
    TraceWriter w(path);
    w.begin_kernel(k.info);
    REQUIRE_THROWS_WITH(w.add_cta(k.ctas[0]), Contains("kernel 0 ('k'), CTA 0, warp 0, instruction 1: instruction "
                                                       "after the warp's EXIT"));
  }
  TraceWriter w(path);
  REQUIRE_THROWS_WITH(w.begin_kernel(make_info("g", {0xffffffffu, 0xffffffffu, 2}, {32, 1, 1})),
                      Contains("grid 4294967295x4294967295x2 has more than 2^64 - 1 CTAs"));
  REQUIRE_THROWS_WITH(w.begin_kernel(make_info("b", {1, 1, 1}, {0xffffffffu, 0xffffffffu, 1})),
                      Contains("block 4294967295x4294967295x1 has more than 137438953440 threads"));
}
