// Retargeting through the command line: an sm_90 GEMM (HGMMA + LDGSTS main loop) captured with `warpsim synth -o`
// runs on the A100 config with its HGMMAs as mma.sync, reported in stats.json and the summary; its TMA version
// is refused with one clear error (exit 2). An sm_80 GEMM on a hypothetical sm_75 (--set gpu.arch) runs its
// cp.async copies as LDG + STS.
#include <catch2/catch.hpp>

#include "test_helpers.h"

using namespace wstest;

TEST_CASE("retarget: an sm_90 GEMM trace runs on the A100 config, its HGMMAs mapped and reported", "[retarget]") {
  TempDir dir;
  // 64x256x256: one CTA of one consumer warpgroup (a 64x256 tile), 16 k-steps of HGMMA m64n256k16.
  const std::vector<std::string> shape{"--m", "64", "--n", "256", "--k", "256", "--gpu", "h100_sxm"};
  auto synth = [&](const std::string& mainloop, const std::string& file) {
    std::vector<std::string> args{"synth", "gemm", "--mainloop", mainloop, "-o", dir / file};
    args.insert(args.end(), shape.begin(), shape.end());
    const CmdResult r = run_warpsim(args);
    INFO(describe(args, r));
    REQUIRE(r.exit_code == 0);
  };
  synth("ldgsts", "ldgsts.wst");
  synth("tma", "tma.wst");

  const std::vector<std::string> on_h100{"run", "--gpu", "h100_sxm", "--trace", dir / "ldgsts.wst", "--out",
                                         dir / "h100", "--no-progress"};
  const CmdResult h100 = run_warpsim(on_h100);
  INFO(describe(on_h100, h100));
  REQUIRE(h100.exit_code == 0);
  const std::string h100_stats = read_text(dir.path() / "h100" / "stats.json");
  CHECK_FALSE(json::has(h100_stats, "kernels[0].retargeted"));  // its own arch: untouched
  CHECK_FALSE(contains(h100.out, "captured for"));

  const std::vector<std::string> on_a100{"run", "--gpu", "a100_sxm", "--trace", dir / "ldgsts.wst", "--out",
                                         dir / "a100", "--no-progress"};
  const CmdResult a100 = run_warpsim(on_a100);
  INFO(describe(on_a100, a100));
  REQUIRE(a100.exit_code == 0);
  CHECK(contains(a100.out, "captured for sm_90, run on sm_80"));
  CHECK(contains(a100.out, "HGMMA.64x256x16.BF16 -> 32 x HMMA.16816.BF16 per warp: 64 instructions (2,048 after)"));
  const std::string stats = read_text(dir.path() / "a100" / "stats.json");
  CHECK(json::string(stats, "kernels[0].captured_for") == "sm_90");
  CHECK(json::string(stats, "kernels[0].run_on") == "sm_80");
  CHECK(json::string(stats, "kernels[0].retargeted[0].from") == "HGMMA.64x256x16.BF16");
  // 4 warps x 256/16 k-steps HGMMAs, each a warp's quarter of m64n256k16 = 256/8 m16n8k16 HMMAs.
  CHECK(json::number(stats, "kernels[0].retargeted[0].instructions") == 4.0 * 16);
  CHECK(json::number(stats, "kernels[0].retargeted[0].emitted_instructions") == 4.0 * 16 * 32);
  // Each of the 8 warps' setmaxnreg (sm_90's register reallocation) is dropped.
  CHECK(json::string(stats, "kernels[0].retargeted[1].from") == "USETMAXREG");
  CHECK(json::number(stats, "kernels[0].retargeted[1].instructions") == 8.0);
  CHECK(json::number(stats, "kernels[0].retargeted[1].emitted_instructions") == 0.0);
  CHECK_FALSE(json::has(stats, "kernels[0].retargeted[2]"));
  // The same work on the tensor cores: 2*M*N*K, and the instruction count changes by what the mappings did.
  CHECK(json::number(stats, "kernels[0].counters[\"sm.tensor_flops\"]") == 2.0 * 64 * 256 * 256);
  CHECK(json::number(stats, "kernels[0].warp_instructions") ==
        *json::number(h100_stats, "kernels[0].warp_instructions") - 4 * 16 + 4 * 16 * 32 - 8);

  const std::vector<std::string> tma{"run", "--gpu", "a100_sxm", "--trace", dir / "tma.wst", "--out", dir / "tma",
                                     "--no-progress"};
  const CmdResult refused = run_warpsim(tma);
  INFO(describe(tma, refused));
  CHECK(refused.exit_code == 2);
  CHECK(contains(refused.err, "warpsim_gemm_bf16_tn_64x256x64_s4_sm90"));
  CHECK(contains(refused.err, "uses TMA"));
  CHECK(contains(refused.err, "sm_80 lacks"));
  CHECK(count_lines_containing(refused.err, "error") == 1);
}

TEST_CASE("retarget: an sm_80 GEMM trace on a hypothetical sm_75 runs its LDGSTS as LDG + STS", "[retarget]") {
  TempDir dir;
  const std::vector<std::string> synth{"synth", "gemm", "--m", "256", "--n", "256", "--k", "256", "--gpu", "a100_sxm",
                                       "-o", dir / "a100.wst"};
  const CmdResult s = run_warpsim(synth);
  INFO(describe(synth, s));
  REQUIRE(s.exit_code == 0);
  auto run = [&](const std::string& out, const std::vector<std::string>& extra) {
    std::vector<std::string> args{"run", "--gpu", "a100_sxm", "--trace", dir / "a100.wst", "--out", dir / out,
                                  "--no-progress"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CmdResult r = run_warpsim(args);
    INFO(describe(args, r));
    REQUIRE(r.exit_code == 0);
    return std::make_pair(r.out, read_text(dir.path() / out / "stats.json"));
  };
  const auto [out80, stats80] = run("sm80", {});
  const auto [out75, stats75] = run("sm75", {"--set", "gpu.arch=sm_75"});
  CHECK_FALSE(json::has(stats80, "kernels[0].captured_for"));
  CHECK(contains(out75, "captured for sm_80, run on sm_75"));
  CHECK(json::string(stats75, "kernels[0].retargeted[0].from") == "LDGSTS.128");
  // 128x128x32 tiles, split-K 2: 8 CTAs x 4 k-tiles, each copying (128 + 128) x 32 bf16 in 16-byte lanes.
  const double copies = 8.0 * 4 * (256 * 32 * 2) / (32 * 16);
  CHECK(json::number(stats75, "kernels[0].retargeted[0].instructions") == copies);
  CHECK(json::number(stats75, "kernels[0].retargeted[0].emitted_instructions") == 2 * copies);
  // The warp-instruction count changes by what the report says was added and dropped; the math stays the same.
  double added = 0;
  for (int i = 0; json::has(stats75, "kernels[0].retargeted[" + std::to_string(i) + "]"); ++i)
    added += *json::number(stats75, "kernels[0].retargeted[" + std::to_string(i) + "].emitted_instructions") -
             *json::number(stats75, "kernels[0].retargeted[" + std::to_string(i) + "].instructions");
  CHECK(json::number(stats75, "kernels[0].warp_instructions") == *json::number(stats80, "kernels[0].warp_instructions") + added);
  CHECK(json::number(stats75, "kernels[0].counters[\"sm.tensor_flops\"]") ==
        json::number(stats80, "kernels[0].counters[\"sm.tensor_flops\"]"));
}
