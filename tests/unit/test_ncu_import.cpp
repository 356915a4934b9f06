// Tests of the Nsight Compute importer (app/validate/ncu_import.h) and its CSV reader: quoting, units, kernel
// names, the mapping file, skip reasons and malformed exports. Expected values are read off the fixture's cells
// (tests/data/ncu/sample_raw.csv, hand-made) and converted by hand.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "app/validate/csv_reader.h"
#include "app/validate/ncu_import.h"
#include "sim/core/error.h"

using namespace warpsim;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(WARPSIM_SOURCE_DIR) + "/tests/data/ncu/";
const std::string kSample = kData + "sample_raw.csv";
const std::string kMap = kData + "sample_map.yaml";

// A file in a fresh temporary directory, removed with it.
struct TempFile {
  fs::path dir, path;
  TempFile(const std::string& name, const std::string& text) {
    dir = fs::temp_directory_path() / fs::path("warpsim-ncu-" + std::to_string(std::hash<std::string>{}(text + name)));
    fs::create_directories(dir);
    path = dir / name;
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string str() const { return path.string(); }
};

// A minimal raw-page export: the header, the units row and the given rows.
std::string raw_export(const std::string& time_unit, const std::vector<std::string>& rows) {
  std::string s = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes_read.sum\",\"dram__bytes_write.sum\"\n";
  s += "\"\",\"\",\"" + time_unit + "\",\"Kbyte\",\"Kbyte\"\n";
  for (const std::string& r : rows) s += r + "\n";
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

const ReferenceCase* find_case(const NcuImport& im, const std::string& id) {
  for (const ReferenceCase& c : im.cases)
    if (c.id == id) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("the CSV reader follows RFC 4180: quotes, doubled quotes, commas and line breaks inside quotes, CRLF") {
  const std::string text =
      "\xEF\xBB\xBF" "a,\"b, with comma\",\"say \"\"hi\"\"\"\r\n"
      "\r\n"
      "==PROF== a message of the tool\n"
      "1,\"two\nlines\",\n"
      "\"\",x,\"\"\n";
  const std::vector<CsvRecord> r = parse_csv(text, "t.csv", "==");
  REQUIRE(r.size() == 3);
  CHECK(r[0].line == 1);
  CHECK(r[0].fields == std::vector<std::string>{"a", "b, with comma", "say \"hi\""});
  CHECK(r[1].line == 4);
  CHECK(r[1].fields == std::vector<std::string>{"1", "two\nlines", ""});
  CHECK(r[2].line == 6);  // the quoted line break counted
  CHECK(r[2].fields == std::vector<std::string>{"", "x", ""});
  // Without a skip prefix, the tool's message is a record like any other.
  CHECK(parse_csv("==PROF== x\na\n", "t.csv").size() == 2);
}

TEST_CASE("malformed CSV is an error naming file, line and column") {
  CHECK(error_of([] { parse_csv("a,b\n\"open,c\nd\n", "t.csv"); }) ==
        "t.csv:2:1: quoted field not closed: a '\"' is missing");
  CHECK(error_of([] { parse_csv("a,\"b\"c\n", "t.csv"); }).rfind("t.csv:1:6: unexpected 'c' after the closing quote", 0) == 0);
  CHECK(error_of([] { parse_csv("a\nb,c\"d\n", "t.csv"); }).rfind("t.csv:2:4: '\"' inside a field", 0) == 0);
  CHECK(error_of([] { parse_csv(std::string("a,b\nc,\0\n", 8), "t.csv"); }).rfind("t.csv:2:3: NUL byte", 0) == 0);
}

TEST_CASE("numbers of an export may carry thousands separators") {
  double v = 0;
  CHECK((parse_ncu_number("1,234,567", v) && v == 1234567.0));
  CHECK((parse_ncu_number("1,234.5", v) && v == 1234.5));
  CHECK((parse_ncu_number(" 3e-05 ", v) && v == 3e-05));
  CHECK((parse_ncu_number("702528", v) && v == 702528.0));
  for (const char* bad : {"12,34", "1,2345", ",123", "123,", "1.5,000", "abc", "", "n/a", "1e999"}) {
    INFO(bad);
    CHECK_FALSE(parse_ncu_number(bad, v));
  }
}

TEST_CASE("units convert to warpsim's: microseconds, bytes, GB/s, fractions") {
  double s = 0;
  std::string error;
  CHECK((ncu_unit_scale("time", "nsecond", s, &error) && s == 1e-3));
  CHECK((ncu_unit_scale("time", "usecond", s, &error) && s == 1.0));
  CHECK((ncu_unit_scale("time", "msecond", s, &error) && s == 1e3));
  CHECK((ncu_unit_scale("bytes", "Kbyte", s, &error) && s == 1e3));  // Nsight's prefixes are SI
  CHECK((ncu_unit_scale("bytes", "Gbyte", s, &error) && s == 1e9));
  CHECK((ncu_unit_scale("rate", "Tbyte/second", s, &error) && s == 1e3));
  CHECK((ncu_unit_scale("percent", "%", s, &error) && s == 0.01));
  CHECK_FALSE(ncu_unit_scale("time", "Mbyte", s, &error));
  CHECK(error == "unit 'Mbyte' is not a time unit (expected one of: nsecond, usecond, msecond, second, ns, us, ms, s)");
}

TEST_CASE("kernel names give the family and the input type") {
  struct Row {
    const char* name;
    const char* family;
    const char* dtype;
    const char* short_name;
  };
  const Row rows[] = {
      {"ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_64x3_tn", "gemm", "fp16",
       "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_64x3_tn"},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
       "gemm", "bf16", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64"},
      {"cutlass::Kernel2<cutlass_80_tensorop_f16_s16816gemm_f16_256x128_32x3_nn_align8>", "gemm", "fp16",
       "cutlass_80_tensorop_f16_s16816gemm_f16_256x128_32x3_nn_align8"},
      {"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
       "gemm", "bf16", "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn"},
      {"nvjet_hsh_128x256_64x4_2x1_v_bz_coopB_NNT", "gemm", "fp16", "nvjet_hsh_128x256_64x4_2x1_v_bz_coopB_NNT"},
      {"nvjet_sm100_tst_64x32_64x16_2x1_2cta_h_bz_TNT", "gemm", "", "nvjet_sm100_tst_64x32_64x16_2x1_2cta_h_bz_TNT"},
      {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
       "cutlass::gemm::collective::CollectiveMma<cutlass::half_t, float>>>(T1::Params)",
       "gemm", "fp16", "GemmUniversal"},
      {"sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128_cublas", "gemm", "fp8",
       "sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128"},
      {"ampere_sgemm_128x64_tn", "gemm", "fp32", "ampere_sgemm_128x64_tn"},
      {"flash_fwd_kernel", "attention", "", "flash_fwd_kernel"},
      {"void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, cutlass::bfloat16_t>, false>(flash::Flash_fwd_params)",
       "attention", "bf16", "flash_fwd_kernel"},
      {"fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t>::Params)",
       "attention", "fp16", "fmha_cutlassF_f16_aligned_64x64_rf_sm80"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char *, 3>>(int)",
       "elementwise", "bf16", "vectorized_elementwise_kernel"},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(at::native::ReduceOp<float>)", "reduction", "",
       "reduce_kernel"},
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096UL>)", "nccl", "bf16",
       "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"},
      {"void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4, false>(float)", "gemv", "", "gemv2T_kernel_val"},
      {"my_kernel(int)", "", "", "my_kernel"},
  };
  for (const Row& r : rows) {
    INFO(r.name);
    const NcuKernelClass k = classify_ncu_kernel(r.name);
    CHECK(k.family == r.family);
    CHECK(k.dtype == r.dtype);
    CHECK(k.short_name == r.short_name);
  }
}

TEST_CASE("the sample export with its mapping gives GEMM and attention cases, the rest is skipped with reasons") {
  const NcuImport im = import_ncu_csv(kSample, "h100_sxm", kMap);

  // Row 1: 702,528 ns; 160.43 + 117.44 Mbyte of DRAM traffic; 1,232,937 GPC cycles; L2 hits 71.42 %.
  const std::string row1 = "ncu.1.sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64.";
  const ReferenceCase* t = find_case(im, row1 + "time_us");
  REQUIRE(t);
  CHECK(t->measured == Approx(702.528));
  CHECK(t->gpu == "h100_sxm");
  CHECK(t->kind == "gemm");
  CHECK(t->category == "gemm");
  CHECK(t->keys == std::map<std::string, std::string>{{"m", "256"}, {"n", "896"}, {"k", "256"}, {"dtype", "bf16"}});
  CHECK(t->source == kSample + " row 1 (ncu --csv --page raw)");
  CHECK(t->file == kSample);
  CHECK(t->line == 4);  // after the ==PROF== line, the header and the units row
  CHECK(t->note.find("MLP up-projection") != std::string::npos);
  CHECK(t->note.find(", ncu ID 0, grid (132, 1, 1), block (384, 1, 1)") != std::string::npos);
  const ReferenceCase* bw = find_case(im, row1 + "achieved_dram_gbps");
  REQUIRE(bw);
  CHECK(bw->measured == Approx((160.43e6 + 117.44e6) / 702.528e-6 / 1e9));
  CHECK(find_case(im, row1 + "dram_bytes_read")->measured == Approx(160.43e6));
  CHECK(find_case(im, row1 + "dram_bytes_written")->measured == Approx(117.44e6));
  CHECK(find_case(im, row1 + "cycles")->measured == 1232937.0);
  CHECK(find_case(im, row1 + "l2_hit_rate")->measured == Approx(0.7142));
  CHECK(find_case(im, row1 + "occupancy")->measured == Approx(0.1248));
  // Eight metrics per launch: time, cycles, DRAM read, written, bandwidth, L2 hit rate, occupancy and the SM
  // (compute) throughput of the Speed Of Light section.
  CHECK(find_case(im, row1 + "compute_throughput")->measured == Approx(0.8817));
  CHECK(im.cases.size() == 4 * 8);

  // Row 2: the same kernel's second launch takes the entry with `launch: 1`.
  const ReferenceCase* second = find_case(im, "ncu.2.sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64.time_us");
  REQUIRE(second);
  CHECK(second->keys.at("n") == "256");
  CHECK(second->measured == Approx(214.976));
  // Row 3: the mapping's dtype; row 4: attention, whose dtype the name gives.
  CHECK(find_case(im, "ncu.3.nvjet_hsh_128x256_64x4_2x1_v_bz_coopB_NNT.time_us")->keys.at("dtype") == "fp16");
  const ReferenceCase* att = find_case(im, "ncu.4.flash_fwd_kernel.time_us");
  REQUIRE(att);
  CHECK(att->kind == "attention");
  CHECK(att->category == "attention");
  CHECK(att->keys.at("dtype") == "bf16");
  CHECK(att->keys.at("head_dim") == "128");

  REQUIRE(im.skipped.size() == 3);
  CHECK(im.skipped[0].row == 5);
  // The elementwise kind exists (traces/synth/ops), but an export says nothing of the element count: the map must.
  CHECK(im.skipped[0].reason == "shape unknown: add it to --map");
  CHECK(im.skipped[1].reason == "no synthesizer for nccl");
  CHECK(im.skipped[2].reason == "shape unknown: add it to --map");
  CHECK(im.skipped[2].kernel.find("cutlass_80_tensorop_f16_s16816gemm") != std::string::npos);
  CHECK(im.skipped[2].line == 10);

  std::map<std::string, std::string> ignored;
  for (const NcuIgnoredMetric& m : im.ignored) ignored[m.metric] = m.reason;
  // The SM throughput is the speed-of-light section's compute throughput: a case, not an ignored column.
  CHECK_FALSE(ignored.count("sm__throughput.avg.pct_of_peak_sustained_elapsed"));
  CHECK(find_case(im, "ncu.4.flash_fwd_kernel.compute_throughput"));
  CHECK(ignored.count("launch__registers_per_thread"));
  CHECK(ignored.size() == 4);  // the four launch__ columns
}

TEST_CASE("without a mapping no launch gives cases and every one says why") {
  const NcuImport im = import_ncu_csv(kSample, "h100_sxm");
  CHECK(im.cases.empty());
  REQUIRE(im.skipped.size() == 7);
  for (int i : {0, 1, 2, 3, 6}) CHECK(im.skipped[i].reason == "shape unknown: add it to --map");
}

TEST_CASE("mapping: launch indices count the launches each entry's regex matches, skip entries say why") {
  const TempFile csv("r.csv", raw_export("usecond", {
                                             R"("0","nvjet_tst_128x128_64x4_1x1_v_bz_TNT","10","1","1")",
                                             R"("1","ampere_sgemm_128x64_tn","20","1","1")",
                                             R"("2","ampere_sgemm_128x64_tn","30","1","1")",
                                             R"("3","ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn","40","n/a","1")",
                                         }));
  const TempFile map("m.yaml",
                     "- {match: sgemm, launch: 1, skip: warm-up launch}\n"
                     "- {match: gemm, workload: {kind: gemm, m: 64, n: 64, k: 64}, set: {clocks.sm: 1.755GHz}}\n"
                     "- {match: nvjet, workload: {kind: gemm, m: 64, n: 64, k: 64}}\n");
  const NcuImport im = import_ncu_csv(csv.str(), "a100_sxm", map.str());
  REQUIRE(im.skipped.size() == 3);
  CHECK(im.skipped[0].reason.find("dtype unknown: the kernel name does not say it; add dtype to the --map entry at " +
                                  map.str() + ":3") == 0);
  // sgemm's launch 0 falls to the general entry: fp32, which the GEMM synthesizer does not take.
  CHECK(im.skipped[1].reason.rfind("no synthesizer for gemm in fp32", 0) == 0);
  CHECK(im.skipped[2].reason == "skipped by " + map.str() + ":1: warm-up launch");
  // The bf16 GEMM: its DRAM read was not measured, so neither bytes read nor bandwidth is a case.
  REQUIRE(im.cases.size() == 2);
  CHECK(im.cases[0].id == "ncu.4.ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn.time_us");
  CHECK(im.cases[0].measured == 40.0);
  CHECK(im.cases[0].overrides == std::vector<std::string>{"clocks.sm=1.755GHz"});
  CHECK(im.cases[1].metric == "dram_bytes_written");
  CHECK(im.cases[1].measured == 1000.0);  // 1 Kbyte
}

TEST_CASE("DRAM bandwidth may come from a throughput column, a launch without a duration is skipped") {
  const TempFile csv("r.csv",
                     "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes.sum.per_second\"\n"
                     "\"\",\"\",\"msecond\",\"Tbyte/second\"\n"
                     "\"0\",\"k_gemm\",\"0.5\",\"2.5\"\n"
                     "\"1\",\"k_gemm\",\"n/a\",\"1\"\n");
  const TempFile map("m.yaml", "- {match: k_gemm, workload: {kind: gemm, m: 64, n: 64, k: 64, dtype: bf16}}\n");
  const NcuImport im = import_ncu_csv(csv.str(), "h100_sxm", map.str());
  REQUIRE(im.cases.size() == 2);
  CHECK(im.cases[0].metric == "time_us");
  CHECK(im.cases[0].measured == 500.0);  // 0.5 ms
  CHECK(im.cases[1].metric == "achieved_dram_gbps");
  CHECK(im.cases[1].measured == 2500.0);  // 2.5 TB/s
  REQUIRE(im.skipped.size() == 1);
  CHECK(im.skipped[0].reason == "gpu__time_duration.sum not measured ('n/a')");
  CHECK(im.ignored.empty());
}

TEST_CASE("a metric measured 0 gives no case (no relative error) and is named among the ignored") {
  const TempFile csv("r.csv",
                     "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes_write.sum\"\n"
                     "\"\",\"\",\"usecond\",\"byte\"\n"
                     "\"0\",\"k_gemm\",\"12\",\"0\"\n"
                     "\"1\",\"k_gemm\",\"13\",\"4096\"\n");
  const TempFile map("m.yaml", "- {match: k_gemm, workload: {kind: gemm, m: 64, n: 64, k: 64, dtype: bf16}}\n");
  const NcuImport im = import_ncu_csv(csv.str(), "h100_sxm", map.str());
  std::vector<std::string> ids;
  for (const ReferenceCase& c : im.cases) ids.push_back(c.id);
  CHECK(ids == std::vector<std::string>{"ncu.1.k_gemm.time_us", "ncu.2.k_gemm.time_us", "ncu.2.k_gemm.dram_bytes_written"});
  REQUIRE(im.ignored.size() == 1);
  CHECK(im.ignored[0].metric == "dram_bytes_written");
  CHECK(im.ignored[0].reason == "measured 0 in 1 launch: no relative error, no case");
  for (const ReferenceCase& c : im.cases) CHECK(c.measured > 0);  // what validate requires of every case
}

TEST_CASE("a malformed export is an error naming file, line and column or metric") {
  const auto import = [](const std::string& text) {
    const TempFile f("bad.csv", text);
    return error_of([&] { import_ncu_csv(f.str(), "h100_sxm"); });
  };
  const auto starts_with = [](const std::string& s, const std::string& prefix) {
    INFO(s);
    return s.find(prefix) != std::string::npos;
  };
  CHECK(starts_with(import(raw_export("usecond", {R"("0","k_gemm","10","1")"})),
                    "bad.csv:3: 4 fields, but the header (line 1) has 5 columns"));
  CHECK(starts_with(import(raw_export("furlong", {R"("0","k_gemm","10","1","1")"})),
                    "bad.csv:2: column 3 (gpu__time_duration.sum): unit 'furlong' is not a time unit"));
  CHECK(starts_with(import(raw_export("usecond", {R"("0","k_gemm","ten","1","1")"})),
                    "bad.csv:3: column 3 (gpu__time_duration.sum): 'ten' is not a number"));
  CHECK(starts_with(import(raw_export("usecond", {R"("0","k_gemm","0","1","1")"})),
                    "bad.csv:3: column 3 (gpu__time_duration.sum): a kernel's duration must be positive"));
  CHECK(starts_with(import("\"ID\",\"Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"usecond\"\n"),
                    "bad.csv:1: no 'Kernel Name' column"));
  CHECK(starts_with(import("\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\"\n\"\",\"\",\"byte\"\n"),
                    "bad.csv:1: no 'gpu__time_duration.sum' column"));
  CHECK(starts_with(import("\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"),
                    "bad.csv:1: one row per metric"));
  CHECK(starts_with(import("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"0\",\"k\",\"1\"\n"),
                    "bad.csv:2: expected the units row"));
  CHECK(starts_with(import(""), "bad.csv: empty"));
  CHECK(starts_with(error_of([] { import_ncu_csv("/nonexistent/r.csv", "h100_sxm"); }),
                    "cannot open Nsight Compute export '/nonexistent/r.csv': No such file or directory"));
}

TEST_CASE("a malformed mapping is an error naming the mapping file and line") {
  const auto import = [](const std::string& yaml) {
    const TempFile m("m.yaml", yaml);
    return error_of([&] { import_ncu_csv(kSample, "h100_sxm", m.str()); });
  };
  const auto has = [](const std::string& s, const std::string& part) {
    INFO(s);
    return s.find(part) != std::string::npos;
  };
  CHECK(has(import("- match: \"gemm(\"\n  workload: {kind: gemm, m: 1, n: 1, k: 1}\n"),
            "m.yaml:1: match: 'gemm(' is not a regular expression"));
  CHECK(has(import("- match: gemm\n  shape: 1\n"), "m.yaml:2: unknown field 'shape'"));
  // Errors of a field point at its own line (the entry starts at line 1).
  CHECK(has(import("- match: gemm\n  workload: {kind: gemm, m: 1, n: 1, kk: 1}\n"), "m.yaml:2: workload: "));
  CHECK(has(import("- match: gemm\n  workload: {kind: gemm, m: 1, n: 1, k: 1}\n  skip: no\n"),
            "m.yaml:1: an entry has either `workload:`"));
  CHECK(has(import("- match: gemm\n  launch: first\n  skip: x\n"), "m.yaml:2: launch: expected a launch index"));
  CHECK(has(import("match: gemm\n"), "m.yaml:1: expected a list of entries"));
  CHECK(has(import("- [unclosed\n"), "m.yaml:2:1: "));
}
