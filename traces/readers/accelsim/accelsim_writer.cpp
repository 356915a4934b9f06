#include "traces/readers/accelsim/accelsim_writer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "sim/core/error.h"

namespace warpsim::accelsim {

namespace fs = std::filesystem;

namespace {

std::string width_suffix(unsigned bytes) {
  switch (bytes) {
    case 1: return ".U8";
    case 2: return ".U16";
    case 8: return ".64";
    case 16: return ".128";
    default: return "";  // 4 bytes: Accel-Sim's default width
  }
}

std::string mma_shape(const MmaShape& s) {
  // SASS spells mma.sync shapes as digits (HMMA.16816), warpgroup shapes as 64xNxK.
  static const std::pair<MmaShape, const char*> kCompact[] = {
      {{8, 8, 4}, "884"},     {{16, 8, 4}, "1684"},   {{16, 8, 8}, "1688"},       {{16, 8, 16}, "16816"},
      {{16, 8, 32}, "16832"}, {{16, 8, 64}, "16864"}, {{16, 8, 128}, "168128"},   {{16, 8, 256}, "168256"},
      {{8, 8, 16}, "8816"},   {{8, 8, 32}, "8832"},   {{8, 8, 128}, "88128"},
  };
  for (const auto& [shape, name] : kCompact)
    if (shape.m == s.m && shape.n == s.n && shape.k == s.k) return name;
  return fmt::format("{}x{}x{}", s.m, s.n, s.k);
}

const char* mma_type_name(DType t) {
  switch (t) {
    case DType::BF16: return "BF16";
    case DType::TF32: return "TF32";
    case DType::FP8: return "E4M3";
    case DType::FP4: return "E2M1";
    case DType::I8: return "S8";
    case DType::F64: return "F64";
    default: return "F16";
  }
}

// The SASS modifier that spells a cache operator (the reader's cache_op_of_modifiers reads it back).
const char* cache_op_modifier(CacheOp op) {
  switch (op) {
    case CacheOp::EvictFirst: return ".EF";
    case CacheOp::EvictLast: return ".EL";
    case CacheOp::NoAllocate: return ".NA";
    case CacheOp::Bypass: return ".STRONG.GPU";
    default: return "";
  }
}

}  // namespace

std::string sass_opcode_of(const WarpInst& in) {
  const std::string w = width_suffix(in.access_bytes);
  switch (in.op) {
    case Opcode::LDG: return "LDG.E" + std::string(cache_op_modifier(in.cache)) + w;
    case Opcode::STG: return "STG.E" + std::string(cache_op_modifier(in.cache)) + w;
    case Opcode::LDL: return "LDL" + w;
    case Opcode::STL: return "STL" + w;
    case Opcode::LDS: return "LDS" + w;
    case Opcode::STS: return "STS" + w;
    case Opcode::ATOMG: return "ATOMG.E.ADD" + w;
    case Opcode::RED: return "RED.E.ADD" + w;
    case Opcode::LDGSTS: return "LDGSTS.E.BYPASS" + w;
    case Opcode::LDSM: return std::string("LDSM.16.M88.") + (in.num_dst == 1 ? "1" : in.num_dst == 2 ? "2" : "4");
    case Opcode::HMMA:
      if (in.dtype == DType::F64) return "DMMA." + mma_shape(in.mma) + ".F64";
      return std::string(in.dtype == DType::I8 ? "IMMA." : "HMMA.") + mma_shape(in.mma) +
             (in.dtype == DType::I8 ? ".S32." : ".F32.") + mma_type_name(in.dtype) + (in.aux & kMmaSparse ? ".SP" : "");
    case Opcode::HGMMA:
      return "HGMMA." + mma_shape(in.mma) + ".F32." + mma_type_name(in.dtype) + (in.aux & kMmaSparse ? ".SP" : "");
    case Opcode::UTCMMA: {  // SASS names tcgen05.mma by its kind: f16/bf16/tf32 H, fp8 Q, fp4 O, int8 I
      const char* kind = in.dtype == DType::FP8 ? "UTCQMMA." : in.dtype == DType::FP4 ? "UTCOMMA." : in.dtype == DType::I8 ? "UTCIMMA." : "UTCHMMA.";
      return kind + mma_shape(in.mma) + "." + std::string(mma_type_name(in.dtype)) + (in.aux & kMmaSparse ? ".SP" : "");
    }
    case Opcode::UTCBAR: return "UTCBAR";
    case Opcode::LDTM: return "LDTM.16dp32bit.x" + std::to_string(in.aux);
    case Opcode::BAR: return "BAR.SYNC";
    case Opcode::BAR_ARV: return "BAR.ARV";
    case Opcode::DEPBAR: return "DEPBAR.LE";
    case Opcode::SHFL: return "SHFL.IDX";
    case Opcode::WARPGROUP_ARRIVE: return "WARPGROUP.ARRIVE";
    case Opcode::WARPGROUP_COMMIT: return "WARPGROUP.COMMIT";
    case Opcode::WARPGROUP_DEPBAR: return "WARPGROUP.DEPBAR.LE";
    case Opcode::UTMALDG: return "UTMALDG.2D";
    case Opcode::SYNCS_ARRIVE_TRANS64: return "SYNCS.ARRIVE.TRANS64.A1T0";
    case Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT: return "SYNCS.PHASECHK.TRANS64.TRYWAIT";
    case Opcode::MBARRIER_INIT: return "SYNCS.EXCH.64";
    case Opcode::LDC: return "LDC" + w;
    default: return std::string(opcode_info(in.op).name);
  }
}

namespace {

int binary_version_of(const KernelInfo& info) {
  // "sm_80", "sm_90a" -> 80, 90
  const std::string& a = info.target_arch;
  int v = 0;
  std::size_t i = 3;
  if (a.rfind("sm_", 0) == 0)
    for (; i < a.size() && a[i] >= '0' && a[i] <= '9'; ++i) v = v * 10 + (a[i] - '0');
  if (a.rfind("sm_", 0) != 0 || i == 3 || v <= 0)
    throw InputError(fmt::format("kernel '{}': target_arch '{}' is not sm_NN; an Accel-Sim trace needs the binary version",
                                 info.name, a));
  return v;
}

void write_inst(std::string& out, const WarpInst& in) {
  fmt::format_to(std::back_inserter(out), "{:04x} {:08x} ", in.pc, in.active_mask);
  // The tracer records one destination register (MAX_DST = 1): the first.
  if (in.num_dst > 0) fmt::format_to(std::back_inserter(out), "1 R{} ", in.dst[0]);
  else out += "0 ";
  out += sass_opcode_of(in);
  fmt::format_to(std::back_inserter(out), " {}", unsigned{in.num_src});
  for (int i = 0; i < in.num_src; ++i) fmt::format_to(std::back_inserter(out), " R{}", in.src[i]);
  // Memory: the tracer's address compression, 1 (base+stride over contiguous active lanes) when it fits,
  // otherwise 2 (first active lane's address, then one delta per further active lane).
  const bool memory = in.space != MemSpace::None && in.op != Opcode::LDC && in.op != Opcode::UTMALDG;
  if (!memory) {
    out += " 0";
  } else if (in.active_mask == 0 || in.addr_mode == AddrMode::None) {
    fmt::format_to(std::back_inserter(out), " {} 1 0x0 0", unsigned{in.access_bytes});
  } else {
    int first = -1, last = -1;
    for (int l = 0; l < kWarpSize; ++l)
      if (in.active_mask >> l & 1u) {
        if (first < 0) first = l;
        last = l;
      }
    const bool contiguous = __builtin_popcount(in.active_mask) == last - first + 1;
    std::int64_t stride = 0;
    bool strided = contiguous;
    if (first < last) {
      stride = static_cast<std::int64_t>(in.lane_address(first + 1) - in.lane_address(first));
      for (int l = first + 1; strided && l <= last; ++l)
        strided = static_cast<std::int64_t>(in.lane_address(l) - in.lane_address(l - 1)) == stride;
    }
    if (strided && stride >= INT32_MIN && stride <= INT32_MAX) {
      fmt::format_to(std::back_inserter(out), " {} 1 {:#x} {}", unsigned{in.access_bytes}, in.lane_address(first), stride);
    } else {
      fmt::format_to(std::back_inserter(out), " {} 2 {:#x}", unsigned{in.access_bytes}, in.lane_address(first));
      std::uint64_t prev = in.lane_address(first);
      for (int l = first + 1; l < kWarpSize; ++l) {
        if (!(in.active_mask >> l & 1u)) continue;
        fmt::format_to(std::back_inserter(out), " {}", static_cast<std::int64_t>(in.lane_address(l) - prev));
        prev = in.lane_address(l);
      }
    }
  }
  // Version 5's immediate: a barrier id or a group count where the reader takes one back. A barrier with a thread
  // count gets the count, as the tracer writes it (its last immediate operand); its id is not carried.
  const bool has_immediate = in.op == Opcode::BAR || in.op == Opcode::DEPBAR || in.op == Opcode::WARPGROUP_DEPBAR;
  const bool counted_barrier = (in.op == Opcode::BAR || in.op == Opcode::BAR_ARV) && in.group != 0;
  const std::uint32_t immediate = counted_barrier ? std::uint32_t{in.group} * kWarpSize : has_immediate ? in.aux : 0u;
  fmt::format_to(std::back_inserter(out), " {}\n", immediate);
}

}  // namespace

AccelSimWriteStats write_accelsim_trace(const std::string& dir, TraceSource& source) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw InputError(fmt::format("--to: cannot create directory '{}': {}", dir, ec.message()));
  AccelSimWriteStats stats;
  std::string list;
  std::vector<WarpInst> batch(1024);
  for (std::size_t k = 0; k < source.num_kernels(); ++k) {
    const std::unique_ptr<KernelSource> kernel = source.open_kernel(k);
    const KernelInfo& info = kernel->info();
    const int version = binary_version_of(info);
    const std::string name = fmt::format("kernel-{}.traceg", k + 1);
    const fs::path path = fs::path(dir) / name;
    std::ofstream f(path, std::ios::binary);
    if (!f) throw InputError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(errno)));
    std::string text = fmt::format(
        "-kernel name = {}\n-kernel id = {}\n-grid dim = ({},{},{})\n-block dim = ({},{},{})\n-shmem = {}\n-nregs = {}\n"
        "-binary version = {}\n-cuda stream id = 0\n-shmem base_addr = 0x0\n-local mem base_addr = 0x0\n"
        "-nvbit version = none (written by warpsim)\n-accelsim tracer version = 5\n-enable lineinfo = 0\n\n"
        "#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width "
        "[adrrescompress?] [mem_addresses] immediate\n\n",
        info.name, k + 1, info.grid.x, info.grid.y, info.grid.z, info.block.x, info.block.y, info.block.z,
        info.shared_mem_bytes, info.registers_per_thread, version);
    for (std::uint64_t c = 0; c < info.grid.count(); ++c) {
      const std::unique_ptr<CtaSource> cta = kernel->open_cta(c);
      const std::uint64_t x = c % info.grid.x, y = c / info.grid.x % info.grid.y, z = c / info.grid.x / info.grid.y;
      fmt::format_to(std::back_inserter(text), "\n#BEGIN_TB\n\nthread block = {},{},{}\n\n", x, y, z);
      for (std::uint32_t w = 0; w < cta->num_warps(); ++w) {
        // The line count comes first: gather the warp's lines, then write them.
        std::string lines;
        std::uint64_t count = 0;
        const std::unique_ptr<WarpStream> warp = cta->open_warp(w);
        for (std::size_t n; (n = warp->read(batch.data(), batch.size())) > 0;) {
          for (std::size_t i = 0; i < n; ++i) {
            write_inst(lines, batch[i]);
            stats.spin_waits_as_loads += batch[i].op == Opcode::LDG && batch[i].aux != 0 && batch[i].active_mask != 0;
          }
          count += n;
        }
        fmt::format_to(std::back_inserter(text), "\nwarp = {}\ninsts = {}\n", w, count);
        text += lines;
        stats.instructions += count;
      }
      text += "\n#END_TB\n";
      f << text;
      stats.bytes += text.size();
      text.clear();
    }
    f << text;
    stats.bytes += text.size();
    f.close();
    if (!f) throw InputError(fmt::format("cannot write '{}' (disk full?)", path.string()));
    list += name + "\n";
    ++stats.kernels;
  }
  std::ofstream l(fs::path(dir) / "kernelslist.g");
  l << list;
  if (!l) throw InputError(fmt::format("cannot write '{}'", (fs::path(dir) / "kernelslist.g").string()));
  return stats;
}

}  // namespace warpsim::accelsim
