// Native trace format, version 1: writer and reader. The byte layout is specified in traces/FORMAT.md;
// the constants and encode/decode pairs below must stay in step with it.
#include "sim/trace/trace_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "sim/config/input_file.h"
#include "sim/core/error.h"

namespace warpsim {
namespace {

// ---- layout constants (FORMAT.md "File layout") ------------------------------------------------------------

using Bytes = std::vector<std::uint8_t>;

constexpr std::array<std::uint8_t, 8> kFileMagic = {0x89, 'W', 'S', 'T', 'R', '\r', '\n', 0x1a};
constexpr std::array<std::uint8_t, 8> kFooterMagic = {'W', 'S', 'T', 'R', 'I', 'N', 'D', 'X'};
constexpr std::size_t kHeaderSize = 16;
constexpr std::size_t kBlockHeaderSize = 24;
constexpr std::size_t kFooterSize = 32;
constexpr std::size_t kKernelEntrySize = 32;
constexpr std::size_t kCtaEntrySize = 16;
constexpr std::size_t kWarpEntrySize = 8;

enum class BlockTag : std::uint32_t {
  KernelInfo = 0x464e494b,  // "KINF" read as little-endian u32
  Cta = 0x42415443,         // "CTAB"
  Index = 0x58444e49,       // "INDX"
};

const char* tag_name(BlockTag tag) {
  switch (tag) {
    case BlockTag::KernelInfo: return "KINF";
    case BlockTag::Cta: return "CTAB";
    case BlockTag::Index: return "INDX";
  }
  return "?";
}

// Instruction flags byte (FORMAT.md "Instruction record").
constexpr std::uint8_t kFlagPc = 1u << 0;      // pc differs from previous pc + 16
constexpr std::uint8_t kFlagRegs = 1u << 1;    // register presence mask follows
constexpr std::uint8_t kFlagCounts = 1u << 2;  // num_dst/num_src byte follows (not implied by the mask)
constexpr std::uint8_t kFlagMask = 1u << 3;    // active_mask != 0xffffffff
constexpr std::uint8_t kFlagDType = 1u << 4;
constexpr std::uint8_t kFlagMemory = 1u << 5;
constexpr std::uint8_t kFlagMma = 1u << 6;
constexpr std::uint8_t kFlagAux = 1u << 7;

// Memory descriptor byte: space in bits 0-2, addr_mode in bits 3-4, then which optional fields follow.
constexpr std::uint8_t kMemStride = 1u << 5;
constexpr std::uint8_t kMemGroup = 1u << 6;
constexpr std::uint8_t kMemGroupStride = 1u << 7;

constexpr std::uint32_t kPcStep = 16;  // SASS instructions are 16 bytes apart since Volta
constexpr std::uint32_t kFullMask = 0xffffffffu;
constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();

// ---- fixed-width little-endian and varint primitives -----------------------------------------------------

void put_u16(Bytes& out, std::uint16_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_u32(Bytes& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_u64(Bytes& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void patch_u32(Bytes& out, std::size_t pos, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out[pos + i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint64_t get_le(const std::uint8_t* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}
std::uint16_t get_u16(const std::uint8_t* p) { return static_cast<std::uint16_t>(get_le(p, 2)); }
std::uint32_t get_u32(const std::uint8_t* p) { return static_cast<std::uint32_t>(get_le(p, 4)); }
std::uint64_t get_u64(const std::uint8_t* p) { return get_le(p, 8); }

void put_varint(Bytes& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}
// Zigzag maps small magnitudes of either sign to small unsigned values (0,-1,1,-2 -> 0,1,2,3).
std::uint64_t zigzag(std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);
  return (u << 1) ^ (0 - (u >> 63));
}
std::int64_t unzigzag(std::uint64_t u) { return static_cast<std::int64_t>((u >> 1) ^ (0 - (u & 1))); }
void put_zigzag(Bytes& out, std::int64_t v) { put_varint(out, zigzag(v)); }

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// ---- bounds-checked reading of a decompressed block ------------------------------------------------------

// Reads [pos, end) of a buffer; every read is checked, and failures name the place: `where` (file, kernel,
// CTA, warp), the instruction being decoded if any, and the byte offset within `region`.
class Cursor {
 public:
  static constexpr std::uint64_t kNoItem = std::numeric_limits<std::uint64_t>::max();

  Cursor(const std::uint8_t* data, std::size_t pos, std::size_t end, std::string where, const char* region)
      : data_(data), pos_(pos), end_(end), where_(std::move(where)), region_(region) {}

  std::size_t pos() const { return pos_; }
  std::size_t remaining() const { return end_ - pos_; }
  void set_item(std::uint64_t index) { item_ = index; }

  [[noreturn]] void fail(const std::string& what, std::size_t at) const {
    std::string msg = where_;
    if (item_ != kNoItem) msg += ", instruction " + std::to_string(item_);
    msg += " (byte " + std::to_string(at) + " of the " + region_ + "): " + what;
    throw TraceError(msg);
  }
  [[noreturn]] void fail(const std::string& what) const { fail(what, pos_); }

  std::uint8_t byte(const char* field) {
    if (pos_ >= end_) fail(std::string("data ends where ") + field + " was expected");
    return data_[pos_++];
  }
  std::uint32_t fixed_u32(const char* field) {
    if (remaining() < 4) fail(std::string("data ends inside ") + field + " (4 bytes expected)");
    const std::uint32_t v = get_u32(data_ + pos_);
    pos_ += 4;
    return v;
  }
  std::uint64_t varint(const char* field) {
    const std::size_t start = pos_;
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= end_) fail(std::string("varint ") + field + " runs past the end of the data", start);
      const std::uint8_t b = data_[pos_++];
      // The tenth byte may only contribute bit 63.
      if (shift == 63 && b > 1) fail(std::string("varint ") + field + " overflows 64 bits", start);
      v |= std::uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    fail(std::string("varint ") + field + " is longer than 10 bytes", start);
  }
  // A varint that must fit `max`, e.g. a u16 register number.
  std::uint64_t varint_max(const char* field, std::uint64_t max) {
    const std::size_t start = pos_;
    const std::uint64_t v = varint(field);
    if (v > max) fail(std::string(field) + " " + std::to_string(v) + " out of range (expected <= " +
                      std::to_string(max) + ")", start);
    return v;
  }
  std::int32_t zigzag_i32(const char* field) {
    const std::size_t start = pos_;
    const std::int64_t v = unzigzag(varint(field));
    if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max()) {
      fail(std::string(field) + " " + std::to_string(v) + " does not fit a signed 32-bit integer", start);
    }
    return static_cast<std::int32_t>(v);
  }
  std::string string(const char* field) {
    const std::size_t start = pos_;
    const std::uint64_t n = varint(field);
    if (n > remaining()) fail(std::string(field) + " of " + std::to_string(n) + " bytes runs past the end", start);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  const std::uint8_t* data_;
  std::size_t pos_;
  std::size_t end_;
  std::string where_;
  const char* region_;
  std::uint64_t item_ = kNoItem;
};

// ---- instruction records (FORMAT.md "Instruction record") -------------------------------------------------

// Per-warp context of the delta encodings; starts at zero at the beginning of every warp stream.
struct WarpCodecState {
  std::uint16_t minor = kTraceFormatMinor;  // the file's minor version (what the access byte holds)
  std::uint64_t expected_pc = 0;
  std::uint64_t prev_base = 0;
  bool exited = false;  // an EXIT was seen: the simulator ends the warp there, so nothing may follow it
};

constexpr const char* kAfterExit = "instruction after the warp's EXIT (EXIT ends a warp; nothing after it would run)";

std::uint8_t register_mask(const WarpInst& inst) {
  std::uint8_t mask = 0;
  for (int i = 0; i < kMaxDst; ++i) mask |= static_cast<std::uint8_t>((inst.dst[i] != kNoReg) << i);
  for (int i = 0; i < kMaxSrc; ++i) mask |= static_cast<std::uint8_t>((inst.src[i] != kNoReg) << (4 + i));
  return mask;
}
// Mask of the first n register slots.
std::uint8_t low_bits(unsigned n) { return static_cast<std::uint8_t>((1u << n) - 1); }

bool has_memory_fields(const WarpInst& i) {
  return i.space != MemSpace::None || i.addr_mode != AddrMode::None || i.access_bytes != 0 || i.group != 0 ||
         i.base != 0 || i.stride != 0 || i.group_stride != 0 || i.cache != CacheOp::Default;
}
// The memory section's access byte: bytes per lane in its low bits, the cache operator above them (from 1.5).
constexpr unsigned kAccessBytesBits = 5;
constexpr std::uint16_t kCacheOpMinor = 5;
constexpr std::uint16_t kSpinWaitMinor = 6;  // LDG's aux: the arrivals a spin-wait poll waits for (free before)
constexpr std::uint16_t kSharedClusterMinor = 8;  // LDS/STS's mma.m: the cluster CTA they access (free before)
static_assert(kMaxAccessBytes < (1u << kAccessBytesBits) && static_cast<unsigned>(CacheOp::Count) <= 8);

// Appends one record. Returns nullptr, or what makes the record unrepresentable.
const char* encode_inst(Bytes& out, const WarpInst& inst, const std::int32_t* deltas, WarpCodecState& st) {
  if (inst.op >= Opcode::Count) return "opcode out of range";
  if (inst.dtype > kLastDType) return "dtype out of range";
  if (inst.space > MemSpace::Const) return "memory space out of range";
  if (inst.addr_mode > AddrMode::Deltas) return "address mode out of range";
  if (inst.num_dst > kMaxDst || inst.num_src > kMaxSrc) return "more than 4 destination or source registers";
  if (inst.addr_mode == AddrMode::Deltas && deltas == nullptr) return "Deltas-mode record without lane offsets";
  if (inst.access_bytes >> kAccessBytesBits)
    return "access size above 31 bytes per lane (predicated off): format 1.5 stores it in 5 bits";

  put_varint(out, static_cast<std::uint64_t>(inst.op));
  const std::size_t flags_pos = out.size();
  out.push_back(0);
  std::uint8_t flags = 0;

  if (inst.pc != st.expected_pc) {
    flags |= kFlagPc;
    put_zigzag(out, static_cast<std::int64_t>(inst.pc) - static_cast<std::int64_t>(st.expected_pc));
  }
  st.expected_pc = std::uint64_t{inst.pc} + kPcStep;

  const std::uint8_t regs = register_mask(inst);
  if (regs != 0) {
    flags |= kFlagRegs;
    out.push_back(regs);
  }
  // The common case (slots 0..num-1 used, the rest kNoReg) needs no count byte.
  if ((regs & 0x0f) != low_bits(inst.num_dst) || (regs >> 4) != low_bits(inst.num_src)) {
    flags |= kFlagCounts;
    out.push_back(static_cast<std::uint8_t>(inst.num_dst | (inst.num_src << 4)));
  }
  for (int i = 0; i < kMaxDst; ++i)
    if (inst.dst[i] != kNoReg) put_varint(out, inst.dst[i]);
  for (int i = 0; i < kMaxSrc; ++i)
    if (inst.src[i] != kNoReg) put_varint(out, inst.src[i]);

  if (inst.active_mask != kFullMask) {
    flags |= kFlagMask;
    put_u32(out, inst.active_mask);
  }
  if (inst.dtype != DType::None) {
    flags |= kFlagDType;
    out.push_back(static_cast<std::uint8_t>(inst.dtype));
  }
  if (has_memory_fields(inst)) {
    flags |= kFlagMemory;
    std::uint8_t desc = static_cast<std::uint8_t>(static_cast<unsigned>(inst.space) |
                                                  (static_cast<unsigned>(inst.addr_mode) << 3));
    if (inst.stride != 0) desc |= kMemStride;
    if (inst.group != 0) desc |= kMemGroup;
    if (inst.group_stride != 0) desc |= kMemGroupStride;
    out.push_back(desc);
    // Bits 0-4: bytes per lane (at most 16), bits 5-7: the cache operator (1.5; 0 = default, as before).
    out.push_back(static_cast<std::uint8_t>(inst.access_bytes | static_cast<unsigned>(inst.cache) << kAccessBytesBits));
    // Bases of successive accesses are usually close: store the (wrapping) difference.
    put_zigzag(out, static_cast<std::int64_t>(inst.base - st.prev_base));
    st.prev_base = inst.base;
    if (inst.group != 0) out.push_back(inst.group);
    if (inst.stride != 0) put_zigzag(out, inst.stride);
    if (inst.group_stride != 0) put_zigzag(out, inst.group_stride);
    if (inst.addr_mode == AddrMode::Deltas)
      for (int lane = 0; lane < kWarpSize; ++lane) put_zigzag(out, deltas[lane]);
  }
  if (inst.mma.m != 0 || inst.mma.n != 0 || inst.mma.k != 0) {
    flags |= kFlagMma;
    put_varint(out, inst.mma.m);
    put_varint(out, inst.mma.n);
    put_varint(out, inst.mma.k);
  }
  if (inst.aux != 0) {
    flags |= kFlagAux;
    put_varint(out, inst.aux);
  }
  out[flags_pos] = flags;
  return nullptr;
}

// Decodes one record into `inst` (deltas left null) and, in Deltas mode, its offsets into `deltas`.
void decode_inst(Cursor& in, WarpInst& inst, std::array<std::int32_t, kWarpSize>& deltas, WarpCodecState& st) {
  inst = WarpInst{};
  inst.op = static_cast<Opcode>(
      in.varint_max("opcode", static_cast<std::uint64_t>(Opcode::Count) - 1));
  const std::uint8_t flags = in.byte("flags");

  std::int64_t pc = static_cast<std::int64_t>(st.expected_pc);
  if (flags & kFlagPc) {
    const std::size_t at = in.pos();
    pc += unzigzag(in.varint("pc delta"));  // |delta| < 2^63 and expected_pc <= 2^32+16: no overflow
    if (pc < 0 || pc > static_cast<std::int64_t>(kU32Max))
      in.fail("pc " + std::to_string(pc) + " out of the 32-bit range", at);
  }
  inst.pc = static_cast<std::uint32_t>(pc);
  st.expected_pc = std::uint64_t{inst.pc} + kPcStep;

  const std::uint8_t regs = (flags & kFlagRegs) ? in.byte("register mask") : 0;
  if (flags & kFlagCounts) {
    const std::size_t at = in.pos();
    const std::uint8_t counts = in.byte("register counts");
    inst.num_dst = counts & 0x0f;
    inst.num_src = counts >> 4;
    if (inst.num_dst > kMaxDst || inst.num_src > kMaxSrc)
      in.fail("register counts " + std::to_string(inst.num_dst) + "/" + std::to_string(inst.num_src) +
                  " out of range (expected at most " + std::to_string(kMaxDst) + "/" + std::to_string(kMaxSrc) + ")",
              at);
  } else {
    inst.num_dst = static_cast<std::uint8_t>(__builtin_popcount(regs & 0x0f));
    inst.num_src = static_cast<std::uint8_t>(__builtin_popcount(regs >> 4));
    if ((regs & 0x0f) != low_bits(inst.num_dst) || (regs >> 4) != low_bits(inst.num_src))
      in.fail("register mask " + std::to_string(regs) + " has gaps but no register count byte");
  }
  for (int i = 0; i < kMaxDst; ++i)
    if (regs & (1u << i)) inst.dst[i] = static_cast<std::uint16_t>(in.varint_max("register", 0xffff));
  for (int i = 0; i < kMaxSrc; ++i)
    if (regs & (1u << (4 + i))) inst.src[i] = static_cast<std::uint16_t>(in.varint_max("register", 0xffff));

  if (flags & kFlagMask) inst.active_mask = in.fixed_u32("active mask");
  if (flags & kFlagDType) {
    const std::size_t at = in.pos();
    const std::uint8_t t = in.byte("dtype");
    if (t > static_cast<std::uint8_t>(kLastDType))
      in.fail("dtype " + std::to_string(t) + " out of range (expected <= " +
                  std::to_string(static_cast<int>(kLastDType)) + ")", at);
    inst.dtype = static_cast<DType>(t);
  }
  if (flags & kFlagMemory) {
    const std::size_t at = in.pos();
    const std::uint8_t desc = in.byte("memory descriptor");
    const unsigned space = desc & 0x07;
    const unsigned mode = (desc >> 3) & 0x03;
    if (space > static_cast<unsigned>(MemSpace::Const))
      in.fail("memory space " + std::to_string(space) + " out of range (expected <= " +
                  std::to_string(static_cast<int>(MemSpace::Const)) + ")", at);
    inst.space = static_cast<MemSpace>(space);
    inst.addr_mode = static_cast<AddrMode>(mode);  // 2 bits: every value is a valid mode
    // Before 1.5 the whole byte is the access size (a record without active lanes could hold any); check_inst
    // judges both fields.
    const std::uint8_t access = in.byte("access size");
    const bool packed = st.minor >= kCacheOpMinor;
    inst.access_bytes = packed ? access & ((1u << kAccessBytesBits) - 1) : access;
    inst.cache = packed ? static_cast<CacheOp>(access >> kAccessBytesBits) : CacheOp::Default;
    inst.base = st.prev_base + static_cast<std::uint64_t>(unzigzag(in.varint("base address delta")));
    st.prev_base = inst.base;
    if (desc & kMemGroup) inst.group = in.byte("lane group");
    if (desc & kMemStride) inst.stride = in.zigzag_i32("stride");
    if (desc & kMemGroupStride) inst.group_stride = in.zigzag_i32("group stride");
    if (inst.addr_mode == AddrMode::Deltas)
      for (auto& d : deltas) d = in.zigzag_i32("lane delta");
  }
  if (flags & kFlagMma) {
    inst.mma.m = static_cast<std::uint16_t>(in.varint_max("mma m", 0xffff));
    inst.mma.n = static_cast<std::uint16_t>(in.varint_max("mma n", 0xffff));
    inst.mma.k = static_cast<std::uint16_t>(in.varint_max("mma k", 0xffff));
  }
  if (flags & kFlagAux) inst.aux = static_cast<std::uint32_t>(in.varint_max("aux", kU32Max));
  // Before 1.6 an LDG's aux meant nothing (writers were free to leave anything there): not a wait.
  if (inst.op == Opcode::LDG && st.minor < kSpinWaitMinor) inst.aux = 0;
  // Before 1.8 an LDS's or STS's mma.m meant nothing: its own shared memory.
  if ((inst.op == Opcode::LDS || inst.op == Opcode::STS) && st.minor < kSharedClusterMinor) inst.mma.m = 0;
}

// ---- kernel info payload (FORMAT.md "KINF block") ----------------------------------------------------------

void encode_kernel_info(Bytes& out, const KernelInfo& k) {
  put_varint(out, k.name.size());
  out.insert(out.end(), k.name.begin(), k.name.end());
  for (std::uint32_t v : {k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z, k.registers_per_thread,
                          k.shared_mem_bytes})
    put_varint(out, v);
  put_varint(out, k.target_arch.size());
  out.insert(out.end(), k.target_arch.begin(), k.target_arch.end());
  put_varint(out, k.flops);
  // 1.3: the thread-block cluster, written only when the kernel has one (a 1x1x1 kernel's bytes stay 1.2's).
  if (!(k.cluster == Dim3{}))
    for (std::uint32_t v : {k.cluster.x, k.cluster.y, k.cluster.z}) put_varint(out, v);
}

KernelInfo decode_kernel_info(Cursor& in) {
  KernelInfo k;
  k.name = in.string("kernel name");
  for (std::uint32_t* v : {&k.grid.x, &k.grid.y, &k.grid.z, &k.block.x, &k.block.y, &k.block.z,
                           &k.registers_per_thread, &k.shared_mem_bytes})
    *v = static_cast<std::uint32_t>(in.varint_max("kernel dimension or resource", kU32Max));
  k.target_arch = in.string("target arch");
  k.flops = in.varint("flops");
  if (in.remaining() > 0)  // 1.3: optional cluster dimensions (absent: no cluster, 1x1x1)
    for (std::uint32_t* v : {&k.cluster.x, &k.cluster.y, &k.cluster.z})
      *v = static_cast<std::uint32_t>(in.varint_max("cluster dimension", kU32Max));
  // Bytes after the known fields are ignored: later minor versions may append fields here.
  return k;
}

// ---- zstd ------------------------------------------------------------------------------------------------

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// A zstd block (128 KiB of output at most) takes at least 3 bytes, so a frame of n bytes cannot
// decompress to more than this: a cheap guard against allocating for a corrupt size field.
std::uint64_t max_decompressed_size(std::uint64_t stored) { return (stored / 3 + 1) * std::uint64_t{128 * 1024}; }

// ---- block header ----------------------------------------------------------------------------------------

struct BlockHeader {
  BlockTag tag{};
  std::uint32_t kernel = 0;
  std::uint64_t cta = 0;
  std::uint32_t stored_size = 0;
  std::uint32_t raw_size = 0;
};

void put_block_header(Bytes& out, const BlockHeader& h) {
  put_u32(out, static_cast<std::uint32_t>(h.tag));
  put_u32(out, h.kernel);
  put_u64(out, h.cta);
  put_u32(out, h.stored_size);
  put_u32(out, h.raw_size);
}

BlockHeader get_block_header(const std::uint8_t* p) {
  BlockHeader h;
  h.tag = static_cast<BlockTag>(get_u32(p));
  h.kernel = get_u32(p + 4);
  h.cta = get_u64(p + 8);
  h.stored_size = get_u32(p + 16);
  h.raw_size = get_u32(p + 20);
  return h;
}

std::string kernel_label(std::size_t index, const std::string& name) {
  return "kernel " + std::to_string(index) + (name.empty() ? "" : " (" + quoted(printable(name)) + ")");
}

}  // namespace

// ================================================================================================================
// Writer
// ================================================================================================================

struct TraceWriter::Impl {
  struct CtaEntry {
    std::uint64_t offset;
    std::uint32_t stored_size;
    std::uint32_t raw_size;
  };
  struct KernelEntry {
    std::uint64_t info_offset = 0;
    std::uint64_t instructions = 0;
    std::vector<CtaEntry> ctas;
  };

  std::string path;
  std::FILE* file = nullptr;
  std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx;
  bool closed = false;
  bool in_kernel = false;
  KernelInfo kernel;
  std::vector<KernelEntry> kernels;
  TraceWriteStats stats;
  // Reused between CTAs.
  Bytes block;
  Bytes packed;
  std::vector<WarpInst> batch;

  ~Impl() {
    if (file) std::fclose(file);
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError("cannot write trace file " + quoted(path) + ": " + what);
  }
  std::string where_cta() const {
    return kernel_label(kernels.size() - 1, kernel.name) + ", CTA " + std::to_string(kernels.back().ctas.size());
  }

  void write(const void* data, std::size_t n) {
    if (n == 0) return;  // data may be null then (an empty index)
    if (std::fwrite(data, 1, n, file) != n) fail(std::string("write failed: ") + std::strerror(errno));
    stats.file_bytes += n;
  }
  void write(const Bytes& b) { write(b.data(), b.size()); }

  // Compresses `raw` into one zstd frame and writes it as a block; returns where the block starts.
  std::uint64_t write_block(BlockTag tag, std::uint32_t kernel_index, std::uint64_t cta, const Bytes& raw,
                            std::uint32_t& stored_size) {
    if (raw.size() > kU32Max) fail(std::string(tag_name(tag)) + " block exceeds 4 GiB before compression");
    packed.resize(ZSTD_compressBound(raw.size()));
    const std::size_t n = ZSTD_compress2(cctx.get(), packed.data(), packed.size(), raw.data(), raw.size());
    if (ZSTD_isError(n)) fail(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
    if (n > kU32Max) fail(std::string(tag_name(tag)) + " block exceeds 4 GiB after compression");
    const std::uint64_t offset = stats.file_bytes;
    Bytes header;
    put_block_header(header, {tag, kernel_index, cta, static_cast<std::uint32_t>(n),
                              static_cast<std::uint32_t>(raw.size())});
    write(header);
    write(packed.data(), n);
    stored_size = static_cast<std::uint32_t>(n);
    return offset;
  }

  void require_open(const char* call) const {
    if (closed) fail(std::string(call) + " after close()");
  }
  void require_kernel(const char* call) const {
    require_open(call);
    if (!in_kernel) fail(std::string(call) + " outside begin_kernel()/end_kernel()");
  }

  // --- CTA block encoding: warp table first (patched as warps end), then the warps' records.
  void begin_cta(std::uint64_t num_warps) {
    require_kernel("add_cta()");
    if (kernels.back().ctas.size() >= kernel.grid.count())
      fail(kernel_label(kernels.size() - 1, kernel.name) + ": more CTAs added than its grid holds (" +
           std::to_string(kernel.grid.count()) + ")");
    if (num_warps != kernel.warps_per_cta())
      fail(where_cta() + ": " + std::to_string(num_warps) + " warps, but a block of " +
           std::to_string(kernel.block.count()) + " threads has " + std::to_string(kernel.warps_per_cta()));
    if (num_warps > (kU32Max - 4) / kWarpEntrySize) fail(where_cta() + ": too many warps");
    block.clear();
    put_u32(block, static_cast<std::uint32_t>(num_warps));
    block.resize(4 + num_warps * kWarpEntrySize, 0);
  }
  void begin_warp(std::uint32_t warp) {
    if (block.size() > kU32Max) fail(where_cta() + ": CTA block exceeds 4 GiB before compression");
    patch_u32(block, 4 + warp * kWarpEntrySize, static_cast<std::uint32_t>(block.size()));
  }
  void add_inst(std::uint32_t warp, std::uint64_t index, const WarpInst& inst, const std::int32_t* deltas,
                WarpCodecState& st) {
    auto where = [&] {
      return where_cta() + ", warp " + std::to_string(warp) + ", instruction " + std::to_string(index);
    };
    // Invalid records are refused here already, so that no reader ever meets one in a file of ours.
    WarpInst checked = inst;
    checked.deltas = deltas;
    const std::string invalid = check_inst(checked);
    if (!invalid.empty()) fail(where() + ": invalid instruction: " + invalid);
    if (st.exited) fail(where() + ": " + kAfterExit);
    st.exited = inst.op == Opcode::EXIT;
    if (const char* error = encode_inst(block, inst, deltas, st)) fail(where() + ": " + error);
  }
  void end_warp(std::uint32_t warp, std::uint64_t count) {
    if (count > kU32Max) fail(where_cta() + ", warp " + std::to_string(warp) + ": more than 2^32 instructions");
    patch_u32(block, 4 + warp * kWarpEntrySize + 4, static_cast<std::uint32_t>(count));
    stats.instructions += count;
    kernels.back().instructions += count;
    ++stats.warps;
  }
  void end_cta() {
    KernelEntry& k = kernels.back();
    const std::uint64_t cta = k.ctas.size();
    std::uint32_t stored = 0;
    const std::uint64_t offset =
        write_block(BlockTag::Cta, static_cast<std::uint32_t>(kernels.size() - 1), cta, block, stored);
    k.ctas.push_back({offset, stored, static_cast<std::uint32_t>(block.size())});
    stats.encoded_bytes += block.size();
    ++stats.ctas;
  }

  void finish() {
    closed = true;  // even if what follows fails: the destructor must not try again
    if (in_kernel) {
      std::fclose(file);  // leave a complete-looking prefix without footer, which readers reject
      file = nullptr;
      fail("close() while " + kernel_label(kernels.size() - 1, kernel.name) + " is still open (end_kernel() missing)");
    }
    // Index payload: kernel table, then each kernel's CTA table (offsets relative to the payload start).
    Bytes index;
    std::uint64_t cta_table = kernels.size() * kKernelEntrySize;
    for (const KernelEntry& k : kernels) {
      put_u64(index, k.info_offset);
      put_u64(index, cta_table);
      put_u64(index, k.ctas.size());
      put_u64(index, k.instructions);
      cta_table += k.ctas.size() * kCtaEntrySize;
    }
    for (const KernelEntry& k : kernels) {
      for (const CtaEntry& c : k.ctas) {
        put_u64(index, c.offset);
        put_u32(index, c.stored_size);
        put_u32(index, c.raw_size);
      }
    }
    if (index.size() > kU32Max) fail("index exceeds 4 GiB");
    const std::uint64_t index_offset = stats.file_bytes;
    Bytes tail;
    put_block_header(tail, {BlockTag::Index, static_cast<std::uint32_t>(kernels.size()), 0,
                            static_cast<std::uint32_t>(index.size()), static_cast<std::uint32_t>(index.size())});
    write(tail);
    write(index);
    tail.clear();
    put_u64(tail, index_offset);
    put_u64(tail, index.size());
    put_u32(tail, static_cast<std::uint32_t>(kernels.size()));
    put_u16(tail, kTraceFormatMajor);
    put_u16(tail, kTraceFormatMinor);
    tail.insert(tail.end(), kFooterMagic.begin(), kFooterMagic.end());
    write(tail);
    std::FILE* f = file;
    file = nullptr;
    if (std::fclose(f) != 0) fail(std::string("close failed: ") + std::strerror(errno));
  }
};

TraceWriter::TraceWriter(const std::string& path, int level) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
    impl_->fail("compression level " + std::to_string(level) + " out of range [" + std::to_string(ZSTD_minCLevel()) +
                ", " + std::to_string(ZSTD_maxCLevel()) + "]");
  impl_->cctx.reset(ZSTD_createCCtx());
  if (!impl_->cctx) impl_->fail("cannot allocate a zstd context");
  ZSTD_CCtx_setParameter(impl_->cctx.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(impl_->cctx.get(), ZSTD_c_checksumFlag, 1);  // detects corrupted blocks on read
  impl_->file = std::fopen(path.c_str(), "wb");
  if (!impl_->file) throw TraceError("cannot create trace file " + quoted(path) + ": " + std::strerror(errno));
  Bytes header(kFileMagic.begin(), kFileMagic.end());
  put_u16(header, kTraceFormatMajor);
  put_u16(header, kTraceFormatMinor);
  put_u32(header, 0);  // reserved flags
  impl_->write(header);
}

TraceWriter::~TraceWriter() {
  if (!impl_->closed) {
    try {
      impl_->finish();
    } catch (...) {
      // Destructors must not throw; the file is left without a footer, so readers reject it.
    }
  }
}

void TraceWriter::begin_kernel(const KernelInfo& info) {
  Impl& w = *impl_;
  w.require_open("begin_kernel()");
  if (w.in_kernel) w.fail("begin_kernel(" + quoted(info.name) + ") while " +
                          kernel_label(w.kernels.size() - 1, w.kernel.name) + " is still open");
  if (w.kernels.size() >= kU32Max) w.fail("too many kernels");
  const std::string invalid = check_kernel_info(info);
  if (!invalid.empty())
    w.fail(kernel_label(w.kernels.size(), info.name) + ": invalid kernel info: " + invalid);
  w.kernel = info;
  w.kernels.emplace_back();
  w.in_kernel = true;
  w.block.clear();
  encode_kernel_info(w.block, info);
  std::uint32_t stored = 0;
  w.kernels.back().info_offset =
      w.write_block(BlockTag::KernelInfo, static_cast<std::uint32_t>(w.kernels.size() - 1), 0, w.block, stored);
  ++w.stats.kernels;
}

void TraceWriter::add_cta(const std::vector<InMemoryKernel::Warp>& warps) {
  Impl& w = *impl_;
  w.begin_cta(warps.size());
  for (std::uint32_t warp = 0; warp < warps.size(); ++warp) {
    const InMemoryKernel::Warp& src = warps[warp];
    WarpCodecState st;
    std::size_t next_deltas = 0;
    w.begin_warp(warp);
    for (std::size_t i = 0; i < src.insts.size(); ++i) {
      const WarpInst& inst = src.insts[i];
      const std::int32_t* deltas = nullptr;
      if (inst.addr_mode == AddrMode::Deltas && next_deltas < src.lane_deltas.size())
        deltas = src.lane_deltas[next_deltas++].data();
      w.add_inst(warp, i, inst, deltas, st);  // a missing lane_deltas entry is reported there
    }
    w.end_warp(warp, src.insts.size());
  }
  w.end_cta();
}

void TraceWriter::add_cta(CtaSource& cta) {
  Impl& w = *impl_;
  const std::uint32_t num_warps = cta.num_warps();
  w.begin_cta(num_warps);
  constexpr std::size_t kBatch = 256;
  w.batch.resize(kBatch);
  for (std::uint32_t warp = 0; warp < num_warps; ++warp) {
    std::unique_ptr<WarpStream> stream = cta.open_warp(warp);
    WarpCodecState st;
    std::uint64_t count = 0;
    w.begin_warp(warp);
    while (const std::size_t n = stream->read(w.batch.data(), kBatch)) {
      for (std::size_t i = 0; i < n; ++i, ++count) w.add_inst(warp, count, w.batch[i], w.batch[i].deltas, st);
    }
    w.end_warp(warp, count);
  }
  w.end_cta();
}

void TraceWriter::end_kernel() {
  Impl& w = *impl_;
  w.require_kernel("end_kernel()");
  const std::uint64_t added = w.kernels.back().ctas.size();
  if (added != w.kernel.grid.count())
    w.fail(kernel_label(w.kernels.size() - 1, w.kernel.name) + ": " + std::to_string(added) +
           " CTAs added but its grid holds " + std::to_string(w.kernel.grid.count()));
  w.in_kernel = false;
}

void TraceWriter::close() {
  if (!impl_->closed) impl_->finish();
}

const TraceWriteStats& TraceWriter::stats() const { return impl_->stats; }

TraceWriteStats write_trace(const std::string& path, TraceSource& source, int level) {
  TraceWriter writer(path, level);
  for (std::size_t k = 0; k < source.num_kernels(); ++k) {
    std::unique_ptr<KernelSource> kernel = source.open_kernel(k);
    writer.begin_kernel(kernel->info());
    const std::uint64_t num_ctas = kernel->info().grid.count();
    for (std::uint64_t c = 0; c < num_ctas; ++c) {
      std::unique_ptr<CtaSource> cta = kernel->open_cta(c);
      writer.add_cta(*cta);
    }
    writer.end_kernel();
  }
  writer.close();
  return writer.stats();
}

// ================================================================================================================
// Reader
// ================================================================================================================

struct detail::NativeTraceFile {
  struct Kernel {
    std::uint64_t info_offset = 0;
    std::uint64_t cta_table = 0;  // absolute file offset of the kernel's CTA table
    std::uint64_t num_ctas = 0;
    std::uint64_t instructions = 0;
  };

  std::string path;
  int fd = -1;
  std::uint64_t size = 0;
  std::uint16_t minor = 0;
  std::uint64_t index_offset = 0;  // where the INDX block header starts; every other block lies before it
  std::vector<Kernel> kernels;

  ~NativeTraceFile() {
    if (fd >= 0) ::close(fd);
  }

  std::string prefix() const { return "trace file " + quoted(path) + ": "; }
  [[noreturn]] void fail(const std::string& what) const { throw TraceError(prefix() + what); }

  void read_at(std::uint64_t offset, void* dst, std::size_t n, const std::string& what) const {
    if (offset > size || n > size - offset)
      fail(what + ": " + std::to_string(n) + " bytes at byte " + std::to_string(offset) +
           " run past the end of the file (" + std::to_string(size) + " bytes; truncated?)");
    auto* out = static_cast<std::uint8_t*>(dst);
    while (n > 0) {
      const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0)
        fail(what + ": read at byte " + std::to_string(offset) + " failed: " +
             (got < 0 ? std::strerror(errno) : "unexpected end of file"));
      out += got;
      offset += static_cast<std::uint64_t>(got);
      n -= static_cast<std::size_t>(got);
    }
  }

  // Reads the block at `offset`, checks its header against what the index says it is, and returns the
  // decompressed payload. `expected_stored`/`expected_raw` of 0 mean "not known from the index".
  Bytes read_block(std::uint64_t offset, BlockTag tag, std::uint32_t kernel, std::uint64_t cta,
                   std::uint32_t expected_stored, std::uint32_t expected_raw, ZSTD_DCtx* dctx,
                   const std::string& what) const {
    const std::string at = what + " (block at byte " + std::to_string(offset) + ")";
    if (offset < kHeaderSize || offset > index_offset || index_offset - offset < kBlockHeaderSize)
      fail(at + ": offset outside the data area [" + std::to_string(kHeaderSize) + ", " +
           std::to_string(index_offset) + ")");
    std::array<std::uint8_t, kBlockHeaderSize> raw_header;
    read_at(offset, raw_header.data(), raw_header.size(), at);
    const BlockHeader h = get_block_header(raw_header.data());
    if (h.tag != tag || h.kernel != kernel || h.cta != cta)
      fail(at + ": header does not match the index (expected a " + tag_name(tag) + " block of kernel " +
           std::to_string(kernel) + (tag == BlockTag::Cta ? " CTA " + std::to_string(cta) : std::string()) + ")");
    if ((expected_stored != 0 && h.stored_size != expected_stored) ||
        (expected_raw != 0 && h.raw_size != expected_raw))
      fail(at + ": block sizes " + std::to_string(h.stored_size) + "/" + std::to_string(h.raw_size) +
           " differ from the index (" + std::to_string(expected_stored) + "/" + std::to_string(expected_raw) + ")");
    const std::uint64_t payload = offset + kBlockHeaderSize;
    if (h.stored_size > index_offset - payload)
      fail(at + ": compressed size " + std::to_string(h.stored_size) + " runs past the data area");
    if (h.raw_size > max_decompressed_size(h.stored_size))
      fail(at + ": decompressed size " + std::to_string(h.raw_size) + " impossible for " +
           std::to_string(h.stored_size) + " compressed bytes");
    Bytes packed(h.stored_size);
    read_at(payload, packed.data(), packed.size(), at);
    const unsigned long long frame_size = ZSTD_getFrameContentSize(packed.data(), packed.size());
    if (frame_size != h.raw_size || ZSTD_findFrameCompressedSize(packed.data(), packed.size()) != packed.size())
      fail(at + ": not a single zstd frame of " + std::to_string(h.raw_size) + " bytes");
    Bytes raw(h.raw_size);
    const std::size_t n = ZSTD_decompressDCtx(dctx, raw.data(), raw.size(), packed.data(), packed.size());
    if (ZSTD_isError(n)) fail(at + ": corrupt zstd frame: " + ZSTD_getErrorName(n));
    if (n != raw.size())
      fail(at + ": decompressed to " + std::to_string(n) + " bytes, expected " + std::to_string(raw.size()));
    return raw;
  }
};

namespace {

using SharedBytes = std::shared_ptr<const Bytes>;

class FileWarpStream final : public WarpStream {
 public:
  FileWarpStream(SharedBytes block, std::size_t begin, std::size_t end, std::uint32_t count, std::uint16_t minor,
                 std::string where)
      : block_(std::move(block)), in_(block_->data(), begin, end, std::move(where), "decompressed CTA block"),
        remaining_(count) {
    state_.minor = minor;
  }

  std::size_t read(WarpInst* out, std::size_t max) override {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(max, remaining_));
    deltas_.clear();  // invalidates the previous batch's pointers, as the interface allows
    std::array<std::int32_t, kWarpSize> lanes{};
    for (std::size_t i = 0; i < n; ++i) {
      in_.set_item(next_index_);
      const std::size_t at = in_.pos();
      decode_inst(in_, out[i], lanes, state_);
      if (out[i].addr_mode == AddrMode::Deltas) {
        deltas_.insert(deltas_.end(), lanes.begin(), lanes.end());
        out[i].deltas = lanes.data();  // for check_inst only; the final pointer is assigned below
      }
      const std::string error = check_inst(out[i]);
      if (!error.empty()) in_.fail("invalid instruction: " + error, at);
      if (state_.exited) in_.fail(kAfterExit, at);
      state_.exited = out[i].op == Opcode::EXIT;
      out[i].deltas = nullptr;
      ++next_index_;
    }
    remaining_ -= n;
    if (remaining_ == 0 && in_.remaining() != 0) {
      in_.set_item(Cursor::kNoItem);
      in_.fail(std::to_string(in_.remaining()) + " bytes left after the warp's last instruction");
    }
    // Pointers are assigned only now: deltas_ may have reallocated while the batch grew.
    std::size_t next = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i].addr_mode != AddrMode::Deltas) continue;
      out[i].deltas = deltas_.data() + next;
      next += kWarpSize;
    }
    return n;
  }

 private:
  SharedBytes block_;  // keeps the CTA's bytes alive even if the CtaSource goes first
  Cursor in_;
  std::uint64_t remaining_;
  std::uint64_t next_index_ = 0;
  WarpCodecState state_;
  std::vector<std::int32_t> deltas_;
};

class FileCtaSource final : public CtaSource {
 public:
  struct Warp {
    std::uint32_t begin, end, count;
  };
  FileCtaSource(SharedBytes block, std::vector<Warp> warps, std::uint16_t minor, std::string where)
      : block_(std::move(block)), warps_(std::move(warps)), minor_(minor), where_(std::move(where)) {}

  std::uint32_t num_warps() const override { return static_cast<std::uint32_t>(warps_.size()); }
  std::unique_ptr<WarpStream> open_warp(std::uint32_t warp) override {
    if (warp >= warps_.size())
      throw TraceError(where_ + ": warp " + std::to_string(warp) + " out of range (CTA has " +
                       std::to_string(warps_.size()) + " warps)");
    const Warp& w = warps_[warp];
    return std::make_unique<FileWarpStream>(block_, w.begin, w.end, w.count, minor_,
                                            where_ + ", warp " + std::to_string(warp));
  }

 private:
  SharedBytes block_;
  std::vector<Warp> warps_;
  std::uint16_t minor_;
  std::string where_;
};

class FileKernelSource final : public KernelSource {
 public:
  using File = detail::NativeTraceFile;

  FileKernelSource(std::shared_ptr<const File> file, std::uint32_t index)
      : file_(std::move(file)), index_(index), dctx_(ZSTD_createDCtx()) {
    if (!dctx_) file_->fail("cannot allocate a zstd context");
    const File::Kernel& k = file_->kernels[index_];
    const std::string what = kernel_label(index_, "") + " info";
    const Bytes raw = file_->read_block(k.info_offset, BlockTag::KernelInfo, index_, 0, 0, 0, dctx_.get(), what);
    Cursor in(raw.data(), 0, raw.size(), file_->prefix() + what, "decompressed kernel info block");
    info_ = decode_kernel_info(in);
    where_ = file_->prefix() + kernel_label(index_, info_.name);
    const std::string error = check_kernel_info(info_);
    if (!error.empty()) file_->fail(kernel_label(index_, info_.name) + ": invalid kernel info: " + error);
    if (info_.grid.count() != k.num_ctas)
      file_->fail(kernel_label(index_, info_.name) + ": grid of " + std::to_string(info_.grid.count()) +
                  " CTAs but the index lists " + std::to_string(k.num_ctas));
  }

  const KernelInfo& info() const override { return info_; }

  std::unique_ptr<CtaSource> open_cta(std::uint64_t cta_id) override {
    const File::Kernel& k = file_->kernels[index_];
    if (cta_id >= k.num_ctas)
      throw TraceError(where_ + ": CTA " + std::to_string(cta_id) + " out of range (grid has " +
                       std::to_string(k.num_ctas) + " CTAs)");
    const std::string cta_where = where_ + ", CTA " + std::to_string(cta_id);
    const std::string what = kernel_label(index_, info_.name) + ", CTA " + std::to_string(cta_id);

    std::array<std::uint8_t, kCtaEntrySize> entry;
    file_->read_at(k.cta_table + cta_id * kCtaEntrySize, entry.data(), entry.size(), what + " index entry");
    const std::uint64_t offset = get_u64(entry.data());
    const std::uint32_t stored = get_u32(entry.data() + 8);
    const std::uint32_t raw_size = get_u32(entry.data() + 12);
    auto block = std::make_shared<const Bytes>(
        file_->read_block(offset, BlockTag::Cta, index_, cta_id, stored, raw_size, dctx_.get(), what));

    // Warp table: count, then (offset, instruction count) per warp; warp w's records span up to the next
    // warp's offset (the last one to the block's end).
    const Bytes& b = *block;
    Cursor in(b.data(), 0, b.size(), cta_where, "decompressed CTA block");
    const std::uint32_t num_warps = in.fixed_u32("warp count");
    if (num_warps > in.remaining() / kWarpEntrySize)
      in.fail("warp table of " + std::to_string(num_warps) + " entries does not fit the " +
              std::to_string(b.size()) + "-byte block", 0);
    const std::size_t table_end = 4 + std::size_t{num_warps} * kWarpEntrySize;
    std::vector<FileCtaSource::Warp> warps(num_warps);
    for (std::uint32_t w = 0; w < num_warps; ++w) {
      warps[w].begin = in.fixed_u32("warp offset");
      warps[w].count = in.fixed_u32("warp instruction count");
    }
    for (std::uint32_t w = 0; w < num_warps; ++w) {
      const std::uint32_t begin = warps[w].begin;
      const std::uint64_t end = w + 1 < num_warps ? warps[w + 1].begin : b.size();
      const std::uint64_t expected_min = w == 0 ? table_end : warps[w - 1].begin;
      if ((w == 0 && begin != table_end) || begin < expected_min || begin > end || end > b.size())
        in.fail("warp " + std::to_string(w) + " data offset " + std::to_string(begin) +
                    " inconsistent (expected offsets ascending from " + std::to_string(table_end) + " to " +
                    std::to_string(b.size()) + ")",
                4 + std::size_t{w} * kWarpEntrySize);
      // Every record takes at least two bytes (opcode and flags).
      if (warps[w].count > (end - begin) / 2)
        in.fail("warp " + std::to_string(w) + " claims " + std::to_string(warps[w].count) +
                    " instructions in " + std::to_string(end - begin) + " bytes",
                4 + std::size_t{w} * kWarpEntrySize + 4);
      warps[w].end = static_cast<std::uint32_t>(end);
    }
    if (num_warps != info_.warps_per_cta())
      in.fail(std::to_string(num_warps) + " warps, but a block of " + std::to_string(info_.block.count()) +
                  " threads has " + std::to_string(info_.warps_per_cta()),
              0);
    return std::make_unique<FileCtaSource>(std::move(block), std::move(warps), file_->minor, cta_where);
  }

 private:
  std::shared_ptr<const File> file_;
  std::uint32_t index_;
  std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx_;
  KernelInfo info_;
  std::string where_;
};

}  // namespace

TraceFileReader::TraceFileReader(const std::string& path) : file_(std::make_shared<detail::NativeTraceFile>()) {
  detail::NativeTraceFile& f = *file_;
  f.path = path;
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the check below then refuses it.
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd < 0) throw TraceError("cannot open trace file " + quoted(path) + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) f.fail(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) f.fail("not a regular file");
  f.size = static_cast<std::uint64_t>(st.st_size);

  // Header.
  std::array<std::uint8_t, kHeaderSize> header;
  f.read_at(0, header.data(), header.size(), "file header");
  if (!std::equal(kFileMagic.begin(), kFileMagic.end(), header.begin()))
    f.fail("not a warpsim native trace (bad magic at byte 0)");
  const std::uint16_t major = get_u16(header.data() + 8);
  f.minor = get_u16(header.data() + 10);
  if (major != kTraceFormatMajor)
    f.fail("unsupported trace format version " + std::to_string(major) + "." + std::to_string(f.minor) +
           " (this build reads major version " + std::to_string(kTraceFormatMajor) + ")");

  // Footer: the fixed-size tail that locates the index.
  if (f.size < kHeaderSize + kBlockHeaderSize + kFooterSize)
    f.fail("file of " + std::to_string(f.size) + " bytes is too short to hold the index and footer (truncated?)");
  const std::uint64_t footer_offset = f.size - kFooterSize;
  std::array<std::uint8_t, kFooterSize> footer;
  f.read_at(footer_offset, footer.data(), footer.size(), "footer");
  if (!std::equal(kFooterMagic.begin(), kFooterMagic.end(), footer.begin() + 24))
    f.fail("no footer magic at byte " + std::to_string(footer_offset + 24) +
           " (file truncated, or its writer was not closed)");
  f.index_offset = get_u64(footer.data());
  const std::uint64_t index_size = get_u64(footer.data() + 8);
  const std::uint32_t num_kernels = get_u32(footer.data() + 16);
  if (get_u16(footer.data() + 20) != major || get_u16(footer.data() + 22) != f.minor)
    f.fail("footer version differs from the header version");
  // The index block must end exactly where the footer starts.
  if (f.index_offset < kHeaderSize || f.index_offset > footer_offset ||
      footer_offset - f.index_offset < kBlockHeaderSize ||
      footer_offset - f.index_offset - kBlockHeaderSize != index_size)
    f.fail("footer points to an index at byte " + std::to_string(f.index_offset) + " of " +
           std::to_string(index_size) + " bytes, expected it to end at the footer (byte " +
           std::to_string(footer_offset) + ")");
  std::array<std::uint8_t, kBlockHeaderSize> raw_index_header;
  f.read_at(f.index_offset, raw_index_header.data(), raw_index_header.size(), "index block header");
  const BlockHeader ih = get_block_header(raw_index_header.data());
  if (ih.tag != BlockTag::Index || ih.kernel != num_kernels || ih.stored_size != index_size ||
      ih.raw_size != index_size)
    f.fail("index block header at byte " + std::to_string(f.index_offset) + " does not match the footer");

  // Kernel table.
  const std::uint64_t payload = f.index_offset + kBlockHeaderSize;
  if (num_kernels > index_size / kKernelEntrySize)
    f.fail("kernel table of " + std::to_string(num_kernels) + " entries exceeds the " + std::to_string(index_size) +
           "-byte index");
  Bytes table(std::size_t{num_kernels} * kKernelEntrySize);
  f.read_at(payload, table.data(), table.size(), "kernel table");
  f.kernels.resize(num_kernels);
  for (std::uint32_t i = 0; i < num_kernels; ++i) {
    const std::uint8_t* e = table.data() + std::size_t{i} * kKernelEntrySize;
    detail::NativeTraceFile::Kernel& k = f.kernels[i];
    k.info_offset = get_u64(e);
    const std::uint64_t cta_table = get_u64(e + 8);
    k.num_ctas = get_u64(e + 16);
    k.instructions = get_u64(e + 24);
    if (cta_table < table.size() || cta_table > index_size || k.num_ctas > (index_size - cta_table) / kCtaEntrySize)
      f.fail("index entry of kernel " + std::to_string(i) + " (byte " +
             std::to_string(payload + std::size_t{i} * kKernelEntrySize) + "): CTA table of " +
             std::to_string(k.num_ctas) + " entries at index offset " + std::to_string(cta_table) +
             " lies outside the " + std::to_string(index_size) + "-byte index");
    k.cta_table = payload + cta_table;
    // info_offset is checked when the kernel is opened (read_block).
  }
}

TraceFileReader::~TraceFileReader() = default;

std::size_t TraceFileReader::num_kernels() const { return file_->kernels.size(); }

std::unique_ptr<KernelSource> TraceFileReader::open_kernel(std::size_t index) {
  if (index >= file_->kernels.size())
    file_->fail("kernel " + std::to_string(index) + " out of range (file has " +
                std::to_string(file_->kernels.size()) + " kernels)");
  return std::make_unique<FileKernelSource>(file_, static_cast<std::uint32_t>(index));
}

std::string TraceFileReader::description() const {
  return "trace file " + quoted(file_->path) + " (native format " + std::to_string(kTraceFormatMajor) + "." +
         std::to_string(file_->minor) + ", " + std::to_string(file_->kernels.size()) + " kernels)";
}

const std::string& TraceFileReader::path() const { return file_->path; }

std::uint64_t TraceFileReader::kernel_cta_count(std::size_t index) const {
  if (index >= file_->kernels.size()) file_->fail("kernel " + std::to_string(index) + " out of range");
  return file_->kernels[index].num_ctas;
}

std::uint64_t TraceFileReader::kernel_instruction_count(std::size_t index) const {
  if (index >= file_->kernels.size()) file_->fail("kernel " + std::to_string(index) + " out of range");
  return file_->kernels[index].instructions;
}

bool is_native_trace(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  std::array<std::uint8_t, kFileMagic.size()> magic{};
  const bool ok = std::fread(magic.data(), 1, magic.size(), f) == magic.size() && magic == kFileMagic;
  std::fclose(f);
  return ok;
}

}  // namespace warpsim
