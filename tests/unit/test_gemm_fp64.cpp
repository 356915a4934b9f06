// fp64 GEMMs (DMMA.884 through mma.sync): the synthesized kernel's MMAs, the refusal on a GPU without fp64
// tensor cores, and the fraction of the configured peak a compute-bound one reaches, bounded from config values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "models/gpu/gpu.h"
#include "sim/slots/sm.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "traces/synth/gemm.h"
#include "traces/synth/gemm_synthesizer.h"
#include "tests/unit/cta_instructions.h"

using namespace warpsim;

namespace {

Config small_gpu(const std::string& name, std::vector<std::string> overrides = {}) {
  // One SM per TPC: each of the 8 SMs keeps a GPC (and its crossbar port) of its own, as before TPCs were modelled,
  // so the tensor pipe is what binds (an H100's GPC port serves 16-18 SMs).
  overrides.insert(overrides.end(), {"sm.count=8", "l2.slices=4", "hbm.channels=4", "noc.sms_per_tpc=1"});
  return Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/" + name + ".yaml", overrides, Registry::instance());
}

}  // namespace

TEST_CASE("fp64 GEMM: every MMA is an 8x8x4 fp64 DMMA, 2MNK/512 of them, on sm_80 and sm_90", "[synth][gemm][fp64]") {
  for (const std::string arch : {"sm_80", "sm_90"}) {
    GemmProblem p;
    p.m = 128;
    p.n = 192;
    p.k = 96;
    p.dtype = DType::F64;
    const GemmTiling t = default_gemm_tiling(arch, DType::F64);
    CHECK_FALSE(t.warpgroup_mma);  // Hopper has no fp64 warpgroup MMA
    auto trace = make_gemm_trace(p, t, arch, GemmLimits{163 * 1024, 65536, 255});
    auto kernel = trace->open_kernel(0);
    std::uint64_t dmmas = 0, other_mmas = 0, f64_stores = 0;
    for (std::uint64_t cta = 0; cta < kernel->info().grid.count(); ++cta)
      test::for_each_cta_instruction(*kernel, cta, [&](const WarpInst& in) {
        if (in.op == Opcode::HMMA && in.dtype == DType::F64 && in.mma.m == 8 && in.mma.n == 8 && in.mma.k == 4)
          ++dmmas;
        else if (in.op == Opcode::HMMA || in.op == Opcode::HGMMA)
          ++other_mmas;
        if (in.op == Opcode::STG)
          for (int l = 0; l < 32; ++l) f64_stores += (in.active_mask >> l & 1) * in.access_bytes;
      });
    CHECK(dmmas == 2 * p.m * p.n * p.k / (2 * 8 * 8 * 4));
    CHECK(other_mmas == 0);
    CHECK(f64_stores == p.m * p.n * 8);  // C is fp64, written once
  }
}

TEST_CASE("fp64 GEMM is refused on a GPU without fp64 tensor cores", "[synth][gemm][fp64]") {
  GemmProblem p;
  p.m = p.n = p.k = 256;
  p.dtype = DType::F64;
  const Config no_fp64 = small_gpu("a100_sxm", {"sm.tensor.flops_per_cycle.f64=0"});
  CHECK_THROWS_AS(make_gemm_for_gpu(p, no_fp64), InputError);
  CHECK_THROWS_WITH(make_gemm_for_gpu(p, no_fp64), Catch::Contains("f64") && Catch::Contains("flops_per_cycle.f64 = 0"));
}

// One full wave (every SM holds as many CTAs as fit) and a deep K: the pipeline's fill and drain are a small part,
// so the tensor pipe is the limit. The run cannot beat the MMA rate of the config (mma.sync's, capped by
// tensor.mma_sync_flops_per_cycle.f64 where set), and should come within 10% of it.
TEST_CASE("A compute-bound fp64 GEMM runs at the configured DMMA rate, a fraction of the fp64 peak", "[gemm][fp64]") {
  for (const std::string gpu_name : {"a100_sxm", "h100_sxm"}) {
    DYNAMIC_SECTION(gpu_name) {
      const Config cfg = small_gpu(gpu_name);
      const Params& sm = cfg.section("sm");
      const double sms = sm.u32("count");
      const double peak = static_cast<double>(sm.u64("tensor.flops_per_cycle.f64"));
      const double cap = static_cast<double>(sm.u64("tensor.mma_sync_flops_per_cycle.f64"));
      const double dmma_rate = cap > 0 ? std::min(cap, peak) : peak;  // FLOP/cycle/SM of mma.sync fp64
      const GemmTiling t = default_gemm_tiling(cfg.section("gpu").str("arch"), DType::F64);
      GemmProblem p;
      p.dtype = DType::F64;
      p.m = p.n = t.tile_m;
      p.k = 1024;
      // CTAs per SM of this kernel (resources), then one wave of them: per_sm row tiles x one column tile per SM.
      const std::uint64_t per_sm =
          compute_occupancy(make_gemm_for_gpu(p, cfg)->open_kernel(0)->info(), SmLimits::from(sm)).ctas_per_sm;
      REQUIRE(per_sm >= 1);
      p.m = t.tile_m * per_sm;
      p.n = t.tile_n * static_cast<std::uint64_t>(sms);
      auto trace = make_gemm_for_gpu(p, cfg);
      Gpu gpu(cfg);
      const RunResult r = gpu.run(*trace, run_without_systemc);
      REQUIRE(r.kernels.size() == 1);
      const KernelResult& k = r.kernels[0];
      CHECK(k.ctas_per_sm == per_sm);
      const double flops = 2.0 * p.m * p.n * p.k;
      const double fraction_of_rate = flops / (dmma_rate * sms * static_cast<double>(k.cycles));
      CHECK(fraction_of_rate <= 1.0);
      CHECK(fraction_of_rate >= 0.90);
      // The speed-of-light section reports it against the fp64 peak: the DMMA rate's share of it at most.
      REQUIRE(k.speed_of_light.tensor);
      REQUIRE(k.speed_of_light.tensor->useful);
      CHECK(*k.speed_of_light.tensor->useful == Approx(flops / (peak * sms * static_cast<double>(k.cycles))));
      CHECK(*k.speed_of_light.tensor->useful <= dmma_rate / peak + 1e-9);
    }
  }
}
