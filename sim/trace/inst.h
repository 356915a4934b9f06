// Decoded warp-instruction record: the unit every trace source produces and the SM model consumes.
// Fixed-size and allocation-free so that streams can hand out batches of them (no per-instruction heap use).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace warpsim {

// Which functional-unit pipeline executes an instruction. Per-class latency and issue interval come from the
// SM's config (`sm.pipes.<class>`), per-opcode overrides from `sm.opcode_latency`.
enum class OpClass : std::uint8_t {
  Int,      // integer ALU (IADD3, IMAD, LOP3, ...)
  Fp32,     // FP32 FMA pipe
  Fp64,     // FP64 pipe
  Sfu,      // special functions (MUFU)
  Tensor,   // tensor core (HMMA, HGMMA, UTCMMA)
  Ldst,     // load/store unit: global, shared, local memory
  Branch,   // branch unit
  Sync,     // barriers and async-copy fences: handled by the warp scheduler, no pipe
  Exit,     // end of warp
  Count
};

enum class Opcode : std::uint16_t {
  // integer
  IADD3, IMAD, LOP3, SHF, ISETP, MOV, S2R,
  // fp32
  FADD, FMUL, FFMA, FSETP, HADD2, HFMA2,
  // fp64
  DADD, DMUL, DFMA,
  // special function
  MUFU,
  // tensor: mma.sync per warp (m,n,k in WarpInst::mma) and warpgroup MMA (each of 4 warps issues its quarter)
  HMMA, HGMMA,
  // memory
  LDG, STG, LDS, STS, LDSM, LDGSTS, LDL, STL, ATOMG, RED, LDC,
  // control and synchronisation
  BRA, BAR,        // BAR: bar.sync, aux = barrier id 0..15, group = warps expected (0 = every live warp of the CTA)
  LDGDEPBAR,       // commit outstanding LDGSTS of this warp as one async group
  DEPBAR,          // wait until at most aux async groups are outstanding
  NOP, EXIT,
  // appended after version 1.0 (trace format 1.1): existing opcode numbers stay valid
  SHFL,            // warp shuffle (shfl.sync): register exchange between lanes; no memory access
  // appended in trace format 1.2: asynchronous warpgroup MMA (wgmma) ordering. SASS spells the first and last
  // WARPGROUP.ARRIVE and WARPGROUP.DEPBAR.LE gsb0, N; the commit has no SASS instruction of its own (the group's
  // last HGMMA carries the gsb0 mark), it is a record here so that traces can say where a group ends.
  WARPGROUP_ARRIVE,  // wgmma.fence: orders the warp's register/shared-memory writes before the following HGMMAs
  WARPGROUP_COMMIT,  // wgmma.commit_group: the warp's HGMMAs issued since the last commit become one group
  WARPGROUP_DEPBAR,  // wgmma.wait_group: wait until at most aux committed HGMMA groups are still executing
  // Hopper asynchronous copies and transaction barriers (format 1.2). `group` names the CTA's mbarrier
  // (0..kMbarriers-1; the trace carries an id, not its shared-memory address).
  UTMALDG,               // TMA box load global -> shared (cp.async.bulk.tensor / cp.async.bulk): one thread
                         // (active_mask 1) copies `aux` rows of `group_stride` bytes from base, row pitch `stride`;
                         // completion adds the bytes to mbarrier `group`'s transaction count
  SYNCS_ARRIVE_TRANS64,  // mbarrier.arrive.expect_tx: arrive on mbarrier `group`, expecting `aux` more bytes
  SYNCS_PHASECHK_TRANS64_TRYWAIT,  // mbarrier.try_wait.parity: wait until the phase of parity `aux` has completed
  MBARRIER_INIT,         // mbarrier.init: mbarrier `group` expects `aux` arrivals per phase (SASS: a shared store)
  // appended in trace format 1.4: warp-specialised named barriers (with BAR's `group` = warps expected)
  BAR_ARV,               // bar.arrive (SASS BAR.ARV): arrives on barrier `aux` (0..15), which expects `group` warps
                         // (> 0: PTX requires a thread count), and goes on without waiting
  // appended in trace format 1.8: Blackwell's fifth-generation tensor cores (tcgen05), accumulating in tensor
  // memory (TMEM) rather than registers.
  UTCMMA,  // tcgen05.mma (SASS UTCHMMA, UTCQMMA, UTCOMMA, UTCIMMA): one thread (active_mask 1) hands the SM's tensor
           // core an m x n x k MMA of the CTA (m 64 or 128 rows, A and B in shared memory, D in TMEM) and goes on;
           // it runs asynchronously, in issue order with the CTA's other UTCMMAs. aux: flags (kMmaSparse)
  UTCBAR,  // tcgen05.commit.mbarrier::arrive::one: once every UTCMMA this warp issued before it has completed, one
           // arrival on mbarrier `group` (of the CTAs in the cluster mask, WarpInst::cluster_cta_mask(); 0 = own)
  LDTM,    // tcgen05.ld (+ tcgen05.wait::ld): the warp copies its 32 TMEM lanes x `aux` 32-bit columns into its
           // destination registers
  USETMAXREG,  // setmaxnreg.{inc,dec}.sync.aligned (SASS USETMAXREG): the warp's registers per thread become `aux`
               // (24..256, a multiple of 8); `group` 1 = inc (waits until the CTA's released registers cover the
               // growth), 0 = dec (releases the difference to the CTA)
  Count
};

enum class MemSpace : std::uint8_t { None, Global, Shared, Local, Const };

// Compact per-lane addressing. Lane i (counted over *all* 32 lanes, inactive ones are simply not accessed):
//  Strided:   base + i*stride
//  Strided2D: base + (i % group)*stride + (i / group)*group_stride   (tile rows: e.g. 8 lanes x 16 B per row)
//  Deltas:    base + deltas[i]   (32 signed 32-bit offsets, carried in WarpInst::deltas)
enum class AddrMode : std::uint8_t { None, Strided, Strided2D, Deltas };

// Element types of tensor-core operands (A/B); accumulation type is implied (fp32 for float types).
// FP4 (appended in trace format 1.7) is e2m1 with block scales (NVFP4: an e4m3 scale per 16 elements along K, as
// Blackwell's block-scaled MMAs take it): two elements per byte.
enum class DType : std::uint8_t { None, F16, BF16, FP8, TF32, F32, F64, I8, FP4 };
inline constexpr DType kLastDType = DType::FP4;
inline constexpr std::size_t kDTypeCount = static_cast<std::size_t>(kLastDType) + 1;  // arrays indexed by DType
// The types a tensor core takes (every DType but None and F32), in the order configs list their rates.
inline constexpr DType kTensorDTypes[] = {DType::F16, DType::BF16, DType::TF32, DType::FP8, DType::I8, DType::F64,
                                          DType::FP4};

// Cache operator of a global load or store: the PTX cache operators and L1 eviction priorities as the SASS
// modifiers of LDG/STG show them (traces/FORMAT.md, "Cache operators"). L1 and L2 keep a priority per line.
enum class CacheOp : std::uint8_t {
  Default,     // ld.ca / st.wb: allocated in L1 (loads) and L2 at normal priority
  EvictFirst,  // ld.cs/st.cs, L1::evict_first, ld.lu (SASS .EF, .LU): allocated, the first lines evicted
  EvictLast,   // L1::evict_last (SASS .EL): allocated, evicted only after normal and evict-first lines
  NoAllocate,  // L1::no_allocate (SASS .NA): served by L1 on a hit, not allocated there on a miss
  Bypass,      // ld.cg/.cv and gpu/sys-scope strong loads (SASS .STRONG.GPU/.SYS): not looked up in L1
  Count
};

inline constexpr std::uint16_t kNoReg = 0xffff;
inline constexpr int kMaxDst = 4;
inline constexpr int kMaxSrc = 4;
inline constexpr int kWarpSize = 32;
inline constexpr std::uint32_t kMbarriers = 32;  // mbarriers per CTA a trace may name (WarpInst::group)
inline constexpr std::uint32_t kNamedBarriers = 16;  // barrier ids of BAR / BAR_ARV (PTX bar.sync 0..15)
inline constexpr std::uint32_t kMaxCtaWarps = 32;    // 1024 threads: the most a CTA and a barrier count may have
inline constexpr std::uint32_t kMaxClusterCtas = 16;  // CTAs of one thread-block cluster (sm_90's non-portable limit)

// HMMA / HGMMA aux flag: A is 2:4 structured-sparse (mma.sp, wgmma .sp); the shape's K is the dense-equivalent K
// and the FLOPs counted are 2mnk, as NVIDIA counts sparse throughput.
inline constexpr std::uint32_t kMmaSparse = 1;

struct MmaShape {
  std::uint16_t m = 0, n = 0, k = 0;
};

struct WarpInst {
  std::uint32_t pc = 0;
  Opcode op = Opcode::NOP;
  DType dtype = DType::None;
  std::uint8_t num_dst = 0;
  std::uint8_t num_src = 0;
  std::uint32_t active_mask = 0xffffffffu;
  std::array<std::uint16_t, kMaxDst> dst{kNoReg, kNoReg, kNoReg, kNoReg};
  std::array<std::uint16_t, kMaxSrc> src{kNoReg, kNoReg, kNoReg, kNoReg};
  // memory
  MemSpace space = MemSpace::None;
  AddrMode addr_mode = AddrMode::None;
  std::uint8_t access_bytes = 0;   // bytes per lane (1..16)
  std::uint8_t group = 0;          // Strided2D lanes per group; BAR, BAR_ARV: warps the barrier expects
  CacheOp cache = CacheOp::Default;  // global loads and stores (format 1.5)
  std::uint64_t base = 0;
  std::int32_t stride = 0;
  std::int32_t group_stride = 0;
  const std::int32_t* deltas = nullptr;  // Deltas mode: 32 entries, owned by the stream, valid for the batch
  // tensor
  MmaShape mma{};
  // BAR, BAR_ARV: barrier id; DEPBAR, WARPGROUP_DEPBAR: max groups still outstanding; HMMA, HGMMA: flags (kMmaSparse);
  // LDG (format 1.6): > 0 makes it a spin-wait poll for that many semaphore arrivals (sim/slots/grid_sync.h)
  std::uint32_t aux = 0;

  // Address of lane `lane` (only meaningful when the lane is active and addr_mode != None).
  std::uint64_t lane_address(int lane) const noexcept { return base + lane_offset(lane); }

  // Signed distance of lane `lane`'s address from `base` (|offset| < 2^37, so it cannot overflow).
  std::int64_t lane_offset(int lane) const noexcept {
    switch (addr_mode) {
      case AddrMode::Strided:
        return static_cast<std::int64_t>(lane) * stride;
      case AddrMode::Strided2D:
        return static_cast<std::int64_t>(lane % group) * stride +
               static_cast<std::int64_t>(lane / group) * group_stride;
      case AddrMode::Deltas:
        return deltas[lane];
      case AddrMode::None:
        break;
    }
    return 0;
  }
  bool is_memory() const noexcept { return space != MemSpace::None; }
  // UTMALDG (multicast), SYNCS_ARRIVE_TRANS64 and UTCBAR (arrive on other CTAs' mbarriers): bit r = the CTA of
  // rank r in the issuing CTA's cluster, carried in mma.m, which these opcodes do not otherwise use (format 1.3;
  // UTCBAR 1.8); 0 = the issuing CTA only, as before. LDS and STS (1.8): one bit, the CTA whose shared memory
  // they access (ld/st.shared::cluster, distributed shared memory).
  std::uint32_t cluster_cta_mask() const noexcept {
    return (op == Opcode::UTMALDG || op == Opcode::SYNCS_ARRIVE_TRANS64 || op == Opcode::UTCBAR || op == Opcode::LDS ||
            op == Opcode::STS)
               ? mma.m
               : 0u;
  }
  int active_lanes() const noexcept { return __builtin_popcount(active_mask); }
};

struct OpcodeInfo {
  std::string_view name;
  OpClass op_class;
  MemSpace space;      // default memory space for memory opcodes
  bool is_store;       // writes memory (STG/STS/STL/RED/ATOMG; LDGSTS writes shared memory)
};

const OpcodeInfo& opcode_info(Opcode op) noexcept;
inline OpClass op_class(Opcode op) noexcept { return opcode_info(op).op_class; }
// Parses "FFMA"; returns false when unknown.
bool parse_opcode(std::string_view name, Opcode& out) noexcept;
std::string_view op_class_name(OpClass c) noexcept;
bool parse_op_class(std::string_view name, OpClass& out) noexcept;
std::string_view dtype_name(DType t) noexcept;
bool parse_dtype(std::string_view name, DType& out) noexcept;
std::string_view mem_space_name(MemSpace s) noexcept;
std::string_view cache_op_name(CacheOp c) noexcept;  // "default", "evict_first", ... (the native text format's)
bool parse_cache_op(std::string_view name, CacheOp& out) noexcept;
std::vector<std::string> cache_op_names();  // every CacheOp's name, in order

// Semantic validity of one record (traces/FORMAT.md, "Validity"): what the simulator relies on beyond what the
// file format can represent. Returns "" when the record is valid, otherwise a message naming the first problem
// (e.g. "dst[1] register 300 out of range (expected 0..255, 255 = RZ)"). Checked by every trace source that
// decodes or hands out stored records (the file reader and writer, VectorWarpStream, InMemoryTrace), which
// throw TraceError with the message and the record's place. Deltas-mode records must carry their `deltas`.
inline constexpr std::uint16_t kRegZero = 255;           // RZ: the largest valid register id
inline constexpr std::uint32_t kMaxAccessBytes = 16;     // bytes per lane of one memory access
inline constexpr std::uint64_t kMaxTmaBoxBytes = 1u << 20;  // one UTMALDG box (a TMA box is at most 256^5 elements;
                                                            // shared memory holds far less than 1 MiB)
std::string check_inst(const WarpInst& inst);

struct KernelInfo;  // sim/trace/source.h
// Validity of a kernel's launch parameters: grid and block of at least one thread/CTA, registers_per_thread in
// 1..255. "" when valid. (Defined in source.cpp.) The warp count of each CTA (KernelInfo::warps_per_cta()) is
// checked by the sources when a CTA is opened.
std::string check_kernel_info(const KernelInfo& info);

// Floating-point (or integer) operations one warp's share of an MMA performs: 2*m*n*k for HMMA and UTCMMA (one
// thread issues the CTA's whole MMA), 2*m*n*k/4 for HGMMA (a warpgroup instruction issued by each of its four warps).
std::uint64_t mma_flops_per_warp(const WarpInst& inst) noexcept;

}  // namespace warpsim
