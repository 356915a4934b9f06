// Microbenchmark synthesizers (traces/synth/microbench/): registration, key validation and the instruction
// streams they generate. Expected counts and addresses are worked out from the documented kernel structure
// (traces/synth/README.md, "Microbenchmarks") and the config, not by calling the synthesizers' own arithmetic.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "shipped_config.h"
#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/trace/inst.h"
#include "sim/trace/trace_file.h"
#include "traces/synth/registry.h"

using namespace warpsim;

namespace {

using warpsim::test::gpu;

std::vector<WarpInst> warp_insts(KernelSource& kernel, std::uint64_t cta, std::uint32_t warp) {
  std::vector<WarpInst> out;
  auto stream = kernel.open_cta(cta)->open_warp(warp);
  std::vector<WarpInst> buf(512);
  for (std::size_t n; (n = stream->read(buf.data(), buf.size())) > 0;)
    for (std::size_t i = 0; i < n; ++i) {
      INFO("record " << out.size() << ": " << check_inst(buf[i]));
      REQUIRE(check_inst(buf[i]).empty());
      out.push_back(buf[i]);
    }
  return out;
}

std::unique_ptr<TraceSource> make(const std::string& kind, const std::map<std::string, std::string>& keys,
                                  const Config& config) {
  return SynthRegistry::instance().make(kind, keys, config);
}

const std::vector<std::string> kMicrobenchmarks = {"pointer_chase", "stream", "smem_bandwidth", "dep_chain",
                                                   "tensor_throughput", "tma_bandwidth"};

}  // namespace

TEST_CASE("microbenchmarks are registered with their declared metrics", "[synth][microbench]") {
  const std::map<std::string, std::set<std::string>> metrics = {
      {"pointer_chase", {"latency_cycles", "latency_ns"}},
      {"stream", {"bandwidth_gbps"}},
      {"smem_bandwidth", {"bandwidth_bytes_per_clk_per_sm", "bandwidth_gbps", "latency_cycles"}},
      {"dep_chain", {"latency_cycles", "throughput_per_clk_per_sm"}},
      {"tensor_throughput", {"tflops", "latency_cycles"}},
      {"tma_bandwidth", {"bandwidth_gbps", "latency_cycles"}}};
  for (const auto& [kind, names] : metrics) {
    const SynthesizerInfo* info = SynthRegistry::instance().find(kind);
    REQUIRE(info);
    std::set<std::string> declared;
    for (const SynthMetric& m : info->metrics) {
      declared.insert(m.name);
      CHECK(!m.unit.empty());
    }
    CHECK(declared == names);
    CHECK(info->derive);
  }
}

TEST_CASE("microbenchmark keys are validated with one clear error", "[synth][microbench]") {
  const Config h100 = gpu("h100_sxm"), a100 = gpu("a100_sxm");
  auto error_of = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  using Keys = std::map<std::string, std::string>;
  CHECK_THAT(error_of([&] { make("pointer_chase", Keys{{"footprnt", "16KiB"}}, h100); }),
             Catch::Contains("unknown key 'footprnt'") && Catch::Contains("footprint"));
  CHECK_THAT(error_of([&] { make("pointer_chase", Keys{}, h100); }), Catch::Contains("'footprint' is required"));
  CHECK_THAT(error_of([&] { make("pointer_chase", Keys{{"footprint", "1000B"}}, h100); }),
             Catch::Contains("not a multiple of the stride"));
  CHECK_THAT(error_of([&] { make("pointer_chase", Keys{{"footprint", "16KiB"}, {"space", "texture"}}, h100); }),
             Catch::Contains("global | shared"));
  CHECK_THAT(error_of([&] { make("pointer_chase", Keys{{"footprint", "1GiB"}, {"space", "shared"}}, h100); }),
             Catch::Contains("sm.shared_memory_per_cta"));
  CHECK_THAT(error_of([&] { make("pointer_chase", Keys{{"footprint", "4KiB"}, {"cache_op", "cg"}}, h100); }),
             Catch::Contains("default | evict_first | evict_last | no_allocate | bypass"));
  CHECK_THAT(error_of([&] {
               make("pointer_chase", Keys{{"footprint", "4KiB"}, {"space", "shared"}, {"cache_op", "bypass"}}, h100);
             }),
             Catch::Contains("bypass applies to global loads, not to space shared"));
  CHECK_THAT(error_of([&] { make("stream", Keys{{"op", "add"}}, h100); }), Catch::Contains("triad"));
  CHECK_THAT(error_of([&] { make("stream", Keys{{"threads", "100"}}, h100); }), Catch::Contains("multiple of the warp"));
  CHECK_THAT(error_of([&] { make("stream", Keys{{"threads", "1024"}, {"bytes", "1000B"}}, h100); }),
             Catch::Contains("16-byte vector"));
  CHECK_THAT(error_of([&] { make("smem_bandwidth", Keys{{"conflict_ways", "3"}}, h100); }),
             Catch::Contains("does not divide"));
  CHECK_THAT(error_of([&] { make("smem_bandwidth", Keys{{"width", "12"}}, h100); }), Catch::Contains("4 | 8 | 16"));
  CHECK_THAT(error_of([&] { make("smem_bandwidth", Keys{{"width", "16"}, {"conflict_ways", "16"}}, h100); }),
             Catch::Contains("at most 8 ways"));
  CHECK_THAT(error_of([&] { make("dep_chain", Keys{{"op", "hmma"}}, h100); }), Catch::Contains("ffma"));
  CHECK_THAT(error_of([&] { make("dep_chain", Keys{{"warps", "65"}}, h100); }), Catch::Contains("out of range"));
  CHECK_THAT(error_of([&] { make("tensor_throughput", Keys{{"instruction", "wgmma"}}, a100); }),
             Catch::Contains("sm_90 only"));
  CHECK_THAT(error_of([&] { make("tensor_throughput", Keys{{"dtype", "fp8"}}, a100); }), Catch::Contains("no FP8"));
  // TMA: wherever the config has a TMA unit (async_copy.issue_bytes_per_cycle > 0), whatever the arch is called.
  CHECK_THAT(error_of([&] { make("tma_bandwidth", Keys{}, a100); }),
             Catch::Contains("sm_80") && Catch::Contains("async_copy.issue_bytes_per_cycle is 0"));
  CHECK_NOTHROW(make("tma_bandwidth", Keys{{"iterations", "2"}}, gpu("b200")));
  CHECK_THAT(error_of([&] { make("tma_bandwidth", Keys{}, gpu("h100_sxm", {"async_copy.issue_bytes_per_cycle=0"})); }),
             Catch::Contains("has none"));
  CHECK_THAT(error_of([&] { make("tensor_throughput", Keys{{"shape", "m64n256k16"}}, h100); }),
             Catch::Contains("m16n8k8 and m16n8k16"));
  CHECK_THAT(error_of([&] { make("tensor_throughput", Keys{{"instruction", "wgmma"}, {"shape", "m64n250k16"}}, h100); }),
             Catch::Contains("multiple of 8"));
  CHECK_THAT(error_of([&] { make("tensor_throughput", Keys{{"instruction", "wgmma"}, {"warps", "6"}}, h100); }),
             Catch::Contains("multiple of 4"));
  CHECK_THAT(error_of([&] { make("tensor_throughput", Keys{{"shape", "16x8x16"}}, h100); }), Catch::Contains("mMnNkK"));
  // What the GPU supports works.
  CHECK_NOTHROW(make("tensor_throughput", Keys{{"instruction", "wgmma"}, {"dtype", "fp8"}}, h100));
  CHECK_NOTHROW(make("tensor_throughput", Keys{{"dtype", "int8"}, {"shape", "m16n8k32"}}, a100));
}

TEST_CASE("stream: each op loads and stores every element of its arrays once, 16 bytes per lane", "[synth][microbench]") {
  // 2 SMs x 1 CTA x 64 threads = 128 threads; 6 KiB + 16 B per array = 385 vectors: 4 grid-stride iterations,
  // the last with one vector (one lane of one warp).
  const Config config = gpu("h100_sxm", {"sm.count=2"});
  const std::uint64_t bytes = 6 * 1024 + 16, vectors = bytes / 16;
  struct Expect {
    std::uint32_t load_arrays, store_arrays;
    Opcode math;
  };
  const std::map<std::string, Expect> ops = {{"read", {1, 0, Opcode::FADD}},  {"write", {0, 1, Opcode::NOP}},
                                             {"copy", {1, 1, Opcode::NOP}},   {"scale", {1, 1, Opcode::FMUL}},
                                             {"triad", {2, 1, Opcode::FFMA}}};
  for (const auto& [op, expect] : ops) {
    SECTION(op) {
      auto trace = make("stream", {{"op", op}, {"bytes", std::to_string(bytes) + "B"}, {"ctas_per_sm", "1"}, {"threads", "64"}},
                        config);
      auto kernel = trace->open_kernel(0);
      REQUIRE(kernel->info().grid.count() == 2);
      REQUIRE(kernel->info().block.count() == 64);
      std::map<std::uint64_t, int> loaded, stored;  // 16-byte vector address -> times accessed
      std::uint64_t math = 0;
      for (std::uint64_t cta = 0; cta < 2; ++cta)
        for (std::uint32_t w = 0; w < 2; ++w)
          for (const WarpInst& in : warp_insts(*kernel, cta, w)) {
            if (in.op == expect.math) ++math;
            if (!in.is_memory()) continue;
            CHECK(in.access_bytes == 16);
            for (int l = 0; l < kWarpSize; ++l)
              if (in.active_mask >> l & 1) ++(in.op == Opcode::LDG ? loaded : stored)[in.lane_address(l)];
          }
      CHECK(loaded.size() == expect.load_arrays * vectors);
      CHECK(stored.size() == expect.store_arrays * vectors);
      for (const auto& e : loaded) CHECK(e.second == 1);
      for (const auto& e : stored) CHECK(e.second == 1);
      // The arrays do not overlap: distinct vectors = arrays x vectors (checked above) and all 16-byte aligned.
      for (const auto& e : loaded) CHECK(e.first % 16 == 0);
      // Warp instructions: 4 iterations per warp for warps holding vectors in every iteration; the arithmetic
      // runs on each loaded/stored vector's warp instruction (fp32: 4 per 16-byte vector).
      if (expect.math != Opcode::NOP) CHECK(math > 0);
    }
  }
}

TEST_CASE("stream passes: each pass reads every vector once, from another CTA than the pass before", "[synth][microbench]") {
  // 2 SMs x 1 CTA x 64 threads; 385 vectors (the last warp piece ragged), 3 passes.
  const Config config = gpu("h100_sxm", {"sm.count=2"});
  const std::uint64_t bytes = 6 * 1024 + 16, vectors = bytes / 16;
  auto trace = make("stream", {{"op", "read"}, {"bytes", std::to_string(bytes) + "B"}, {"ctas_per_sm", "1"},
                               {"threads", "64"}, {"passes", "3"}}, config);
  auto kernel = trace->open_kernel(0);
  std::map<std::uint64_t, std::vector<std::uint64_t>> readers;  // vector address -> the CTA of each read
  std::uint64_t loads = 0;
  for (std::uint64_t cta = 0; cta < 2; ++cta)
    for (std::uint32_t w = 0; w < 2; ++w)
      for (const WarpInst& in : warp_insts(*kernel, cta, w)) {
        if (in.op != Opcode::LDG) continue;
        ++loads;
        for (int l = 0; l < kWarpSize; ++l)
          if (in.active_mask >> l & 1) readers[in.lane_address(l)].push_back(cta);
      }
  CHECK(readers.size() == vectors);
  std::uint64_t read_by_both = 0;
  for (const auto& [address, ctas] : readers) {
    CHECK(ctas.size() == 3);
    if (std::set<std::uint64_t>(ctas.begin(), ctas.end()).size() == 2) ++read_by_both;
  }
  // A CTA's share shifts by one CTA per pass: no vector is read by the same CTA in all three passes (so its SM's L1
  // cannot serve the later passes).
  CHECK(read_by_both == vectors);
  CHECK(loads >= 3 * ((vectors + kWarpSize - 1) / kWarpSize));
}

TEST_CASE("pointer_chase: one lane, each load addressed by the previous one's result, stride wrapping", "[synth][microbench]") {
  const Config config = gpu("h100_sxm");
  auto trace = make("pointer_chase", {{"footprint", "1KiB"}, {"stride", "256B"}, {"steps", "10"}}, config);
  auto kernel = trace->open_kernel(0);
  CHECK(kernel->info().grid.count() == 1);
  CHECK(kernel->info().block.count() == 32);
  const std::vector<WarpInst> insts = warp_insts(*kernel, 0, 0);
  std::vector<const WarpInst*> chase, warm;
  for (const WarpInst& in : insts)
    if (in.op == Opcode::LDG) (in.active_mask == 1 && in.dst[0] == in.src[0] ? chase : warm).push_back(&in);
  // 1 KiB / 256 B = 4 positions: one warm-up load over lanes 0-3 (1 KiB <= l2.size), then 10 timed loads.
  REQUIRE(warm.size() == 1);
  CHECK(warm[0]->active_mask == 0xf);
  for (int l = 0; l < 4; ++l) CHECK(warm[0]->lane_address(l) == warm[0]->base + 256u * l);
  REQUIRE(chase.size() == 10);
  for (std::size_t s = 0; s < chase.size(); ++s) {
    CHECK(chase[s]->lane_address(0) == warm[0]->base + 256u * (s % 4));
    CHECK(chase[s]->num_dst == 1);
    CHECK(chase[s]->pc == chase[0]->pc);  // one loop body
  }
  // The first timed load also waits for the warm-up's destination.
  CHECK(std::find(chase[0]->src.begin(), chase[0]->src.begin() + chase[0]->num_src, warm[0]->dst[0]) !=
        chase[0]->src.begin() + chase[0]->num_src);
  CHECK(insts.back().op == Opcode::EXIT);

  // cache_op: every global load of the chase (warm-up and timed) carries it; by default none does.
  for (const WarpInst& in : insts) CHECK(in.cache == CacheOp::Default);
  auto cg = make("pointer_chase", {{"footprint", "1KiB"}, {"stride", "256B"}, {"steps", "10"}, {"cache_op", "bypass"}},
                 config);
  int bypassing = 0;
  for (const WarpInst& in : warp_insts(*cg->open_kernel(0), 0, 0)) bypassing += in.op == Opcode::LDG && in.cache == CacheOp::Bypass;
  CHECK(bypassing == 11);

  // Beyond L2 nothing can be resident: no warm-up.
  auto big = make("pointer_chase", {{"footprint", "1GiB"}, {"steps", "4"}}, config);
  auto big_kernel = big->open_kernel(0);
  int loads = 0;
  for (const WarpInst& in : warp_insts(*big_kernel, 0, 0)) loads += in.op == Opcode::LDG;
  CHECK(loads == 4);
}

TEST_CASE("smem_bandwidth: n-way pattern puts n distinct addresses on each bank used", "[synth][microbench]") {
  const Config config = gpu("h100_sxm", {"sm.count=1"});
  const std::uint32_t banks = config.section("smem").u32("banks");
  for (const char* width : {"4", "8", "16"})
    for (std::uint32_t ways : {1u, 2u, 4u, 8u}) {
      auto trace = make("smem_bandwidth", {{"conflict_ways", std::to_string(ways)}, {"width", width}, {"ctas_per_sm", "1"},
                                           {"threads", "32"}, {"iterations", "4"}}, config);
      auto kernel = trace->open_kernel(0);
      int lds = 0;
      for (const WarpInst& in : warp_insts(*kernel, 0, 0)) {
        if (in.op != Opcode::LDS) continue;
        ++lds;
        // bank -> distinct 4-byte words the warp touches in it
        std::map<std::uint64_t, std::set<std::uint64_t>> words;
        for (int l = 0; l < kWarpSize; ++l)
          for (std::uint64_t b = 0; b < in.access_bytes; b += 4) {
            const std::uint64_t word = (in.lane_address(l) + b) / 4;
            words[word % banks].insert(word);
          }
        // conflict-free: a warp's 32 x width bytes spread evenly, width/4 words per bank; n-way: n times that
        const std::uint64_t base_words = 32u * std::stoul(width) / 4 / banks;
        std::uint64_t most = 0;
        for (const auto& e : words) most = std::max<std::uint64_t>(most, e.second.size());
        INFO("width " << width << ", ways " << ways);
        CHECK(most == std::max<std::uint64_t>(1, base_words) * ways);
      }
      CHECK(lds == 4);
    }
}

TEST_CASE("dep_chain and tensor_throughput chain each instruction to its predecessor", "[synth][microbench]") {
  const Config config = gpu("h100_sxm", {"sm.count=1"});
  auto chain = make("dep_chain", {{"op", "dfma"}, {"ilp", "3"}, {"length", "5"}}, config);
  auto kernel = chain->open_kernel(0);
  std::map<std::uint16_t, int> per_chain;
  for (const WarpInst& in : warp_insts(*kernel, 0, 0)) {
    if (in.op == Opcode::EXIT) continue;
    CHECK(in.op == Opcode::DFMA);
    CHECK(in.src[0] == in.dst[0]);
    ++per_chain[in.dst[0]];
  }
  CHECK(per_chain.size() == 3);
  for (const auto& e : per_chain) CHECK(e.second == 5);

  auto tensor = make("tensor_throughput", {{"warps", "4"}, {"ilp", "2"}, {"iterations", "3"}, {"ctas", "1"}}, config);
  auto tk = tensor->open_kernel(0);
  // 4 warps x 2 chains x 3 mma.sync m16n8k16 of 2*16*8*16 = 4096 operations
  CHECK(tk->info().flops == 4u * 2 * 3 * 4096);
  int hmma = 0;
  for (const WarpInst& in : warp_insts(*tk, 0, 1))
    if (in.op == Opcode::HMMA) {
      ++hmma;
      CHECK(in.src[2] == in.dst[0]);  // accumulates into its own chain
      CHECK(in.dtype == DType::F16);
    }
  CHECK(hmma == 6);
}

namespace {

std::vector<WarpInst> first_warp(TraceSource& t) {
  auto kernel = t.open_kernel(0);
  auto cta = kernel->open_cta(0);
  auto warp = cta->open_warp(0);
  std::vector<WarpInst> out;
  WarpInst buf[64];
  for (std::size_t n; (n = warp->read(buf, 64)) > 0;) out.insert(out.end(), buf, buf + n);
  return out;
}

}  // namespace

TEST_CASE("format 1.2 opcodes (wgmma fence/commit/wait, TMA, mbarriers) round-trip through the native trace file",
          "[synth][microbench][trace]") {
  const Config h100 = gpu("h100_sxm");
  for (const auto& [kind, keys] : std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"tma_bandwidth", {{"iterations", "8"}, {"stages", "2"}}},
           {"tensor_throughput", {{"instruction", "wgmma"}, {"iterations", "4"}, {"wgmma_pending", "1"}}}}) {
    INFO(kind);
    const std::unique_ptr<TraceSource> trace = make(kind, keys, h100);
    const std::filesystem::path path = std::filesystem::temp_directory_path() / ("warpsim_test_" + kind + ".wst");
    write_trace(path.string(), *trace);
    TraceFileReader reader(path.string());
    const std::unique_ptr<TraceSource> again = make(kind, keys, h100);
    const std::vector<WarpInst> original = first_warp(*again), back = first_warp(reader);
    std::filesystem::remove(path);
    REQUIRE(back.size() == original.size());
    std::set<Opcode> seen;
    for (std::size_t i = 0; i < back.size(); ++i) {
      const WarpInst &a = original[i], &b = back[i];
      CHECK((a.op == b.op && a.aux == b.aux && a.group == b.group && a.base == b.base && a.stride == b.stride &&
             a.group_stride == b.group_stride && a.active_mask == b.active_mask));
      CHECK(check_inst(b).empty());
      seen.insert(b.op);
    }
    if (kind == "tma_bandwidth") {
      for (Opcode op : {Opcode::MBARRIER_INIT, Opcode::SYNCS_ARRIVE_TRANS64, Opcode::UTMALDG,
                        Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT})
        CHECK(seen.count(op) == 1);
    } else {
      for (Opcode op : {Opcode::WARPGROUP_ARRIVE, Opcode::HGMMA, Opcode::WARPGROUP_COMMIT, Opcode::WARPGROUP_DEPBAR})
        CHECK(seen.count(op) == 1);
    }
  }
}

TEST_CASE("format 1.2 records are validated: TMA boxes and mbarrier ids", "[trace]") {
  WarpInst tma;
  tma.op = Opcode::UTMALDG;
  tma.space = MemSpace::Global;
  tma.addr_mode = AddrMode::Strided;
  tma.access_bytes = 16;
  tma.active_mask = 1;
  tma.base = 0x1000;
  tma.stride = 256;
  tma.group_stride = 128;
  tma.aux = 8;
  CHECK(check_inst(tma).empty());
  WarpInst bad = tma;
  bad.active_mask = 3;
  CHECK_THAT(check_inst(bad), Catch::Contains("lane 0 alone"));
  bad = tma;
  bad.stride = 64;  // pitch below the row
  CHECK_THAT(check_inst(bad), Catch::Contains("pitch"));
  bad = tma;
  bad.aux = 1u << 20;  // 128 MiB
  CHECK_THAT(check_inst(bad), Catch::Contains("at most"));
  bad = tma;
  bad.group = 40;
  CHECK_THAT(check_inst(bad), Catch::Contains("mbarrier 40"));
  WarpInst wait;
  wait.op = Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT;
  wait.aux = 2;
  CHECK_THAT(check_inst(wait), Catch::Contains("parity 2"));
}
