// Tests of the memory-bound operator synthesizers (traces/synth/ops/: elementwise, softmax, layernorm, rmsnorm) and
// of the SHFL opcode they introduced. Expected data volumes, grids and reduction counts are worked out here from the
// operator's definition and the launch shapes documented in traces/synth/README.md, not from the synthesizers' code.
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/trace/inst.h"
#include "sim/trace/source.h"
#include "sim/trace/trace_file.h"
#include "traces/synth/registry.h"
#include "shipped_config.h"

using namespace warpsim;
using Catch::Matchers::Contains;

namespace {

Config a100() {
  return Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/a100_sxm.yaml", {}, Registry::instance());
}

// Everything one kernel's warps did, summed over all CTAs and warps.
struct Totals {
  KernelInfo info;
  std::map<Opcode, std::uint64_t> warp_insts;   // per opcode
  std::uint64_t global_load_bytes = 0, global_store_bytes = 0, shared_load_bytes = 0, shared_store_bytes = 0;
  std::uint64_t warps = 0;
  std::set<std::uint64_t> stored_addresses;     // first byte of every lane's global store (small kernels only)
  std::map<std::uint64_t, std::uint32_t> loaded_addresses;  // first byte of every lane's global load, and how often
  bool every_warp_ends_with_exit = true;
  std::uint64_t n(Opcode op) const {
    const auto it = warp_insts.find(op);
    return it == warp_insts.end() ? 0 : it->second;
  }
};

Totals scan_kernel(TraceSource& trace, bool keep_addresses = true) {
  REQUIRE(trace.num_kernels() == 1);
  std::unique_ptr<KernelSource> kernel = trace.open_kernel(0);
  Totals t;
  t.info = kernel->info();
  REQUIRE(check_kernel_info(t.info) == "");
  std::array<WarpInst, 64> buf{};
  for (std::uint64_t cta = 0; cta < t.info.grid.count(); ++cta) {
    std::unique_ptr<CtaSource> c = kernel->open_cta(cta);
    for (std::uint32_t w = 0; w < c->num_warps(); ++w) {
      std::unique_ptr<WarpStream> s = c->open_warp(w);
      ++t.warps;
      Opcode last = Opcode::NOP;
      for (std::size_t got; (got = s->read(buf.data(), buf.size())) > 0;) {
        for (std::size_t i = 0; i < got; ++i) {
          const WarpInst& in = buf[i];
          INFO("opcode " << opcode_info(in.op).name << " pc " << in.pc);
          REQUIRE(check_inst(in) == "");
          ++t.warp_insts[in.op];
          last = in.op;
          const std::uint64_t bytes = std::uint64_t(in.active_lanes()) * in.access_bytes;
          if (in.op == Opcode::LDG) {
            t.global_load_bytes += bytes;
            if (keep_addresses)
              for (int l = 0; l < kWarpSize; ++l)
                if (in.active_mask >> l & 1u) ++t.loaded_addresses[in.lane_address(l)];
          }
          if (in.op == Opcode::STG) {
            t.global_store_bytes += bytes;
            if (keep_addresses)
              for (int l = 0; l < kWarpSize; ++l)
                if (in.active_mask >> l & 1u) CHECK(t.stored_addresses.insert(in.lane_address(l)).second);
          }
          if (in.op == Opcode::LDS) t.shared_load_bytes += bytes;
          if (in.op == Opcode::STS) t.shared_store_bytes += bytes;
        }
      }
      if (last != Opcode::EXIT) t.every_warp_ends_with_exit = false;
    }
  }
  return t;
}

Totals synth_totals(const std::string& kind, const std::map<std::string, std::string>& keys, bool keep_addresses = true,
                    const Config& config = a100()) {
  const std::unique_ptr<TraceSource> trace = SynthRegistry::instance().make(kind, keys, config);
  return scan_kernel(*trace, keep_addresses);
}

std::string synth_error(const std::string& kind, const std::map<std::string, std::string>& keys) {
  try {
    SynthRegistry::instance().make(kind, keys, a100());
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// Addresses loaded by more than one lane-access, and the lane-accesses of the first array (the operator's input,
// at the start of the layout) below `end` bytes into it.
std::uint64_t addresses_read_twice(const Totals& t) {
  std::uint64_t n = 0;
  for (const auto& [address, times] : t.loaded_addresses) n += times > 1;
  return n;
}
std::uint64_t input_lane_reads(const Totals& t, std::uint64_t end) {
  std::uint64_t n = 0;
  for (const auto& [address, times] : t.loaded_addresses) n += address < 0x7f0000000000 + end ? times : 0;
  return n;
}

}  // namespace

TEST_CASE("ops: the operator kinds are registered", "[synth][ops]") {
  for (const char* kind : {"elementwise", "softmax", "layernorm", "rmsnorm", "rotary", "reduction", "cat", "quantize"})
    CHECK(SynthRegistry::instance().find(kind) != nullptr);
}

TEST_CASE("ops: elementwise data volume, grid and per-element work", "[synth][ops]") {
  SECTION("gelu fp16, whole blocks: one 8-byte vector per lane, 2 MUFU per element") {
    const std::uint64_t n = 4 * 512;  // 4 blocks of 128 threads x 4 elements
    const Totals t = synth_totals("elementwise", {{"op", "gelu"}, {"elements", std::to_string(n)}});
    CHECK(t.info.grid == Dim3{4, 1, 1});
    CHECK(t.info.block == Dim3{128, 1, 1});
    CHECK(t.global_load_bytes == n * 2);
    CHECK(t.global_store_bytes == n * 2);
    CHECK(t.stored_addresses.size() == n / 4);   // one 8-byte store per 4 elements, each place once
    CHECK(t.n(Opcode::LDG) == 16);              // one per warp
    CHECK(t.n(Opcode::MUFU) * kWarpSize == 2 * n);  // tanhf: EX2 + RCP per element
    CHECK(t.every_warp_ends_with_exit);
  }
  SECTION("add fp32 with a ragged tail: two inputs, 16-byte vectors, scalar tail") {
    const std::uint64_t n = 3 * 512 + 100;
    const Totals t = synth_totals("elementwise", {{"op", "add"}, {"elements", std::to_string(n)}, {"dtype", "fp32"}});
    CHECK(t.info.grid == Dim3{4, 1, 1});
    CHECK(t.global_load_bytes == 2 * n * 4);
    CHECK(t.global_store_bytes == n * 4);
    CHECK(t.stored_addresses.size() == 3 * 512 / 4 + 100);  // vectors of the full blocks + the tail's scalars
  }
  SECTION("PyTorch 2.3+'s launch: 8 bf16 per thread in one 16-byte vector, 1024 per CTA; fp32 in two 4-element vectors") {
    const std::uint64_t n = 3 * 1024;
    Totals t = synth_totals("elementwise", {{"op", "add"}, {"elements", std::to_string(n)}, {"dtype", "bf16"}, {"vec", "8"},
                                            {"elements_per_thread", "8"}});
    CHECK(t.info.grid == Dim3{3, 1, 1});
    CHECK(t.n(Opcode::LDG) == 3 * 4 * 2);  // per warp one vector per input
    CHECK(t.global_load_bytes == 2 * n * 2);
    CHECK(t.stored_addresses.size() == n / 8);
    CHECK(addresses_read_twice(t) == 0);
    t = synth_totals("elementwise", {{"op", "relu"}, {"elements", std::to_string(n + 5)}, {"dtype", "fp32"}, {"vec", "4"},
                                     {"elements_per_thread", "8"}});
    CHECK(t.info.grid == Dim3{4, 1, 1});  // 3 full blocks and a tail of 5
    CHECK(t.global_load_bytes == (n + 5) * 4);
    CHECK(t.stored_addresses.size() == n / 4 + 5);  // the full blocks' 16-byte vectors, the tail's scalars
    CHECK_THAT(synth_error("elementwise", {{"op", "relu"}, {"elements", "8"}, {"dtype", "fp32"}, {"vec", "8"}, {"elements_per_thread", "8"}}),
               Contains("key 'vec'") && Contains("16 bytes"));
    CHECK_THAT(synth_error("elementwise", {{"op", "relu"}, {"elements", "8"}, {"vec", "4"}, {"elements_per_thread", "2"}}),
               Contains("key 'elements_per_thread'"));
  }
  SECTION("a strided (broadcast) kernel computes each element's offsets: per dimension a divmod and an IMAD per operand") {
    const std::uint64_t n = 4 * 512;
    const std::map<std::string, std::string> keys{{"op", "mul"}, {"elements", std::to_string(n)}, {"vec", "1"}, {"elements_per_thread", "4"}};
    std::map<std::string, std::string> strided = keys;
    strided["index_dims"] = "2";
    const Totals contiguous = synth_totals("elementwise", keys), broadcast = synth_totals("elementwise", strided);
    CHECK(broadcast.global_load_bytes == contiguous.global_load_bytes);
    // 2 dimensions x (4 for the divmod + 3 operands: a, b, out) integer instructions per element, one lane each
    CHECK((broadcast.n(Opcode::IMAD) - contiguous.n(Opcode::IMAD)) * kWarpSize == n * 2 * (4 + 3));
    CHECK_THAT(synth_error("elementwise", {{"op", "mul"}, {"elements", "8"}, {"index_dims", "2"}}), Contains("key 'index_dims'") && Contains("vec 1"));
  }
  SECTION("copy bf16 of a single element") {
    const Totals t = synth_totals("elementwise", {{"op", "copy"}, {"elements", "1"}, {"dtype", "bf16"}});
    CHECK(t.info.grid == Dim3{1, 1, 1});
    CHECK(t.global_load_bytes == 2);
    CHECK(t.global_store_bytes == 2);
  }
  SECTION("a converting copy (Tensor.to): bf16 to fp32 and to fp8, each side at its own width") {
    const std::uint64_t n = 4 * 512;
    const Totals f32 = synth_totals("elementwise", {{"op", "copy"}, {"elements", std::to_string(n)}, {"dtype", "bf16"},
                                                    {"out_dtype", "fp32"}});
    CHECK(f32.global_load_bytes == n * 2);
    CHECK(f32.global_store_bytes == n * 4);
    CHECK(f32.stored_addresses.size() == n / 4);  // 4-element vectors: 8 bytes in, 16 bytes out
    CHECK(f32.n(Opcode::HADD2) * kWarpSize == n);  // widened once each, nothing packed
    CHECK(f32.n(Opcode::FMUL) == 0);
    const Totals f8 = synth_totals("elementwise", {{"op", "copy"}, {"elements", std::to_string(n)}, {"dtype", "bf16"},
                                                   {"out_dtype", "fp8"}, {"vec", "8"}, {"elements_per_thread", "8"}});
    CHECK(f8.global_load_bytes == n * 2);
    CHECK(f8.global_store_bytes == n);
    CHECK(f8.n(Opcode::FMUL) * kWarpSize == n / 2);  // a pack per pair, a merge per four
    CHECK(f8.n(Opcode::LOP3) * kWarpSize == n / 4);
    // A ragged end takes the scalar tail at each side's width.
    const Totals ragged = synth_totals("elementwise", {{"op", "copy"}, {"elements", std::to_string(n + 5)}, {"dtype", "bf16"},
                                                       {"out_dtype", "fp32"}});
    CHECK(ragged.global_load_bytes == (n + 5) * 2);
    CHECK(ragged.global_store_bytes == (n + 5) * 4);
    CHECK(ragged.stored_addresses.size() == n / 4 + 5);
    const Totals same = synth_totals("elementwise", {{"op", "copy"}, {"elements", std::to_string(n)}, {"dtype", "bf16"},
                                                     {"out_dtype", "bf16"}});
    CHECK(same.global_store_bytes == n * 2);
    CHECK_THAT(synth_error("elementwise", {{"op", "add"}, {"elements", "8"}, {"out_dtype", "fp32"}}),
               Contains("key 'out_dtype'") && Contains("only op copy"));
    CHECK_THAT(synth_error("elementwise", {{"op", "copy"}, {"elements", "8"}, {"dtype", "bf16"}, {"out_dtype", "fp32"}, {"vec", "8"}}),
               Contains("key 'vec'") && Contains("fp32"));
  }
  SECTION("bad keys") {
    CHECK_THAT(synth_error("elementwise", {{"op", "tanh"}, {"elements", "8"}}), Contains("key 'op'") && Contains("gelu"));
    CHECK_THAT(synth_error("elementwise", {{"op", "relu"}, {"elements", "0"}}), Contains("key 'elements'"));
    CHECK_THAT(synth_error("elementwise", {{"op", "relu"}}), Contains("'elements' is required"));
    CHECK_THAT(synth_error("elementwise", {{"op", "relu"}, {"elements", "8"}, {"dtype", "fp8"}}), Contains("key 'dtype'"));
  }
}

TEST_CASE("ops: softmax reads and writes each element once (warp and smem block variants)", "[synth][ops]") {
  SECTION("persistent warp softmax, 1000 columns: one row per warp, 4 rows per block") {
    const Totals t = synth_totals("softmax", {{"rows", "100"}, {"cols", "1000"}});
    CHECK(t.info.grid == Dim3{25, 1, 1});
    CHECK(t.info.block == Dim3{128, 1, 1});
    CHECK(t.global_load_bytes == 100 * 1000 * 2);
    CHECK(t.global_store_bytes == 100 * 1000 * 2);
    CHECK(t.stored_addresses.size() == 100 * 1000);
    // max and sum all-reduces over 32 lanes: 2 x log2(32) SHFL per warp; no barrier, no shared memory
    CHECK(t.n(Opcode::SHFL) == 100 * 2 * 5);
    CHECK(t.n(Opcode::BAR) == 0);
    CHECK(t.info.shared_mem_bytes == 0);
  }
  SECTION("narrow rows: 10 columns -> 16-lane virtual warps of 2 rows each") {
    const Totals t = synth_totals("softmax", {{"rows", "33"}, {"cols", "10"}, {"dtype", "fp32"}});
    // 4 hardware warps x (2 virtual warps x 2 rows) = 16 rows per block
    CHECK(t.info.grid == Dim3{3, 1, 1});
    CHECK(t.global_load_bytes == 33 * 10 * 4);
    CHECK(t.global_store_bytes == 33 * 10 * 4);
    CHECK(t.n(Opcode::SHFL) == 3 * 4 * 2 * 2 * 4);  // warps x 2 reductions x 2 rows x log2(16) steps
  }
  SECTION("block softmax, 4096 fp16 columns: row kept in shared memory") {
    const Totals t = synth_totals("softmax", {{"rows", "8"}, {"cols", "4096"}});
    // ILP 8; block = next power of two >= min(4096/8, 1024)/2 = 256 threads; one block per row
    CHECK(t.info.grid == Dim3{8, 1, 1});
    CHECK(t.info.block == Dim3{256, 1, 1});
    CHECK(t.global_load_bytes == 8 * 4096 * 2);
    CHECK(t.global_store_bytes == 8 * 4096 * 2);
    CHECK(t.shared_store_bytes >= 8 * 4096 * 2);           // the row, plus one partial per warp and reduction
    CHECK(t.shared_load_bytes >= 2 * 8 * 4096 * 2);        // passes 1 and 2 read the row back
    CHECK(t.info.shared_mem_bytes >= 4096 * 2);
    CHECK(t.n(Opcode::BAR) == 8 * 8 * 4);                  // 2 block reductions x 2 barriers, per warp
    CHECK(t.every_warp_ends_with_exit);
  }
  SECTION("block softmax, 32768 fp16 columns: 64 KiB rows re-read from global memory in each pass") {
    const Totals t = synth_totals("softmax", {{"rows", "2"}, {"cols", "32768"}}, false);
    CHECK(t.info.block == Dim3{512, 1, 1});
    CHECK(t.global_load_bytes == 3 * 2 * 32768 * 2);
    CHECK(t.global_store_bytes == 2 * 32768 * 2);
  }
  SECTION("bad keys") {
    CHECK_THAT(synth_error("softmax", {{"rows", "4"}, {"cols", "1030"}}), Contains("key 'cols'") && Contains("multiple of 8"));
    CHECK_THAT(synth_error("softmax", {{"rows", "4"}, {"colz", "64"}}), Contains("unknown key 'colz'"));
    CHECK_THAT(synth_error("softmax", {{"rows", "0"}, {"cols", "64"}}), Contains("key 'rows'"));
  }
}

TEST_CASE("ops: layernorm and rmsnorm read the row twice, the affine parameters per row, and write once", "[synth][ops]") {
  SECTION("layernorm bf16, affine, 1000 columns (250 vectors: 2 loop iterations, the second partly masked)") {
    const std::uint64_t rows = 6, cols = 1000;
    const Totals t = synth_totals("layernorm", {{"rows", "6"}, {"cols", "1000"}, {"dtype", "bf16"}});
    CHECK(t.info.grid == Dim3{6, 1, 1});
    CHECK(t.info.block == Dim3{32, 4, 1});
    // X in passes 1 and 2, gamma and beta in pass 2 (each block reads them whole)
    CHECK(t.global_load_bytes == 2 * rows * cols * 2 + 2 * rows * cols * 2);
    // Y, plus fp32 mean and rstd per row
    CHECK(t.global_store_bytes == rows * cols * 2 + rows * 2 * 4);
    // Welford (mean, m2, count): 3 SHFL x 5 steps in the warp, 3 x 2 across the 4 warps; 2 barriers
    CHECK(t.n(Opcode::SHFL) == rows * 4 * (15 + 6));
    CHECK(t.n(Opcode::BAR) == rows * 4 * 2);
    CHECK(t.every_warp_ends_with_exit);
  }
  SECTION("rmsnorm fp32 without affine parameters") {
    const std::uint64_t rows = 3, cols = 4096;
    const Totals t = synth_totals("rmsnorm", {{"rows", "3"}, {"cols", "4096"}, {"dtype", "fp32"}, {"elementwise_affine", "false"}});
    CHECK(t.global_load_bytes == 2 * rows * cols * 4);
    CHECK(t.global_store_bytes == rows * cols * 4 + rows * 4);  // Y + rstd
    CHECK(t.n(Opcode::SHFL) == rows * 4 * (5 + 2));
  }
  SECTION("bad keys") {
    CHECK_THAT(synth_error("layernorm", {{"rows", "4"}, {"cols", "1002"}}), Contains("key 'cols'") && Contains("multiple of 4"));
    CHECK_THAT(synth_error("rmsnorm", {{"rows", "4"}, {"cols", "64"}, {"elementwise_affine", "yes"}}),
               Contains("key 'elementwise_affine'"));
  }
}

TEST_CASE("ops: vLLM's rms_norm and fused_add_rms_norm: one block per token, 16-byte vectors, the residual added in place",
          "[synth][ops][rmsnorm]") {
  SECTION("launch: min(hidden, 1024) threads below 256 tokens, min(hidden, 256) from 256 on") {
    const auto launch = [](const char* rows, const char* cols) {
      return synth_totals("rmsnorm", {{"rows", rows}, {"cols", cols}, {"dtype", "bf16"}, {"kernel", "vllm"}}, false).info;
    };
    CHECK(launch("1", "4096").block == Dim3{1024, 1, 1});
    CHECK(launch("1", "4096").grid == Dim3{1, 1, 1});
    CHECK(launch("300", "4096").block == Dim3{256, 1, 1});
    CHECK(launch("2", "200").block == Dim3{200, 1, 1});  // a partial last warp
  }
  SECTION("rms_norm: the row read twice in 16-byte vectors (4096 bf16: 512 of 1024 threads busy), gamma once, y written") {
    const std::uint64_t rows = 2, cols = 4096;
    const Totals t = synth_totals("rmsnorm", {{"rows", "2"}, {"cols", "4096"}, {"dtype", "bf16"}, {"kernel", "vllm"}});
    CHECK(t.global_load_bytes == 2 * rows * cols * 2 + rows * cols * 2);
    CHECK(t.global_store_bytes == rows * cols * 2);  // no statistics written
    CHECK(t.n(Opcode::LDG) == rows * 3 * 16);        // 16 busy warps per row, one 16-byte load each per access
    CHECK(t.stored_addresses.size() == rows * cols / 8);
    CHECK(t.every_warp_ends_with_exit);
  }
  SECTION("fused_add_rms_norm: x and residual read, their sum stored to residual and read back, x overwritten") {
    const std::uint64_t rows = 3, cols = 1000;  // 125 vectors of 8: one warp partly busy
    const Totals t = synth_totals("rmsnorm", {{"rows", "3"}, {"cols", "1000"}, {"dtype", "fp16"}, {"kernel", "vllm"},
                                              {"residual", "true"}});
    CHECK(t.info.block == Dim3{1000, 1, 1});
    // pass 1: x and residual; pass 2: residual (the sum) and gamma
    CHECK(t.global_load_bytes == 4 * rows * cols * 2);
    CHECK(t.global_store_bytes == 2 * rows * cols * 2);  // residual, then x
    CHECK(t.stored_addresses.size() == 2 * rows * cols / 8);
    // The packed x + residual: 4 HADD2 per 8-element vector and warp, beside the unfused kernel's conversions.
    const Totals plain = synth_totals("rmsnorm", {{"rows", "3"}, {"cols", "1000"}, {"dtype", "fp16"}, {"kernel", "vllm"}}, false);
    CHECK(t.n(Opcode::HADD2) - plain.n(Opcode::HADD2) == rows * 4 * 4);  // 4 warps hold the 125 vectors
  }
  SECTION("4100 columns (not a multiple of 8): fused_add_rms_norm goes scalar, rms_norm takes gcd(8, 4100) = 4-element vectors") {
    const Totals fused = synth_totals("rmsnorm", {{"rows", "1"}, {"cols", "4100"}, {"dtype", "bf16"}, {"kernel", "vllm"},
                                                  {"residual", "true"}}, false);
    // 4100 elements over 1024 threads: 4 full passes of 32 warps and one warp for the last 4, twice (residual, x)
    CHECK(fused.n(Opcode::STG) == 2 * (4 * 32 + 1));
    const Totals plain = synth_totals("rmsnorm", {{"rows", "1"}, {"cols", "4100"}, {"dtype", "bf16"}, {"kernel", "vllm"}}, false);
    CHECK(plain.n(Opcode::STG) == 32 + 1);  // 1025 vectors of 8 bytes over 1024 threads
    CHECK(plain.global_store_bytes == 4100 * 2);
  }
  SECTION("PyTorch's kernels keep their registers (the vLLM options allocate theirs only when used)") {
    CHECK(synth_totals("layernorm", {{"rows", "1"}, {"cols", "4096"}, {"dtype", "bf16"}}, false).info.registers_per_thread == 24);
    CHECK(synth_totals("layernorm", {{"rows", "1"}, {"cols", "4096"}, {"dtype", "fp32"}}, false).info.registers_per_thread == 32);
    CHECK(synth_totals("rmsnorm", {{"rows", "1"}, {"cols", "4096"}, {"dtype", "bf16"}, {"kernel", "vllm"}}, false)
              .info.registers_per_thread <= 32);  // two 1024-thread blocks per SM fit
  }
  CHECK_THAT(synth_error("rmsnorm", {{"rows", "4"}, {"cols", "64"}, {"residual", "true"}}),
             Contains("key 'residual'") && Contains("kernel=vllm"));
}

TEST_CASE("SHFL: appended opcode, integer pipe, round trip through the native trace file", "[trace][ops]") {
  Opcode parsed = Opcode::NOP;
  REQUIRE(parse_opcode("SHFL", parsed));
  CHECK(parsed == Opcode::SHFL);
  CHECK(static_cast<int>(Opcode::SHFL) == static_cast<int>(Opcode::EXIT) + 1);  // appended: older numbers unchanged
  CHECK(op_class(Opcode::SHFL) == OpClass::Int);
  CHECK(opcode_info(Opcode::SHFL).space == MemSpace::None);

  // A synthesized softmax (which shuffles) written and read back record for record.
  const std::unique_ptr<TraceSource> trace =
      SynthRegistry::instance().make("softmax", {{"rows", "8"}, {"cols", "256"}}, a100());
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "warpsim_test_shfl.wst";
  write_trace(path.string(), *trace);
  TraceFileReader reader(path.string());
  const Totals original = scan_kernel(*trace);
  const Totals back = scan_kernel(reader);
  std::filesystem::remove(path);
  CHECK(original.n(Opcode::SHFL) > 0);
  CHECK(back.warp_insts == original.warp_insts);
  CHECK(back.global_load_bytes == original.global_load_bytes);
}

TEST_CASE("ops: rotary embedding rewrites q and k in place and reads cos/sin per pair", "[synth][ops]") {
  SECTION("3 tokens x 5 heads x 64, fp16: 160 pairs per token -> a 160-thread block per token") {
    const std::uint64_t tokens = 3, heads = 5, dim = 64;
    const Totals t = synth_totals("rotary", {{"tokens", "3"}, {"heads", "5"}, {"head_dim", "64"}});
    CHECK(t.info.grid == Dim3{3, 1, 1});
    CHECK(t.info.block == Dim3{160, 1, 1});
    // x and y of every pair of q and k (= all of q and k), plus cos and sin for each of those pairs
    CHECK(t.global_load_bytes == 2 * tokens * heads * dim * 2 + 2 * tokens * heads * dim * 2);
    CHECK(t.global_store_bytes == 2 * tokens * heads * dim * 2);
    CHECK(t.stored_addresses.size() == 2 * tokens * heads * dim);  // every element of q and k written once
    CHECK(t.every_warp_ends_with_exit);
  }
  SECTION("more pairs than 512 threads: the loop covers them all") {
    const Totals t = synth_totals("rotary", {{"tokens", "2"}, {"heads", "40"}, {"head_dim", "128"}, {"dtype", "fp32"}});
    CHECK(t.info.block == Dim3{512, 1, 1});
    CHECK(t.global_store_bytes == 2 * 2 * 40 * 128 * 4);
    CHECK(t.stored_addresses.size() == 2 * 2 * 40 * 128);
  }
  SECTION("bad keys") {
    CHECK_THAT(synth_error("rotary", {{"tokens", "3"}, {"heads", "5"}, {"head_dim", "63"}}),
               Contains("key 'head_dim'") && Contains("even"));
  }
}

// The launches below are captured ones: the Llama-3-8B profile of validation/data/h100_sxm_2026-11-23
// (llama3_8b_trace.json.gz: aten::mean over [1, 1, 4096] and [1, 2048, 4096] fp32, aten::argmax over [1, 1, 128256]
// bf16; Kineto's grid, block and "shared memory") and kernel 102 of ../shared/traces/accelsim/a100-nn-onestep (a
// MeanOps<float> reduce_kernel whose 8 lanes load 10 elements: LDG masks 0xff then 0x03).
TEST_CASE("ops: reduction launches as the captured reduce_kernel launches", "[synth][ops][reduction]") {
  const Config h100 = test::gpu("h100_sxm");
  struct Captured { const char* op; const char* dtype; std::uint64_t outputs, inputs; Dim3 grid, block; std::uint32_t smem; };
  const Captured cases[] = {
      {"mean", "fp32", 1, 4096, {1, 1, 1}, {512, 1, 1}, 2064},       // decode RMSNorm statistic
      {"mean", "fp32", 2048, 4096, {128, 1, 1}, {32, 16, 1}, 16},    // prefill RMSNorm statistic
      {"argmax", "bf16", 1, 128256, {1, 1, 1}, {512, 1, 1}, 8208},   // greedy sampling over the vocabulary
  };
  for (const Captured& k : cases) {
    INFO(k.op << " " << k.outputs << " x " << k.inputs);
    const Totals t = synth_totals("reduction", {{"op", k.op}, {"dtype", k.dtype}, {"outputs", std::to_string(k.outputs)},
                                                {"inputs", std::to_string(k.inputs)}},
                                  k.outputs * k.inputs <= (1u << 20), h100);  // lane addresses of the smaller ones
    CHECK(t.info.grid == k.grid);
    CHECK(t.info.block == k.block);
    CHECK(t.info.shared_mem_bytes == k.smem);
    const std::uint32_t bytes = std::string(k.dtype) == "fp32" ? 4 : 2;
    CHECK(t.global_load_bytes == k.outputs * k.inputs * bytes);  // every element once ...
    CHECK(addresses_read_twice(t) == 0);  // ... by one lane each
    const std::uint32_t out_bytes = std::string(k.op) == "argmax" ? 8 : bytes;
    CHECK(t.global_store_bytes == k.outputs * out_bytes);       // one result per output
    if (k.outputs * k.inputs <= (1u << 20)) CHECK(t.stored_addresses.size() == k.outputs);
    CHECK(t.every_warp_ends_with_exit);
  }
  SECTION("the A100 trace's 10-element mean: one warp of 8 threads, the same two loads") {
    const Totals t = synth_totals("reduction", {{"op", "mean"}, {"dtype", "fp32"}, {"outputs", "1"}, {"inputs", "10"}});
    CHECK(t.info.grid == Dim3{1, 1, 1});
    CHECK(t.info.block == Dim3{8, 1, 1});
    CHECK(t.info.shared_mem_bytes == 16);
    CHECK(t.n(Opcode::LDG) == 2);
    CHECK(t.loaded_addresses.size() == 10);
    // The captured warp executes 141 instructions (its SASS has guards and branches the synthesizer folds into
    // counts); the synthesized one is within a fifth of that.
    std::uint64_t total = 0;
    for (const auto& [op, n] : t.warp_insts) total += n;
    INFO("synthesized warp: " << total << " instructions");
    CHECK(total >= 113);
    CHECK(total <= 169);
  }
}

TEST_CASE("ops: large reductions split across CTAs, outer reductions vectorize along the outputs", "[synth][ops][reduction]") {
  const Config h100 = test::gpu("h100_sxm");
  SECTION("one output of 2^20 fp32: a global reduction through a staging buffer") {
    const std::uint64_t n = std::uint64_t{1} << 20;
    const Totals t = synth_totals("reduction", {{"op", "sum"}, {"dtype", "fp32"}, {"outputs", "1"}, {"inputs", std::to_string(n)}},
                                  true, h100);
    const std::uint64_t ctas = t.info.grid.y;
    CHECK(t.info.grid.x == 1);
    CHECK(t.info.block == Dim3{512, 1, 1});
    // Split until a thread sums between 16 and 256 values (setReduceConfig's bounds) without exceeding one wave.
    CHECK(ctas > 1);
    CHECK(n / (512 * ctas) >= 16);
    CHECK(n / (512 * ctas) <= 256);
    CHECK(ctas <= 132 * (2048 / 512));
    // The input once; each CTA's partial (thread 0 after the block reduction) written to the staging buffer and read
    // back by the last CTA, which writes the result.
    CHECK(addresses_read_twice(t) == 0);
    CHECK(input_lane_reads(t, n * 4) == n / 4);  // 16-byte vectors
    CHECK(t.loaded_addresses.size() == n / 4 + ctas);  // and each CTA's partial, read back once by the last CTA
    CHECK(t.n(Opcode::ATOMG) == ctas);  // one semaphore increment per CTA
    CHECK(t.global_store_bytes == ctas * 4 + 4);
  }
  SECTION("x.sum(0) of a [2048, 4096] bf16 tensor: 4-output vectors, the reduced rows split across warps and CTAs") {
    const Totals t = synth_totals("reduction", {{"op", "sum"}, {"dtype", "bf16"}, {"layout", "outer"}, {"outputs", "4096"},
                                                {"inputs", "2048"}}, true, h100);
    CHECK(t.info.block.x * t.info.block.y == 128);  // 512 threads / output_vec_size 4
    CHECK(t.info.block.x == 32);
    CHECK(addresses_read_twice(t) == 0);
    CHECK(input_lane_reads(t, 4096 * 2048 * 2) * 8 == 4096 * 2048 * 2);  // 4-element bf16 vectors
    CHECK(t.every_warp_ends_with_exit);
  }
  SECTION("argmax over dim 0 of [64, 4096] bf16: (value, index) pairs of 4 outputs per thread, 64 B, in 16-byte pieces") {
    const Totals t = synth_totals("reduction", {{"op", "argmax"}, {"dtype", "bf16"}, {"layout", "outer"}, {"outputs", "4096"},
                                                {"inputs", "64"}}, true, h100);  // scan_kernel checks every access
    CHECK(addresses_read_twice(t) == 0);
    CHECK(input_lane_reads(t, 4096 * 64 * 2) * 8 == 4096 * 64 * 2);
    CHECK(t.global_store_bytes == 4096 * 8);  // int64 indices
    CHECK(t.every_warp_ends_with_exit);
  }
  SECTION("blocks of fewer than 32 threads: the lanes past the block do nothing") {
    for (const auto& [outputs, inputs] : {std::pair{3, 4}, std::pair{6, 2}, std::pair{5, 3}}) {
      INFO(outputs << " outputs x " << inputs << " inputs");
      const Totals t = synth_totals("reduction", {{"op", "sum"}, {"dtype", "fp32"}, {"outputs", std::to_string(outputs)},
                                                  {"inputs", std::to_string(inputs)}}, true, h100);
      CHECK(t.info.block.x * t.info.block.y < 32);
      CHECK(addresses_read_twice(t) == 0);
      CHECK(t.global_load_bytes == std::uint64_t(outputs * inputs * 4));
      CHECK(t.stored_addresses.size() == std::uint64_t(outputs));
    }
  }
  SECTION("rows whose length is not a multiple of the vector: the tail read by single lanes, each element once") {
    const std::uint64_t rows = 5, cols = 4099;  // 1024 vectors of 4 and 3 elements per row
    const Totals t = synth_totals("reduction", {{"op", "max"}, {"dtype", "bf16"}, {"outputs", "5"}, {"inputs", "4099"}}, true, h100);
    CHECK(addresses_read_twice(t) == 0);
    CHECK(t.global_load_bytes == rows * cols * 2);
    CHECK(t.stored_addresses.size() == rows);
  }
  SECTION("bad keys") {
    CHECK_THAT(synth_error("reduction", {{"op", "prod"}, {"outputs", "1"}, {"inputs", "8"}}), Contains("key 'op'"));
    CHECK_THAT(synth_error("reduction", {{"op", "sum"}, {"outputs", "1"}, {"inputs", "0"}}), Contains("key 'inputs'"));
    CHECK_THAT(synth_error("reduction", {{"op", "sum"}, {"outputs", "1"}, {"inputs", "8"}, {"layout", "middle"}}),
               Contains("key 'layout'"));
    CHECK_THAT(synth_error("reduction", {{"op", "sum"}, {"outputs", "1"}, {"inputs", "800"}, {"dtype", "fp32"}, {"input_vec_size", "8"}}),
               Contains("key 'input_vec_size'") && Contains("16 bytes"));
  }
}

// ---- cat --------------------------------------------------------------------------------------------------------

namespace {

// What a cat kernel copied: for each input (blockIdx.y), the byte offset each element was read from (relative to the
// lowest address read for that input) and the byte offset it was written to (relative to the lowest address written),
// pairing each lane's loads with its following stores in program order. Also the kernels' launches.
struct CatCopies {
  std::vector<Dim3> grids, blocks;
  std::vector<std::map<std::uint64_t, std::uint64_t>> written_from;  // [input] read offset -> written offset
  std::uint64_t lane_reads = 0, lane_writes = 0;
};

CatCopies cat_copies(const std::map<std::string, std::string>& keys, std::size_t inputs, const Config& config = a100()) {
  const std::unique_ptr<TraceSource> trace = SynthRegistry::instance().make("cat", keys, config);
  CatCopies out;
  out.written_from.resize(inputs);
  struct Pair { std::size_t input; std::uint64_t from, to; };
  std::vector<Pair> pairs;
  std::vector<std::uint64_t> low_read(inputs, ~std::uint64_t{0});
  std::uint64_t low_written = ~std::uint64_t{0};
  std::array<WarpInst, 64> buf{};
  for (std::size_t kernel = 0; kernel < trace->num_kernels(); ++kernel) {
    std::unique_ptr<KernelSource> k = trace->open_kernel(kernel);
    const KernelInfo info = k->info();
    REQUIRE(check_kernel_info(info) == "");
    out.grids.push_back(info.grid);
    out.blocks.push_back(info.block);
    const std::size_t first_input = kernel * (inputs > 64 && info.block.x == 128 ? 128 : 64);
    for (std::uint64_t cta = 0; cta < info.grid.count(); ++cta) {
      const std::size_t input = first_input + cta / info.grid.x;
      REQUIRE(input < inputs);
      std::unique_ptr<CtaSource> c = k->open_cta(cta);
      for (std::uint32_t w = 0; w < c->num_warps(); ++w) {
        std::unique_ptr<WarpStream> s = c->open_warp(w);
        std::array<std::vector<std::uint64_t>, kWarpSize> loaded;  // per lane: element addresses not yet stored
        std::array<std::uint32_t, kWarpSize> load_bytes{};
        Opcode last = Opcode::NOP;
        for (std::size_t got; (got = s->read(buf.data(), buf.size())) > 0;) {
          for (std::size_t i = 0; i < got; ++i) {
            const WarpInst& in = buf[i];
            REQUIRE(check_inst(in) == "");
            last = in.op;
            for (int l = 0; l < kWarpSize; ++l) {
              if (!(in.active_mask >> l & 1u)) continue;
              if (in.op == Opcode::LDG) {  // a vector load of elements read one by one below
                REQUIRE(loaded[l].empty());
                low_read[input] = std::min(low_read[input], in.lane_address(l));
                loaded[l].push_back(in.lane_address(l));
                load_bytes[l] = in.access_bytes;
                ++out.lane_reads;
              } else if (in.op == Opcode::STG) {
                REQUIRE(!loaded[l].empty());
                low_written = std::min(low_written, in.lane_address(l));
                // A store of the load's width takes all of it; a narrower one (the aligned kernel) its next element.
                pairs.push_back({input, loaded[l].front(), in.lane_address(l)});
                if (in.access_bytes >= load_bytes[l]) {
                  loaded[l].clear();
                } else {  // the aligned kernel: the next scalar of the vector
                  loaded[l].front() += in.access_bytes;
                  load_bytes[l] -= in.access_bytes;
                  if (load_bytes[l] == 0) loaded[l].clear();
                }
                ++out.lane_writes;
              }
            }
          }
        }
        CHECK(last == Opcode::EXIT);
        for (int l = 0; l < kWarpSize; ++l) CHECK(loaded[l].empty());
      }
    }
  }
  for (const Pair& p : pairs) {
    auto& m = out.written_from[p.input];
    CHECK(m.emplace(p.from - low_read[p.input], p.to - low_written).second);  // each element read once
  }
  return out;
}

// Expected: element (i0, i1, ...) of input `in` (sizes, element strides) read at sum(i_d * stride_d) * bytes and
// written at the row-major position of (i0, ..., i_dim + offset, ...) in the output; enumerated dim by dim.
std::map<std::uint64_t, std::uint64_t> expected_copies(const std::vector<std::uint64_t>& sizes, const std::vector<std::uint64_t>& strides,
                                                       const std::vector<std::uint64_t>& out_sizes, std::size_t dim, std::uint64_t offset,
                                                       std::uint64_t bytes) {
  std::map<std::uint64_t, std::uint64_t> m;
  std::vector<std::uint64_t> index(sizes.size(), 0);
  std::uint64_t total = 1;
  for (auto s : sizes) total *= s;
  for (std::uint64_t n = 0; n < total; ++n) {
    std::uint64_t from = 0, to = 0;
    for (std::size_t d = 0; d < sizes.size(); ++d) {
      from += index[d] * strides[d];
      to = to * out_sizes[d] + index[d] + (d == dim ? offset : 0);
    }
    m[from * bytes] = to * bytes;
    for (std::size_t d = sizes.size(); d-- > 0;) {  // next index, last dim fastest
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
  return m;
}

}  // namespace

TEST_CASE("ops: cat launches as the captured CatArrayBatchedCopy kernels launch", "[synth][ops][cat]") {
  const Config h100 = test::gpu("h100_sxm");  // 132 SMs
  struct Captured { const char* inputs; const char* strides; const char* dim; const char* dtype; Dim3 grid; std::uint32_t block; };
  // Llama-3-8B profile (validation/data/h100_sxm_2026-11-23): the KV-cache append, rotate_half of a decode token's
  // query (non-contiguous views: the strided kernel), the first prefill's cat onto an empty cache, and a small
  // contiguous fp32 cat.
  const Captured cases[] = {
      {"1x8x2053x128,1x8x1x128", "contiguous", "-2", "bf16", {2053, 2, 1}, 128},
      {"1x32x1x64,1x32x1x64", "2048x64x2048x1,4096x128x4096x1", "-1", "bf16", {264, 2, 1}, 512},
      {"0,1x8x64x128", "1,65536x128x1024x1", "-2", "bf16", {264, 2, 1}, 512},
      {"1x1x64,1x1x64", "contiguous", "-1", "fp32", {1, 2, 1}, 128},
  };
  for (const Captured& k : cases) {
    INFO(k.inputs << " dim " << k.dim);
    const std::unique_ptr<TraceSource> trace = SynthRegistry::instance().make(
        "cat", {{"inputs", k.inputs}, {"strides", k.strides}, {"dim", k.dim}, {"dtype", k.dtype}}, h100);
    REQUIRE(trace->num_kernels() == 1);
    const KernelInfo info = trace->open_kernel(0)->info();
    CHECK(info.grid == k.grid);
    CHECK(info.block == Dim3{k.block, 1, 1});
    CHECK(info.registers_per_thread <= 32);  // 4 CTAs of 512 threads per SM, as the captured 25-register kernel
  }
}

TEST_CASE("ops: cat copies every element once to its place in the output (vectorized, aligned and strided kernels)",
          "[synth][ops][cat]") {
  SECTION("vectorized: contiguous bf16 along dim 1, 16-byte slices") {
    const CatCopies c = cat_copies({{"inputs", "2x3x8,2x1x8"}, {"dim", "1"}, {"dtype", "bf16"}}, 2);
    REQUIRE(c.grids.size() == 1);
    CHECK(c.blocks[0] == Dim3{128, 1, 1});
    CHECK(c.lane_reads == (48 + 16) / 8);  // 16-byte vectors
    // Vectors of 8 elements: compare the first element of each vector.
    const auto a = expected_copies({2, 3, 8}, {24, 8, 1}, {2, 4, 8}, 1, 0, 2), b = expected_copies({2, 1, 8}, {8, 8, 1}, {2, 4, 8}, 1, 3, 2);
    for (const auto& [from, to] : c.written_from[0]) CHECK(a.at(from) == to);
    for (const auto& [from, to] : c.written_from[1]) CHECK(b.at(from) == to);
    CHECK(c.written_from[0].size() == 6);
    CHECK(c.written_from[1].size() == 2);
  }
  SECTION("aligned: contiguous fp32 along dim 1, 12-byte slices (not 16): vector loads, scalar stores, a scalar tail") {
    const CatCopies c = cat_copies({{"inputs", "2x3,2x1"}, {"dim", "1"}, {"dtype", "fp32"}}, 2);
    CHECK(c.blocks[0] == Dim3{128, 1, 1});
    CHECK(c.written_from[0] == expected_copies({2, 3}, {3, 1}, {2, 4}, 1, 0, 4));
    CHECK(c.written_from[1] == expected_copies({2, 1}, {1, 1}, {2, 4}, 1, 3, 4));
    CHECK(c.lane_writes == 8);
  }
  SECTION("strided: non-contiguous fp16 views (a transposed tensor and a slice) along the last dim") {
    const CatCopies c = cat_copies({{"inputs", "1x2x3x4,1x2x3x4"}, {"strides", "24x4x8x1,48x8x16x1"}, {"dim", "-1"}, {"dtype", "fp16"}}, 2);
    CHECK(c.blocks[0] == Dim3{512, 1, 1});
    CHECK(c.grids[0] == Dim3{2 * 108, 2, 1});  // 2 x the A100's SMs
    CHECK(c.written_from[0] == expected_copies({1, 2, 3, 4}, {24, 4, 8, 1}, {1, 2, 3, 8}, 3, 0, 2));
    CHECK(c.written_from[1] == expected_copies({1, 2, 3, 4}, {48, 8, 16, 1}, {1, 2, 3, 8}, 3, 4, 2));
  }
  SECTION("several grid-stride iterations and a tail lane past warp 0 (a one-SM A100: 2 strided CTAs, at most 32 contiguous)") {
    const Config one_sm = Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/a100_sxm.yaml", {"sm.count=1"}, Registry::instance());
    // 2400 elements per input over 2 x 512 threads: 3 iterations.
    const CatCopies strided = cat_copies({{"inputs", "1x2x40x30,1x2x40x30"}, {"strides", "2400x30x60x1,4800x60x120x1"},
                                          {"dim", "-1"}, {"dtype", "bf16"}}, 2, one_sm);
    CHECK(strided.grids[0] == Dim3{2, 2, 1});
    CHECK(strided.written_from[0] == expected_copies({1, 2, 40, 30}, {2400, 30, 60, 1}, {1, 2, 40, 60}, 3, 0, 2));
    CHECK(strided.written_from[1] == expected_copies({1, 2, 40, 30}, {4800, 60, 120, 1}, {1, 2, 40, 60}, 3, 30, 2));
    // 21003 fp32 in 4-element vectors: 5250 vectors over 32 x 128 threads (2 iterations for some), the last 3
    // elements by thread 5250 % 4096 = 1154 (CTA 9, warp 0, lane 2).
    const CatCopies aligned = cat_copies({{"inputs", "3x7001,3x5"}, {"dim", "1"}, {"dtype", "fp32"}}, 2, one_sm);
    CHECK(aligned.grids[0] == Dim3{32, 2, 1});
    CHECK(aligned.written_from[0] == expected_copies({3, 7001}, {7001, 1}, {3, 7006}, 1, 0, 4));
    CHECK(aligned.written_from[1] == expected_copies({3, 5}, {5, 1}, {3, 7006}, 1, 7001, 4));
  }
  SECTION("a legacy empty input is skipped: its CTAs return at once, the offsets start at the next input") {
    const CatCopies c = cat_copies({{"inputs", "0,1x2x4x8"}, {"strides", "1,64x8x16x1"}, {"dim", "2"}, {"dtype", "bf16"}}, 2);
    CHECK(c.written_from[0].empty());
    CHECK(c.written_from[1] == expected_copies({1, 2, 4, 8}, {64, 8, 16, 1}, {1, 2, 4, 8}, 2, 0, 2));
  }
}

TEST_CASE("ops: cat launches one kernel per batch of inputs and refuses what PyTorch's cat kernels do not take",
          "[synth][ops][cat]") {
  std::string many;
  for (int i = 0; i < 130; ++i) many += std::string(i ? "," : "") + "4x2";
  const std::unique_ptr<TraceSource> contiguous = SynthRegistry::instance().make("cat", {{"inputs", many}, {"dim", "1"}}, a100());
  REQUIRE(contiguous->num_kernels() == 2);  // batches of 128
  CHECK(contiguous->open_kernel(0)->info().grid.y == 128);
  CHECK(contiguous->open_kernel(1)->info().grid.y == 2);
  std::string strides;
  for (int i = 0; i < 130; ++i) strides += std::string(i ? "," : "") + "1x4";  // transposed: not contiguous
  const std::unique_ptr<TraceSource> strided =
      SynthRegistry::instance().make("cat", {{"inputs", many}, {"strides", strides}, {"dim", "1"}}, a100());
  REQUIRE(strided->num_kernels() == 3);  // batches of 64
  CHECK(strided->open_kernel(2)->info().grid.y == 2);
  // parallel_cat keeps its running state across batches: the grid follows the largest input so far, and a batch
  // is vectorized only while every slice so far is a multiple of 16 bytes.
  std::string small_then_large, aligned_then_not, not_then_aligned;
  for (int i = 0; i < 130; ++i) {
    small_then_large += std::string(i ? "," : "") + (i < 128 ? "4x8" : "4x100000");
    // (slices of 8 bf16 = 16 B, of 4 = 8 B; the output's rows, 1032 and 528 elements, are multiples of 16 B)
    aligned_then_not += std::string(i ? "," : "") + (i < 128 ? "4x8" : "4x4");
    not_then_aligned += std::string(i ? "," : "") + (i < 128 ? "4x4" : "4x8");
  }
  const auto kernels = [](const std::string& inputs) {
    const std::unique_ptr<TraceSource> t =
        SynthRegistry::instance().make("cat", {{"inputs", inputs}, {"dim", "1"}, {"dtype", "bf16"}}, a100());
    std::vector<KernelInfo> infos;
    for (std::size_t k = 0; k < t->num_kernels(); ++k) infos.push_back(t->open_kernel(k)->info());
    return infos;
  };
  const auto growing = kernels(small_then_large);
  REQUIRE(growing.size() == 2);
  CHECK(growing[0].grid.x == 1);                          // 32 elements: one CTA of 128 threads
  CHECK(growing[1].grid.x == (400000 / 8 + 127) / 128);   // 400000 bf16 in 16-byte vectors
  const auto first_aligned = kernels(aligned_then_not), first_not = kernels(not_then_aligned);
  CHECK_THAT(first_aligned[0].name, Contains("vectorized"));
  CHECK_THAT(first_aligned[1].name, Contains("aligned"));
  CHECK_THAT(first_not[0].name, Contains("aligned"));
  CHECK_THAT(first_not[1].name, Contains("aligned"));

  CHECK_THAT(synth_error("cat", {{"inputs", "2x3,2x3x4"}}), Contains("dims"));
  CHECK_THAT(synth_error("cat", {{"inputs", "2x3,4x3"}, {"dim", "1"}}), Contains("only the cat dim 1 may differ"));
  CHECK_THAT(synth_error("cat", {{"inputs", "2x3,2x3"}, {"dim", "2"}}), Contains("out of range"));
  CHECK_THAT(synth_error("cat", {{"inputs", "2x3,2x3"}, {"dim", "one"}}), Contains("not an integer"));
  CHECK_THAT(synth_error("cat", {{"inputs", "1x2x3x4x5,1x2x3x4x5"}}), Contains("at most 4 dims"));
  CHECK_THAT(synth_error("cat", {{"inputs", "2x-3,2x3"}}), Contains("is not a list like"));
  CHECK_THAT(synth_error("cat", {{"inputs", " 3,2"}}), Contains("is not a list like"));
  CHECK_THAT(synth_error("cat", {{"inputs", "2x3,"}}), Contains("is not a list like"));
  CHECK_THAT(synth_error("cat", {{"inputs", "2147483648,1"}}), Contains("2^31 or more"));
  CHECK_THAT(synth_error("cat", {{"inputs", "65536x65536,1x65536"}}), Contains("input 0 has too many elements"));
  CHECK_THAT(synth_error("cat", {{"inputs", "2x2,2x2"}, {"strides", "1x1073741824,1x1073741824"}, {"dtype", "fp16"}}),
             Contains("cat key 'strides': input 0's storage spans too many bytes: 2147483652"));
  CHECK_THAT(synth_error("cat", {{"inputs", "2x3"}}), Contains("single tensor"));
  CHECK_THAT(synth_error("cat", {{"inputs", "2x3,2x3"}, {"strides", "3x1"}}), Contains("1 stride lists for 2 inputs"));
}

TEST_CASE("ops: quantize to nvfp4 reads each element once and writes half a byte and a sixteenth of a scale for it",
          "[synth][ops][fp4]") {
  // Llama-3-8B's down_proj input, 3 tokens: 1792 chunks of 8 per row over 512 threads in 4 passes; in the last
  // pass warps 8-15 have no chunk and only go round the loop.
  const std::uint64_t rows = 3, cols = 14336;
  const Totals t = synth_totals("quantize", {{"rows", "3"}, {"cols", "14336"}, {"dtype", "bf16"}});
  CHECK(t.info.grid == Dim3{3, 1, 1});  // min(rows, 108 SMs x 2048 / 512)
  CHECK(t.info.block == Dim3{512, 1, 1});
  CHECK(t.global_load_bytes == rows * cols * 2);
  CHECK(t.global_store_bytes == rows * cols / 2 + rows * cols / 16);
  // every 4-byte group of e2m1 values and every scale byte written once (first bytes of the lanes' stores)
  CHECK(t.stored_addresses.size() == rows * cols / 8 + rows * cols / 16);
  CHECK(t.n(Opcode::SHFL) == rows * cols / 8 / 32);  // one per warp-chunk
  CHECK(t.every_warp_ends_with_exit);
  // The scales land in the GEMM's atoms: row r's scale s at atom s / 4 of its row block, byte (r % 32) x 16 +
  // (r % 128 / 32) x 4 + s % 4; the last array of the layout starts after the input and the values.
  const std::uint64_t scales = 0x7f0000000000 + ((rows * cols * 2 + (1u << 20) - 1) >> 20 << 20) +
                               ((rows * cols / 2 + (1u << 20) - 1) >> 20 << 20);
  std::set<std::uint64_t> expected;
  for (std::uint64_t r = 0; r < rows; ++r)
    for (std::uint64_t s = 0; s < cols / 16; ++s) expected.insert(scales + s / 4 * 512 + r * 16 + s % 4);
  std::set<std::uint64_t> got;
  for (std::uint64_t a : t.stored_addresses)
    if (a >= scales) got.insert(a);
  CHECK(got == expected);
  // every warp's EXIT at the same pc, whether its last pass had chunks or not
  const auto trace = SynthRegistry::instance().make("quantize", {{"rows", "3"}, {"cols", "14336"}}, a100());
  const auto kernel = trace->open_kernel(0);
  std::set<std::uint32_t> exit_pcs;
  std::array<WarpInst, 64> buf{};
  const auto cta = kernel->open_cta(0);
  for (std::uint32_t w = 0; w < cta->num_warps(); ++w) {
    const auto s = cta->open_warp(w);
    for (std::size_t got_n; (got_n = s->read(buf.data(), buf.size())) > 0;)
      for (std::size_t i = 0; i < got_n; ++i)
        if (buf[i].op == Opcode::EXIT) exit_pcs.insert(buf[i].pc);
  }
  CHECK(exit_pcs.size() == 1);
  CHECK_THAT(synth_error("quantize", {{"rows", "3"}, {"cols", "48"}}), Contains("key 'cols'") && Contains("32"));
  CHECK_THAT(synth_error("quantize", {{"rows", "3"}, {"cols", "64"}, {"dtype", "fp32"}}), Contains("16-bit"));
}
