// Tests of the Kineto (PyTorch profiler) trace reader and kernel classification (traces/kineto/): hand-written
// trace snippets, each kernel launched by the operator whose shapes it must be mapped with. Expected synthesizer
// keys are read off the snippets' Input Dims by hand (e.g. addmm(bias [512], x [141, 512], w [512, 2048]):
// m 141, n 2048, k 512).
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/core/error.h"
#include "traces/kineto/classify.h"
#include "traces/kineto/kineto_trace.h"

using namespace warpsim;
using namespace warpsim::kineto;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// One operator (ts 100..200 on thread 1) launching one kernel (correlation 7) through cudaLaunchKernel at ts 150.
json one_kernel(const std::string& kernel_name, const std::string& op_name, const json& dims, const json& types,
                const json& concrete = json::array()) {
  json op_args = {{"External id", 3}, {"Input Dims", dims}, {"Input type", types}};
  if (!concrete.empty()) op_args["Concrete Inputs"] = concrete;
  return {{"traceEvents",
           {{{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::outer_wrapper"}, {"pid", 1}, {"tid", 1}, {"ts", 90}, {"dur", 200},
             {"args", {{"External id", 2}}}},
            {{"ph", "X"}, {"cat", "cpu_op"}, {"name", op_name}, {"pid", 1}, {"tid", 1}, {"ts", 100}, {"dur", 100}, {"args", op_args}},
            // an op on another thread over the same time: not the launcher
            {{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::other_thread"}, {"pid", 1}, {"tid", 2}, {"ts", 100}, {"dur", 100}},
            {{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaLaunchKernel"}, {"pid", 1}, {"tid", 1}, {"ts", 150}, {"dur", 5},
             {"args", {{"correlation", 7}, {"External id", 3}}}},
            {{"ph", "X"}, {"cat", "kernel"}, {"name", kernel_name}, {"pid", 0}, {"tid", 7}, {"ts", 300}, {"dur", 12.5},
             {"args", {{"correlation", 7}, {"stream", 7}, {"grid", {40, 2, 1}}, {"block", {128, 1, 1}},
                       {"registers per thread", 88}, {"shared memory", 33792}}}}}},
          {"deviceProperties", {{{"name", "NVIDIA H100 80GB HBM3"}, {"numSms", 132}, {"computeMajor", 9}, {"computeMinor", 0}}}},
          {"record_shapes", 1}};
}

Mapping classify_one(const json& doc) {
  const Trace t = parse_trace(doc, "test.json");
  REQUIRE(t.kernels.size() == 1);
  return classify_kernel(t.kernels[0]);
}

std::string error_of(const json& doc) {
  try {
    parse_trace(doc, "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kCutlass = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>(Params)";

}  // namespace

TEST_CASE("kineto: a kernel carries its launch's enclosing operators, innermost last", "[kineto]") {
  const Trace t = parse_trace(one_kernel(kCutlass, "aten::addmm", {{2048}, {141, 512}, {512, 2048}, {}, {}},
                                         {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"}),
                              "test.json");
  REQUIRE(t.kernels.size() == 1);
  const Kernel& k = t.kernels[0];
  CHECK(t.device_name == "NVIDIA H100 80GB HBM3");
  CHECK(t.device_sms == 132);
  CHECK(t.record_shapes);
  CHECK(k.duration_us == 12.5);
  CHECK(k.grid[0] == 40);
  CHECK(k.grid[1] == 2);
  CHECK(k.block[0] == 128);
  CHECK(k.registers_per_thread == 88);
  CHECK(k.shared_memory_bytes == 33792);
  CHECK(k.stream == 7);
  CHECK(k.launch == "cudaLaunchKernel");
  REQUIRE(k.ops.size() == 2);  // not the op of thread 2
  CHECK(k.ops[0].name == "aten::outer_wrapper");
  CHECK(k.ops[1].name == "aten::addmm");
  CHECK(k.ops[1].dims[1] == std::vector<std::int64_t>{141, 512});
}

TEST_CASE("kineto: GEMM shapes from mm, addmm, linear, matmul, bmm, baddbmm", "[kineto]") {
  const json bf16x3 = {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"};
  SECTION("addmm with a bias vector: x [141, 512] @ w [512, 2048] + b") {
    const Mapping m = classify_one(one_kernel(kCutlass, "aten::addmm", {{2048}, {141, 512}, {512, 2048}, {}, {}}, bf16x3,
                                              {"", "", "", "1", "1"}));
    CHECK(m.category == "gemm");
    CHECK(m.status == MapStatus::Mapped);
    CHECK(m.synthesizer == "gemm");
    CHECK(m.keys == std::map<std::string, std::string>{{"m", "141"}, {"n", "2048"}, {"k", "512"}, {"dtype", "bf16"}});
    CHECK(m.shape == "141x2048x512 bf16 +bias");
  }
  SECTION("mm of a transposed weight: the dims are logical ([K, N] whatever the strides)") {
    const Mapping m = classify_one(one_kernel("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", "aten::mm", {{1, 4096}, {4096, 1024}},
                                              {"c10::BFloat16", "c10::BFloat16"}));
    CHECK(m.keys == std::map<std::string, std::string>{{"m", "1"}, {"n", "1024"}, {"k", "4096"}, {"dtype", "bf16"}});
  }
  SECTION("linear folds the leading dims into M: [2, 64, 768] x weight [3072, 768]") {
    const Mapping m = classify_one(one_kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", "aten::linear",
                                              {{2, 64, 768}, {3072, 768}, {}}, {"c10::Half", "c10::Half", ""}));
    CHECK(m.keys == std::map<std::string, std::string>{{"m", "128"}, {"n", "3072"}, {"k", "768"}, {"dtype", "fp16"}});
  }
  SECTION("matmul of two batched operands: [4, 8, 32, 64] x [4, 8, 64, 16] = 32 GEMMs of 32x16x64") {
    const Mapping m = classify_one(one_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize64x64x64", "aten::matmul",
                                              {{4, 8, 32, 64}, {4, 8, 64, 16}}, {"c10::BFloat16", "c10::BFloat16"}));
    CHECK(m.keys == std::map<std::string, std::string>{{"m", "32"}, {"n", "16"}, {"k", "64"}, {"dtype", "bf16"}, {"batch", "32"}});
  }
  SECTION("bmm and baddbmm") {
    Mapping m = classify_one(one_kernel("cutlass_80_tensorop_bf16_s16816gemm_bf16_64x64", "aten::bmm", {{12, 128, 64}, {12, 64, 128}},
                                        {"c10::BFloat16", "c10::BFloat16"}));
    CHECK(m.keys == std::map<std::string, std::string>{{"m", "128"}, {"n", "128"}, {"k", "64"}, {"dtype", "bf16"}, {"batch", "12"}});
    m = classify_one(one_kernel("cutlass_80_tensorop_bf16_s16816gemm_bf16_64x64", "aten::baddbmm",
                                {{12, 128, 256}, {12, 128, 64}, {12, 64, 256}, {}, {}}, bf16x3));
    CHECK(m.keys == std::map<std::string, std::string>{{"m", "128"}, {"n", "256"}, {"k", "64"}, {"dtype", "bf16"}, {"batch", "12"}});
  }
  SECTION("an fp32 SIMT GEMM is not mapped, with the reason") {
    const Mapping m = classify_one(one_kernel("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_tn_align1>(Params)", "aten::bmm",
                                              {{1, 64, 1}, {1, 1, 2048}}, {"float", "float"}));
    CHECK(m.category == "gemm");
    CHECK(m.status == MapStatus::Unmapped);
    CHECK_THAT(m.note, Catch::Contains("'float'"));
  }
}

TEST_CASE("kineto: attention shapes, layouts and the causal flag", "[kineto]") {
  SECTION("SDPA (BHSD), GQA, causal prefill") {
    const Mapping m = classify_one(one_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7",
                                              "aten::scaled_dot_product_attention", {{1, 32, 2048, 128}, {1, 8, 2048, 128}, {1, 8, 2048, 128}, {}, {}, {}, {}, {}},
                                              {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar", "Scalar", "Scalar"},
                                              {"", "", "", "", "0.", "True", "0.088", "True"}));
    CHECK(m.category == "attention");
    CHECK(m.keys == std::map<std::string, std::string>{{"batch", "1"}, {"heads", "32"}, {"kv_heads", "8"}, {"seqlen_q", "2048"},
                                                        {"seqlen_kv", "2048"}, {"head_dim", "128"}, {"causal", "true"},
                                                        {"dtype", "bf16"}, {"variant", "fa3"}});
    CHECK_THAT(m.note, Catch::Contains("Hopper-native"));  // cuDNN's sm90 wgmma kernel: FlashAttention-3's design
  }
  SECTION("pytorch_flash (FlashAttention-2) prefill: fa2") {
    const Mapping m = classify_one(one_kernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>",
                                              "aten::_flash_attention_forward", {{2, 300, 8, 64}, {2, 300, 8, 64}, {2, 300, 8, 64}},
                                              {"c10::Half", "c10::Half", "c10::Half"},
                                              {"", "", "", "", "", "300", "300", "0.", "True", "False", "0.125"}));
    CHECK(m.keys.at("variant") == "fa2");
    CHECK(m.keys.at("causal") == "true");
  }
  SECTION("flash_attention_forward (BSHD), one query token: decode") {
    const Mapping m = classify_one(one_kernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>",
                                              "aten::_flash_attention_forward", {{2, 1, 8, 64}, {2, 300, 8, 64}, {2, 300, 8, 64}},
                                              {"c10::Half", "c10::Half", "c10::Half"},
                                              {"", "", "", "", "", "1", "300", "0.", "False", "False", "0.125"}));
    CHECK(m.keys.at("seqlen_q") == "1");
    CHECK(m.keys.at("seqlen_kv") == "300");
    CHECK(m.keys.at("heads") == "8");
    CHECK(m.keys.at("batch") == "2");
    CHECK(m.keys.at("causal") == "false");
    CHECK(m.keys.at("variant") == "decode");
    CHECK(m.keys.at("dtype") == "fp16");
  }
}

TEST_CASE("kineto: norms, softmax, elementwise, copies", "[kineto]") {
  Mapping m = classify_one(one_kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>",
                                      "aten::native_layer_norm", {{1, 141, 512}, {}, {512}, {512}, {}},
                                      {"c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar"}));
  CHECK(m.category == "layernorm");
  CHECK(m.keys == std::map<std::string, std::string>{{"rows", "141"}, {"cols", "512"}, {"dtype", "bf16"}, {"elementwise_affine", "true"}});

  m = classify_one(one_kernel("void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false>", "aten::_softmax",
                              {{4, 12, 128, 128}, {}, {}}, {"float", "Scalar", "Scalar"}, {"", "-1", "False"}));
  CHECK(m.category == "softmax");
  CHECK(m.keys == std::map<std::string, std::string>{{"rows", "6144"}, {"cols", "128"}, {"dtype", "fp32"}});

  // A broadcast multiply: [1, 32, 1, 128] * [1, 1, 1, 128] has 4096 output elements.
  m = classify_one(one_kernel("void at::native::elementwise_kernel<128, 4, gpu_kernel_impl_nocast<BinaryFunctor<mul>>>", "aten::mul",
                              {{1, 32, 1, 128}, {1, 1, 1, 128}}, {"c10::BFloat16", "c10::BFloat16"}));
  CHECK(m.category == "elementwise");
  CHECK(m.status == MapStatus::Mapped);
  // elementwise_kernel<128, 4, ...>: PyTorch's scalar loop for strided operands, 4 elements per thread, offsets over
  // 2 dimensions (32: the first operand's, broadcast in the second; 128: both).
  CHECK(m.keys == std::map<std::string, std::string>{{"op", "mul"}, {"elements", "4096"}, {"dtype", "bf16"}, {"vec", "1"},
                                                     {"elements_per_thread", "4"}, {"index_dims", "2"}});

  // vectorized_elementwise_kernel<8, ...> over 4096 bf16 in 4 CTAs of 128 threads: 8-element vectors, 8 per thread
  // (PyTorch 2.3+); <4, ...> over 4096 fp32 in 2 CTAs: 4-element vectors, 16 per thread (the grid says so).
  json doc = one_kernel("void at::native::vectorized_elementwise_kernel<8, at::native::BinaryFunctor<c10::BFloat16, MulFunctor>>",
                        "aten::mul", {{1, 32, 1, 128}, {1, 32, 1, 128}}, {"c10::BFloat16", "c10::BFloat16"});
  doc["traceEvents"][4]["args"]["grid"] = {4, 1, 1};
  m = classify_one(doc);
  CHECK(m.keys.at("vec") == "8");
  CHECK(m.keys.at("elements_per_thread") == "8");
  doc = one_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", "aten::add",
                   {{4096}, {4096}, {}}, {"float", "float", "Scalar"});
  doc["traceEvents"][4]["args"]["grid"] = {2, 1, 1};
  m = classify_one(doc);
  CHECK(m.keys.at("vec") == "4");
  CHECK(m.keys.at("elements_per_thread") == "16");

  // x * scalar reads one array: approximated by the one-input class, and said so.
  m = classify_one(one_kernel("void at::native::vectorized_elementwise_kernel<4, AUnaryFunctor<float, float, float, MulFunctor>>",
                              "aten::mul", {{1, 1, 128}, {}}, {"float", "Scalar"}));
  CHECK(m.status == MapStatus::Approx);
  CHECK(m.keys.at("op") == "relu");
  CHECK(m.keys.at("elements") == "128");
  CHECK_THAT(m.note, Catch::Contains("aten::mul"));

  // cat: the cat synthesizer with the list's shapes, the dim and the element size from the kernel's OpaqueType<2>;
  // without recorded strides the inputs are taken as contiguous, and said so.
  doc = one_kernel("void at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<OpaqueType<2u>, unsigned int, 3, 128, 1, 16, 8>",
                   "aten::cat", json::array({json::array({json::array({1, 8, 2053, 128}), json::array({1, 8, 1, 128})}), json::array()}),
                   {"TensorList", "Scalar"}, {"", "-2"});
  m = classify_one(doc);
  CHECK(m.category == "cat");
  CHECK(m.synthesizer == "cat");
  CHECK(m.status == MapStatus::Approx);
  CHECK_THAT(m.note, Catch::Contains("contiguous"));
  CHECK(m.keys == std::map<std::string, std::string>{{"inputs", "1x8x2053x128,1x8x1x128"}, {"dim", "-2"}, {"dtype", "bf16"}});
  // With "Input Strides" (PyTorch 2.1+): rotate_half's cat of two non-contiguous views, mapped exactly.
  doc = one_kernel("void at::native::(anonymous namespace)::CatArrayBatchedCopy<OpaqueType<2u>, unsigned int, 4, 64, 64>",
                   "aten::cat", json::array({json::array({json::array({1, 32, 1, 64}), json::array({1, 32, 1, 64})}), json::array()}),
                   {"TensorList", "Scalar"}, {"", "-1"});
  doc["traceEvents"][1]["args"]["Input Strides"] =
      json::array({json::array({json::array({2048, 64, 2048, 1}), json::array({4096, 128, 4096, 1})}), json::array()});
  m = classify_one(doc);
  CHECK(m.category == "cat");
  CHECK(m.status == MapStatus::Mapped);
  CHECK(m.keys.at("dim") == "-1");
  CHECK(m.keys.at("strides") == "2048x64x2048x1,4096x128x4096x1");
  CHECK(m.keys.at("inputs") == "1x32x1x64,1x32x1x64");
}

TEST_CASE("kineto: unknown kernels, kernels without shapes and helpers are said so", "[kineto]") {
  Mapping m = classify_one(one_kernel("my_custom_kernel_v2", "aten::foo", {{4}}, {"float"}));
  CHECK(m.category == "unknown");
  CHECK(m.status == MapStatus::Unmapped);
  CHECK_THAT(m.note, Catch::Contains("matches no rule"));

  m = classify_one(one_kernel(kCutlass, "aten::copy_", {{4}}, {"float"}));  // a GEMM kernel launched by no GEMM op
  CHECK(m.category == "gemm");
  CHECK(m.status == MapStatus::Unmapped);
  CHECK_THAT(m.note, Catch::Contains("aten::copy_"));

  // A reduction over a middle dimension is a strided reduction the synthesizer does not build.
  m = classify_one(one_kernel("void at::native::reduce_kernel<512, 1, ReduceOp<float, MeanOps<float>>>", "aten::mean",
                              {{4, 4096, 8}, {}, {}, {}}, {"float", "ScalarList", "Scalar", ""}, {"", "[1]", "False", ""}));
  CHECK(m.category == "reduction");
  CHECK(m.status == MapStatus::Unmapped);
  CHECK_THAT(m.note, Catch::Contains("neither the trailing nor the leading"));

  m = classify_one(one_kernel("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>", "aten::mm", {{1, 4096}, {4096, 1024}},
                              {"c10::BFloat16", "c10::BFloat16"}));
  CHECK(m.category == "gemm");
  CHECK(m.status == MapStatus::Helper);

  // Without its launch (no cuda_runtime event) a kernel has no operator.
  json doc = one_kernel(kCutlass, "aten::mm", {{1, 4096}, {4096, 1024}}, {"c10::BFloat16", "c10::BFloat16"});
  doc["traceEvents"].erase(3);
  m = classify_one(doc);
  CHECK(m.status == MapStatus::Unmapped);
  CHECK_THAT(m.note, Catch::Contains("record_shapes"));
}

TEST_CASE("kineto: malformed traces are one InputError naming the file and what was expected", "[kineto][bad-input]") {
  CHECK_THAT(error_of(json::array()), Catch::Contains("'bad.json'") && Catch::Contains("traceEvents"));
  CHECK_THAT(error_of(json{{"schemaVersion", 1}}), Catch::Contains("there is no traceEvents"));
  CHECK_THAT(error_of(json{{"traceEvents", 3}}), Catch::Contains("traceEvents is not an array"));
  json doc = one_kernel(kCutlass, "aten::mm", {{1, 4096}, {4096, 1024}}, {"c10::BFloat16", "c10::BFloat16"});
  json no_grid = doc;
  no_grid["traceEvents"][4]["args"].erase("grid");
  CHECK_THAT(error_of(no_grid), Catch::Contains("kernel event 0") && Catch::Contains("expected args.grid as [x, y, z]"));
  json no_dur = doc;
  no_dur["traceEvents"][4].erase("dur");
  CHECK_THAT(error_of(no_dur), Catch::Contains("expected dur as a number (missing)"));
  json no_corr = doc;
  no_corr["traceEvents"][4]["args"]["correlation"] = "seven";
  CHECK_THAT(error_of(no_corr), Catch::Contains("expected args.correlation as a number"));
  json no_name = doc;
  no_name["traceEvents"][4].erase("name");
  CHECK_THAT(error_of(no_name), Catch::Contains("expected a kernel name"));
}

TEST_CASE("kineto: gzip-compressed traces are read, a truncated one is an InputError", "[kineto][bad-input]") {
  const fs::path dir = fs::temp_directory_path() / ("warpsim-kineto-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string text = one_kernel(kCutlass, "aten::mm", {{1, 4096}, {4096, 1024}}, {"c10::BFloat16", "c10::BFloat16"}).dump();
  const std::string gz_path = (dir / "t.json.gz").string();
  gzFile gz = gzopen(gz_path.c_str(), "wb");
  REQUIRE(gz);
  REQUIRE(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  gzclose(gz);
  CHECK(read_trace_text(gz_path, 1 << 20) == text);
  {
    std::ifstream in(gz_path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(dir / "cut.json.gz", std::ios::binary);
    out << bytes.substr(0, bytes.size() / 2);
  }
  try {
    read_trace_text((dir / "cut.json.gz").string(), 1 << 20);
    FAIL("a truncated gzip stream was accepted");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("cut.json.gz") && Catch::Contains("truncated"));
  }
  // The limit holds for the decompressed text too (the compressed file is well under it).
  CHECK_THROWS_WITH(read_trace_text(gz_path, text.size() - 1), Catch::Contains("once decompressed"));
  fs::remove_all(dir);
}

TEST_CASE("kineto: reductions map onto the reduction synthesizer with their layout and ReduceOp's template", "[kineto][reduction]") {
  // As the Llama-3-8B trace records them (validation/data/h100_sxm_2026-11-23): RMSNorm's variance, greedy argmax.
  const char* mean_kernel =
      "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
      "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned "
      "int, float, 4, 4>)";
  Mapping m = classify_one(one_kernel(mean_kernel, "aten::mean", {{1, 2048, 4096}, {}, {}, {}}, {"float", "ScalarList", "Scalar", ""},
                                      {"", "[-1]", "True", ""}));
  CHECK(m.category == "reduction");
  CHECK(m.status == MapStatus::Mapped);
  CHECK(m.keys == std::map<std::string, std::string>{{"op", "mean"}, {"layout", "inner"}, {"outputs", "2048"}, {"inputs", "4096"},
                                                     {"dtype", "fp32"}, {"vt0", "4"}, {"input_vec_size", "4"}});
  m = classify_one(one_kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::ArgMaxOps<float>, "
                              "unsigned int, long, 4, 2> >(at::native::ReduceOp<c10::BFloat16, at::native::ArgMaxOps<float>, "
                              "unsigned int, long, 4, 2>)",
                              "aten::argmax", {{1, 1, 128256}, {}, {}}, {"c10::BFloat16", "Scalar", "Scalar"}, {"", "-1", "False"}));
  CHECK(m.keys == std::map<std::string, std::string>{{"op", "argmax"}, {"layout", "inner"}, {"outputs", "1"}, {"inputs", "128256"},
                                                     {"dtype", "bf16"}, {"vt0", "4"}, {"input_vec_size", "2"}});
  // Leading dims reduced, the rest contiguous: an outer reduction. An older kernel name carries vt0 only.
  m = classify_one(one_kernel("_ZN2at6native13reduce_kernelILi512ELi1E void at::native::reduce_kernel<512, 1, "
                              "at::native::ReduceOp<c10::Half, at::native::func_wrapper_t<float, sum>, unsigned int, c10::Half, 4> >",
                              "aten::sum", {{8, 16, 4096}, {}, {}, {}}, {"c10::Half", "ScalarList", "Scalar", ""}, {"", "[0, 1]", "False", ""}));
  CHECK(m.status == MapStatus::Mapped);
  CHECK(m.keys == std::map<std::string, std::string>{{"op", "sum"}, {"layout", "outer"}, {"outputs", "4096"}, {"inputs", "128"},
                                                     {"dtype", "fp16"}, {"vt0", "4"}, {"input_vec_size", "4"}});
  // No dim: everything into one output.
  m = classify_one(one_kernel("void at::native::reduce_kernel<512, 1, ReduceOp<float, func_wrapper_t<float, max>>>", "aten::amax",
                              {{64, 1000}, {}, {}}, {"float", "ScalarList", "Scalar"}, {"", "[]", "False"}));
  CHECK(m.keys.at("layout") == "inner");
  CHECK(m.keys.at("outputs") == "1");
  CHECK(m.keys.at("inputs") == "64000");
  CHECK(m.keys.at("op") == "max");
  // sum(self, dtype) reduces everything; max along a dim gives values and indices: argmax's pairs, said so.
  m = classify_one(one_kernel("void at::native::reduce_kernel<512, 1, ReduceOp<float, func_wrapper_t<float, sum>>>", "aten::sum",
                              {{8, 4096}, {}}, {"float", "ScalarType"}, {"", "6"}));
  CHECK(m.keys.at("outputs") == "1");
  CHECK(m.keys.at("inputs") == "32768");
  m = classify_one(one_kernel("void at::native::reduce_kernel<512, 1, ReduceOp<float, MaxOps<float>>>", "aten::max",
                              {{8, 4096}, {}, {}}, {"float", "Scalar", "Scalar"}, {"", "-1", "False"}));
  CHECK(m.status == MapStatus::Approx);
  CHECK(m.keys.at("op") == "argmax");
  CHECK(m.keys.at("outputs") == "8");
  // A dim beyond int64 is one unmapped row, not a failure of the import.
  m = classify_one(one_kernel("void at::native::reduce_kernel<512, 1, ReduceOp<float, MeanOps<float>>>", "aten::mean",
                              {{8, 4096}, {}, {}, {}}, {"float", "ScalarList", "Scalar", ""}, {"", "[99999999999999999999999]", "False", ""}));
  CHECK(m.status == MapStatus::Unmapped);
  // An integer or bool reduction (all, any) is said so.
  m = classify_one(one_kernel("void at::native::reduce_kernel<512, 1, ReduceOp<bool, func_wrapper_t<bool, and_kernel_cuda>>>",
                              "aten::sum", {{128}, {}, {}}, {"long int", "ScalarList", "Scalar"}, {"", "[]", "False"}));
  CHECK(m.status == MapStatus::Unmapped);
  CHECK_THAT(m.note, Catch::Contains("long int"));
}
