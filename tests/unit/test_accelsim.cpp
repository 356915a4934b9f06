// The Accel-Sim / NVBit trace reader (traces/readers/accelsim): opcode tables, every address mode, tracer versions,
// xz streaming, the Accel-Sim writer's round trip, and one clear "FILE:LINE: what" error per malformed input.
#include <lzma.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/unit/temp_dir.h"
#include "sim/core/error.h"
#include "traces/readers/accelsim/accelsim_trace.h"
#include "traces/readers/accelsim/accelsim_writer.h"
#include "traces/readers/accelsim/sass_opcodes.h"
#include "traces/readers/registry.h"

namespace fs = std::filesystem;
using namespace warpsim;
using namespace warpsim::accelsim;
using Catch::Contains;

namespace {

using warpsim::test::TempDir;

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

std::string xz_compress(const std::string& text) {
  std::string out(lzma_stream_buffer_bound(text.size()), '\0');
  std::size_t pos = 0;
  REQUIRE(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const std::uint8_t*>(text.data()),
                                  text.size(), reinterpret_cast<std::uint8_t*>(out.data()), &pos, out.size()) == LZMA_OK);
  out.resize(pos);
  return out;
}

std::string header(int tracer_version, int binary_version = 80, const std::string& grid = "(2,1,1)",
                   bool lineinfo = false) {
  return "-kernel name = handmade\n-kernel id = 1\n-grid dim = " + grid + "\n-block dim = (64,1,1)\n-shmem = 1024\n"
         "-nregs = 32\n-binary version = " + std::to_string(binary_version) + "\n-cuda stream id = 0\n"
         "-shmem base_addr = 0x00007f2b5a000000\n-nvbit version = 1.7\n-accelsim tracer version = " +
         std::to_string(tracer_version) + "\n-enable lineinfo = " + (lineinfo ? "1" : "0") +
         "\n\n#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width "
         "[adrrescompress?] [mem_addresses] immediate\n\n";
}

// Version 5, sm_80: every address mode, a partial EXIT, an MMA, a barrier. CTA 1 comes first in the file and
// lists only warp 1 (warp 0 then has no instructions).
const char* kWarp0 =
    "warp = 0\ninsts = 8\n"
    "0000 ffffffff 1 R2 LDG.E.128 1 R4 16 1 0x7f0000001000 16 0\n"  // base+stride, all lanes
    "0010 0000fff0 1 R6 LDG.E 1 R4 4 1 0x7f0000002000 4 0\n"        // base+stride from lane 4
    "0020 00000005 0 STS 2 R2 R6 4 0 0x100 0x300 0\n"               // list: lanes 0 and 2
    "0030 0000000b 1 R8 LDS 1 R3 4 2 0x200 -8 100 0\n"              // base+deltas: lanes 0, 1, 3
    "0040 00000000 0 EXIT 0 0 0\n"                                  // predicated-off EXIT before the end
    "0050 ffffffff 1 R10 HMMA.16816.F32.BF16 3 R12 R14 R16 0 0\n"
    "0060 ffffffff 0 BAR.SYNC 0 0 1\n"
    "0070 ffffffff 0 EXIT 0 0 0\n";

std::string v5_trace() {
  return header(5) +
         "#BEGIN_TB\n\nthread block = 1,0,0\n\nwarp = 1\ninsts = 2\n"
         "0000 ffffffff 1 R1 IMAD.MOV.U32 2 R255 R255 0 0\n0010 ffffffff 0 EXIT 0 0 0\n\n#END_TB\n\n"
         "#BEGIN_TB\n\nthread block = 0,0,0\n\n" + kWarp0 +
         "\nwarp = 1\ninsts = 1\n0000 ffffffff 0 EXIT 0 0 0\n\n#END_TB\n";
}

std::vector<WarpInst> read_warp(KernelSource& k, std::uint64_t cta, std::uint32_t warp,
                                std::vector<std::vector<std::int32_t>>* deltas = nullptr) {
  const std::unique_ptr<CtaSource> c = k.open_cta(cta);
  const std::unique_ptr<WarpStream> w = c->open_warp(warp);
  std::vector<WarpInst> out;
  WarpInst batch[3];
  for (std::size_t n; (n = w->read(batch, 3)) > 0;)
    for (std::size_t i = 0; i < n; ++i) {
      out.push_back(batch[i]);
      if (deltas) deltas->emplace_back(batch[i].deltas ? std::vector<std::int32_t>(batch[i].deltas, batch[i].deltas + kWarpSize)
                                                       : std::vector<std::int32_t>());
    }
  for (std::size_t i = 0; i < out.size(); ++i)
    if (deltas && out[i].addr_mode == AddrMode::Deltas) out[i].deltas = (*deltas)[i].data();
  return out;
}

void check_warp0(const std::vector<WarpInst>& w) {
  REQUIRE(w.size() == 8);
  // LDG.E.128: 16 bytes per lane, base+stride; the 128-bit load writes R2..R5.
  CHECK(w[0].op == Opcode::LDG);
  CHECK(w[0].access_bytes == 16);
  CHECK(w[0].lane_address(0) == 0x7f0000001000ull);
  CHECK(w[0].lane_address(31) == 0x7f0000001000ull + 31 * 16);
  CHECK(w[0].num_dst == 4);
  CHECK(w[0].dst[3] == 5);
  CHECK(w[0].num_src == 1);
  CHECK(w[0].src[0] == 4);
  // Lanes 4..15 from 0x7f0000002000 in steps of 4.
  CHECK(w[1].active_mask == 0x0000fff0u);
  CHECK(w[1].lane_address(4) == 0x7f0000002000ull);
  CHECK(w[1].lane_address(15) == 0x7f0000002000ull + 11 * 4);
  CHECK(w[1].num_dst == 1);
  // List: lane 0 at 0x100, lane 2 at 0x300.
  CHECK(w[2].op == Opcode::STS);
  CHECK(w[2].space == MemSpace::Shared);
  CHECK(w[2].lane_address(0) == 0x100);
  CHECK(w[2].lane_address(2) == 0x300);
  // Deltas relative to the previous active lane: 0x200, 0x200 - 8, then (lane 3) 0x1f8 + 100.
  CHECK(w[3].lane_address(0) == 0x200);
  CHECK(w[3].lane_address(1) == 0x1f8);
  CHECK(w[3].lane_address(3) == 0x1f8 + 100);
  // An EXIT with instructions after it is a partial exit: the warp goes on.
  CHECK(w[4].op == Opcode::BRA);
  CHECK(w[4].active_mask == 0);
  CHECK(w[5].op == Opcode::HMMA);
  CHECK(w[5].dtype == DType::BF16);
  CHECK((w[5].mma.m == 16 && w[5].mma.n == 8 && w[5].mma.k == 16));
  CHECK(w[5].num_dst == 4);  // m16n8 fp32 accumulators: 16*8/32 = 4 per lane
  CHECK(w[5].num_src == 3);
  CHECK(w[6].op == Opcode::BAR);
  CHECK(w[6].aux == 1);  // the v5 immediate
  CHECK(w[7].op == Opcode::EXIT);
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(w[i].pc == 0x10 * i);
}

}  // namespace

TEST_CASE("accelsim opcode tables: every compiled-in table parses and maps the common opcodes", "[accelsim]") {
  const auto& tables = SassOpcodeTable::all();
  REQUIRE(tables.size() >= 6);
  for (const char* arch : {"pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell"}) {
    INFO(arch);
    const auto it = std::find_if(tables.begin(), tables.end(), [&](const SassOpcodeTable& t) { return t.arch() == arch; });
    REQUIRE(it != tables.end());
    CHECK(it->find("EXIT")->op == Opcode::EXIT);
    CHECK(it->find("FFMA.FTZ")->op == Opcode::FFMA);
    CHECK(it->find("LDG.E.64.CONSTANT")->op == Opcode::LDG);
    CHECK(it->find("NOT_AN_OPCODE") == nullptr);
  }
  const SassOpcodeTable& ampere = SassOpcodeTable::for_binary_version(80);
  CHECK(ampere.find("BAR.ARV")->op == Opcode::BAR_ARV);  // the longest listed prefix wins (BAR is listed too)
  CHECK(ampere.find("BAR.SYNC.DEFER_BLOCKING")->op == Opcode::BAR);
  CHECK(ampere.find("IMAD.MOV.U32")->op == Opcode::IMAD);  // the compiler's moves run on the IMAD (FMA) pipe
  CHECK(ampere.find("IMAD.WIDE.U32")->op == Opcode::IMAD);
  CHECK(ampere.find("LDGSTS.E.BYPASS.LTC128B.128")->op == Opcode::LDGSTS);
  CHECK(SassOpcodeTable::for_binary_version(61).find("XMAD.PSL.CBCC")->op == Opcode::IMAD);
  CHECK(SassOpcodeTable::for_binary_version(61).find("LDGSTS") == nullptr);  // no cp.async before Ampere
  CHECK(SassOpcodeTable::for_binary_version(90).find("HGMMA.64x128x16.F32.BF16")->op == Opcode::HGMMA);
  CHECK(SassOpcodeTable::for_binary_version(90).find("UTCHMMA") == nullptr);  // tcgen05 is Blackwell's
  CHECK(SassOpcodeTable::for_binary_version(100).find("UTCQMMA")->op == Opcode::UTCMMA);
  CHECK(SassOpcodeTable::for_binary_version(103).find("LDTM.16dp32bit.x16")->op == Opcode::LDTM);
  CHECK(SassOpcodeTable::for_binary_version(100).find("HGMMA.64x128x16.F32.BF16")->op == Opcode::HGMMA);
  CHECK_THROWS_WITH(SassOpcodeTable::for_binary_version(50), Contains("binary version 50 has no SASS opcode table"));
}

TEST_CASE("accelsim opcode tables: a malformed row names the file and line", "[accelsim]") {
  const std::string head = "# comment\nopcode,class,latency_class,memory_space,width,untimed,note\n";
  CHECK_THROWS_WITH(SassOpcodeTable("x", "t.csv", head + "FFMA,int,FFMA,none,0,,\n"),
                    Contains("t.csv:3: class 'int' differs from FFMA's class 'fp32'"));
  CHECK_THROWS_WITH(SassOpcodeTable("x", "t.csv", head + "LDG,ldst,LDG,shared,4,,\n"), Contains("t.csv:3: memory_space"));
  CHECK_THROWS_WITH(SassOpcodeTable("x", "t.csv", head + "LDG,ldst,LDG,global,32,,\n"), Contains("t.csv:3: width 32"));
  CHECK_THROWS_WITH(SassOpcodeTable("x", "t.csv", head + "FOO,int,FOO,none,0,,\n"), Contains("t.csv:3: latency_class 'FOO'"));
  CHECK_THROWS_WITH(SassOpcodeTable("x", "t.csv", head + "MOV,int,MOV,none,0,,\nMOV,int,MOV,none,0,,\n"),
                    Contains("t.csv:4: opcode MOV listed twice"));
  CHECK_THROWS_WITH(SassOpcodeTable("x", "t.csv", head + "MOV,int\n"), Contains("t.csv:3: 2 fields"));
  CHECK_THROWS_WITH(SassOpcodeTable("x", "t.csv", head + "MOV,int,MOV,none,0,yes,\n"), Contains("t.csv:3: untimed 'yes'"));
  CHECK_THROWS_WITH(SassOpcodeTable("x", "t.csv", head + "MOV,int,MOV,none,0,report,\n"),
                    Contains("t.csv:3: untimed 'report' on a row timed as MOV"));
  // The note is the rest of the line, commas included.
  const SassOpcodeTable ok("x", "t.csv", head + "MOV,int,MOV,none,0,,a note, with a comma\nFENCE,sync,NOP,none,0,report,\n");
  REQUIRE(ok.entries().size() == 2);
  CHECK(ok.entries()[0].note == "a note, with a comma");
  CHECK_FALSE(ok.entries()[0].report_untimed);
  CHECK(ok.entries()[1].report_untimed);
  // Every table: only NOP rows are reported untimed, and SASS's own NOP is not.
  for (const SassOpcodeTable& t : SassOpcodeTable::all()) CHECK_FALSE(t.find("NOP")->report_untimed);
}

TEST_CASE("accelsim trace: tracer v5, every address mode, registers, CTAs indexed by their coordinates", "[accelsim]") {
  TempDir dir;
  write_file(dir / "kernel-1.traceg", v5_trace());
  write_file(dir / "kernelslist.g", "MemcpyHtoD,0x00007f2b2d500000,400\nkernel-1.traceg\n");
  AccelSimTrace trace((dir / "kernelslist.g").string());
  REQUIRE(trace.num_kernels() == 1);
  CHECK(trace.memcpy_commands() == 1);
  CHECK(trace.kernel(0).warp_instructions == 2 + 8 + 1);
  const auto k = trace.open_kernel(0);
  CHECK(k->info().name == "handmade");
  CHECK(k->info().grid.x == 2);
  CHECK(k->info().block.x == 64);
  CHECK(k->info().registers_per_thread == 32);
  CHECK(k->info().shared_mem_bytes == 1024);
  CHECK(k->info().target_arch == "sm_80");
  std::vector<std::vector<std::int32_t>> deltas;
  check_warp0(read_warp(*k, 0, 0, &deltas));
  CHECK(read_warp(*k, 0, 1).size() == 1);
  CHECK(read_warp(*k, 1, 0).empty());  // warp 0 of CTA 1 is not in the file
  const auto w = read_warp(*k, 1, 1);
  REQUIRE(w.size() == 2);
  CHECK(w[0].op == Opcode::IMAD);  // IMAD.MOV.U32: a move on the IMAD pipe
  // The registry picks this reader for kernelslist.g and for a single kernel file.
  CHECK(TraceReaderRegistry::instance().reader_for((dir / "kernelslist.g").string()).name == "accelsim");
  CHECK(TraceReaderRegistry::instance().open((dir / "kernel-1.traceg").string())->num_kernels() == 1);
  // A tracer's directory opens by its kernelslist.g.
  CHECK(TraceReaderRegistry::instance().resolve(dir.path("")) == (dir / "" / "kernelslist.g").string());
  CHECK(TraceReaderRegistry::instance().open(dir.path(""))->num_kernels() == 1);
}

TEST_CASE("trace readers: a directory without a trace index is one error naming it and what was expected",
          "[accelsim][errors]") {
  TempDir dir;
  write_file(dir / "kernel-1.traceg", v5_trace());  // a kernel file, but no kernelslist.g
  CHECK_THROWS_WITH(TraceReaderRegistry::instance().open(dir.path("")),
                    Contains("cannot open trace directory '" + dir.path("") + "'") &&
                        Contains("it holds no trace index") && Contains("kernelslist.g (accelsim)"));
}

TEST_CASE("accelsim trace: xz files are streamed and read as the plain text", "[accelsim]") {
  TempDir dir;
  // Many CTAs, so that the text is far larger than what one CTA fetch holds.
  std::string text = header(5, 80, "(64,1,1)");
  for (int c = 0; c < 64; ++c) {
    text += "#BEGIN_TB\nthread block = " + std::to_string(c) + ",0,0\n" + kWarp0 + "warp = 1\ninsts = 1\n0000 ffffffff 0 EXIT 0 0 0\n#END_TB\n";
  }
  write_file(dir / "kernel-1.traceg.xz", xz_compress(text));
  write_file(dir / "kernelslist.g", "kernel-1.traceg.xz\n");
  AccelSimTrace trace((dir / "kernelslist.g").string());
  CHECK(trace.kernel(0).warp_instructions == 64 * 9);
  const auto k = trace.open_kernel(0);
  for (std::uint64_t c : {0, 1, 63, 2}) {  // out of order: the decoder restarts
    std::vector<std::vector<std::int32_t>> deltas;
    check_warp0(read_warp(*k, c, 0, &deltas));
  }
}

TEST_CASE("accelsim trace: tracer versions 3 and 2 and source line numbers", "[accelsim]") {
  TempDir dir;
  SECTION("version 3 (no immediate), Pascal opcodes") {
    write_file(dir / "k.traceg", header(3, 61, "(1,1,1)") +
                                     "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 3\n"
                                     "0098 ffffffff 1 R4 LDS.U.128 1 R4 16 1 0x40 16\n"
                                     "00d0 ffffffff 1 R0 XMAD.MRG 2 R2 R4 0\n0058 ffffffff 0 EXIT 0 0\n#END_TB\n");
    AccelSimTrace trace((dir / "k.traceg").string());
    const auto w = read_warp(*trace.open_kernel(0), 0, 0);
    REQUIRE(w.size() == 3);
    CHECK(w[0].op == Opcode::LDS);
    CHECK(w[0].access_bytes == 16);
    CHECK(w[0].lane_address(1) == 0x50);
    CHECK(w[1].op == Opcode::IMAD);
    CHECK(w[2].op == Opcode::EXIT);
  }
  SECTION("version 2: thread block and warp ids before each line") {
    write_file(dir / "k.traceg", header(2, 70, "(1,1,1)") +
                                     "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n"
                                     "0 0 0 0 0010 ffffffff 1 R2 FFMA 3 R1 R2 R3 0\n0 0 0 0 0020 ffffffff 0 EXIT 0 0\n#END_TB\n");
    AccelSimTrace trace((dir / "k.traceg").string());
    const auto w = read_warp(*trace.open_kernel(0), 0, 0);
    REQUIRE(w.size() == 2);
    CHECK(w[0].op == Opcode::FFMA);
    CHECK(w[0].pc == 0x10);
  }
  SECTION("line numbers (enable lineinfo = 1)") {
    write_file(dir / "k.traceg", header(5, 90, "(1,1,1)", true) +
                                     "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n"
                                     "17 0010 ffffffff 1 R2 HGMMA.64x128x16.F32.BF16 2 R24 R26 0 0\n18 0020 ffffffff 0 EXIT 0 0 0\n#END_TB\n");
    AccelSimTrace trace((dir / "k.traceg").string());
    const auto w = read_warp(*trace.open_kernel(0), 0, 0);
    REQUIRE(w.size() == 2);
    CHECK(w[0].op == Opcode::HGMMA);
    CHECK((w[0].mma.m == 64 && w[0].mma.n == 128 && w[0].mma.k == 16));
  }
}

TEST_CASE("accelsim writer: a trace written as Accel-Sim reads back the same records", "[accelsim]") {
  TempDir dir;
  write_file(dir / "kernel-1.traceg", v5_trace());
  AccelSimTrace original((dir / "kernel-1.traceg").string());
  const AccelSimWriteStats st = write_accelsim_trace((dir / "out").string(), original);
  CHECK(st.kernels == 1);
  CHECK(st.instructions == 11);
  AccelSimTrace copy((dir / "out" / "kernelslist.g").string());
  CHECK(copy.kernel(0).warp_instructions == 11);
  std::vector<std::vector<std::int32_t>> d1, d2;
  const auto a = read_warp(*original.open_kernel(0), 0, 0, &d1);
  const auto b = read_warp(*copy.open_kernel(0), 0, 0, &d2);
  check_warp0(b);
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("instruction " << i);
    CHECK(a[i].op == b[i].op);
    CHECK(a[i].num_dst == b[i].num_dst);
    CHECK(a[i].access_bytes == b[i].access_bytes);
    for (int l = 0; l < kWarpSize; ++l)
      if (a[i].is_memory() && (a[i].active_mask >> l & 1u)) CHECK(a[i].lane_address(l) == b[i].lane_address(l));
  }
}

TEST_CASE("accelsim trace: malformed input is one error naming the file and line", "[accelsim]") {
  TempDir dir;
  const std::string trace = v5_trace();
  auto expect_error = [&](const std::string& text, const std::string& where, const std::string& what,
                          const std::string& name = "kernel-1.traceg") {
    write_file(dir / name, text);
    write_file(dir / "kernelslist.g", name + "\n");
    INFO(what);
    CHECK_THROWS_WITH(AccelSimTrace((dir / "kernelslist.g").string()), Contains(where) && Contains(what));
    fs::remove(dir / name);
  };
  auto replace = [](std::string s, const std::string& from, const std::string& to) {
    const std::size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  const std::string file = (dir / "kernel-1.traceg").string();
  // Line numbers: the header is 15 lines; CTA 1 starts at line 16, CTA 0 at line 27; CTA 0's thread block is line 29, its warp 0
  // instructions lines 33 (LDG.E.128) to 40 (EXIT), its warp 1 line 42.
  expect_error(replace(trace, "0020 00000005", "00zz 00000005"), file + ":35:", "'00zz' is not a valid PC");
  expect_error(replace(trace, "insts = 8", "insts = 9"), file + ":42:", "after 8 of warp 0's 9 instruction lines");
  expect_error(replace(trace, "insts = 8", "insts = 7"), file + ":40:", "more instruction lines than warp 0's 'insts = 7'");
  expect_error(trace.substr(0, trace.find("0060 ffffffff")), file + ":", "instruction lines short");
  expect_error(replace(trace, "HMMA.16816", "FOO.16816"), file + ":38:", "unknown SASS opcode 'FOO.16816.F32.BF16'");
  expect_error(replace(trace, "4 2 0x200", "4 7 0x200"), file + ":36:", "address mode 7 unknown");
  expect_error(replace(trace, "4 2 0x200 -8 100 0", "4 2 0x200 -8 0"), file + ":36:", "line ends where");
  expect_error(replace(trace, "0 0 1\n", "0 0 1 5\n"), file + ":39:", "unexpected '5'");
  expect_error(replace(trace, "tracer version = 5", "tracer version = 6"), file + ":", "tracer version 6 unknown");
  expect_error(replace(trace, "thread block = 1,0,0", "thread block = 0,0,0"), file + ":27:",
               "thread block (0,0,0) listed twice (its other #BEGIN_TB is at line 16)");
  expect_error(replace(trace, "block dim = (64,1,1)", "block dim = (65536,65536,1)"), file + ":", "more than 65536 warps per CTA");
  expect_error(replace(trace, "0 0 1\n", "0 0 1 " + std::string(2 << 20, '7') + "\n"), file + ":39:", "line longer than");
  expect_error(replace(trace, "grid dim = (2,1,1)", "grid dim = (3,1,1)"), file + ":", "thread block (2,0,0) of the grid (3,1,1) is missing");
  expect_error(replace(trace, "binary version = 80", "binary version = 50"), file + ":", "binary version 50 has no SASS opcode table");
  expect_error(replace(trace, "1 R2 LDG", "1 Q2 LDG"), file + ":33:", "'Q2' is not a register");

  // xz: corrupt and truncated compressed data.
  const std::string xz = xz_compress(trace);
  std::string corrupt = xz;
  corrupt[corrupt.size() / 2] ^= 0x55;
  const std::string xz_file = (dir / "kernel-1.traceg.xz").string();
  expect_error(corrupt, xz_file + ":", "xz: ", "kernel-1.traceg.xz");
  expect_error(xz.substr(0, xz.size() - 20), xz_file + ":", "xz: ", "kernel-1.traceg.xz");
  expect_error("not xz at all", xz_file + ":1:", "xz: not in the xz format", "kernel-1.traceg.xz");

  // kernelslist.g: missing file, directory, bad lines.
  const std::string list = (dir / "kernelslist.g").string();
  write_file(dir / "kernelslist.g", "MemcpyHtoD,0x1000,64\nkernel-9.traceg\n");
  CHECK_THROWS_WITH(AccelSimTrace(list), Contains(list + ":2: kernel file") && Contains("kernel-9.traceg' not found"));
  fs::create_directories(dir / "kernel-5.traceg");
  write_file(dir / "kernelslist.g", "kernel-5.traceg\n");
  CHECK_THROWS_WITH(AccelSimTrace(list), Contains(list + ":1: '") && Contains("is a directory"));
  write_file(dir / "kernelslist.g", "MemcpyHtoD,zz,4\n");
  CHECK_THROWS_WITH(AccelSimTrace(list), Contains(list + ":1: 'MemcpyHtoD,zz,4': expected MemcpyHtoD"));
  write_file(dir / "kernelslist.g", "kernel-1.trace\n");
  CHECK_THROWS_WITH(AccelSimTrace(list), Contains(list + ":1: 'kernel-1.trace': expected a kernel file"));
}

TEST_CASE("accelsim trace: named barriers with a thread count and BAR.ARV", "[accelsim][barrier]") {
  // The v5 immediate is the last immediate operand: the id of `BAR.SYNC id`, the count of `BAR.SYNC id, count`
  // and `BAR.ARV id, count` (their id is not in the trace: barrier 0).
  TempDir dir;
  const std::string text = header(5, 90, "(1,1,1)") +
                           "#BEGIN_TB\n\nthread block = 0,0,0\n\nwarp = 0\ninsts = 4\n"
                           "0000 ffffffff 0 BAR.SYNC.DEFER_BLOCKING 0 0 3\n"
                           "0010 ffffffff 0 BAR.ARV 0 0 64\n"
                           "0020 ffffffff 0 BAR.SYNC 0 0 256\n"
                           "0030 ffffffff 0 EXIT 0 0 0\n\n#END_TB\n";
  write_file(dir / "kernel-1.traceg", text);
  AccelSimTrace trace((dir / "kernel-1.traceg").string());
  const auto w = read_warp(*trace.open_kernel(0), 0, 0);
  REQUIRE(w.size() == 4);
  CHECK(w[0].op == Opcode::BAR);
  CHECK(w[0].aux == 3);
  CHECK(w[0].group == 0);  // no count: the whole CTA
  CHECK(w[1].op == Opcode::BAR_ARV);
  CHECK(w[1].aux == 0);
  CHECK(w[1].group == 2);  // 64 threads
  CHECK(w[2].op == Opcode::BAR);
  CHECK(w[2].aux == 0);
  CHECK(w[2].group == 8);  // 256 threads

  // Written back: BAR.ARV and BAR.SYNC with the count as their immediate, read back the same.
  write_accelsim_trace((dir / "out").string(), trace);
  AccelSimTrace copy((dir / "out" / "kernelslist.g").string());
  const auto c = read_warp(*copy.open_kernel(0), 0, 0);
  REQUIRE(c.size() == 4);
  for (std::size_t i = 0; i < 3; ++i) {
    INFO("instruction " << i);
    CHECK(c[i].op == w[i].op);
    CHECK(c[i].aux == w[i].aux);
    CHECK(c[i].group == w[i].group);
  }

  // bar.arrive needs a count: an immediate that is none (a barrier id, or 0 before v5) is an error.
  std::string bad = text;
  bad.replace(bad.find("BAR.ARV 0 0 64"), 14, "BAR.ARV 0 0 1");
  write_file(dir / "kernel-1.traceg", bad);
  const std::string file = (dir / "kernel-1.traceg").string();
  CHECK_THROWS_WITH(AccelSimTrace(file), Contains(file + ":") && Contains("BAR.ARV: immediate 1 is not a thread count"));
}

TEST_CASE("accelsim trace: LDG/STG cache-operator modifiers become the records' cache operators", "[accelsim][cache_op]") {
  TempDir dir;
  const std::string text = header(5, 90, "(1,1,1)") +
                           "#BEGIN_TB\n\nthread block = 0,0,0\n\nwarp = 0\ninsts = 10\n"
                           "0000 ffffffff 1 R2 LDG.E.EF.64 1 R4 8 1 0x7f0000001000 8 0\n"
                           "0010 ffffffff 1 R6 LDG.E.LU 1 R4 4 1 0x7f0000002000 4 0\n"
                           "0020 ffffffff 1 R8 LDG.E.EL.128 1 R4 16 1 0x7f0000003000 16 0\n"
                           "0030 ffffffff 1 R12 LDG.E.NA 1 R4 4 1 0x7f0000004000 4 0\n"
                           "0040 ffffffff 1 R14 LDG.E.STRONG.GPU 1 R4 4 1 0x7f0000005000 4 0\n"
                           "0050 ffffffff 1 R16 LDG.E.64.STRONG.SYS 1 R4 8 1 0x7f0000006000 8 0\n"
                           "0060 ffffffff 1 R18 LDG.E.STRONG.SM 1 R4 4 1 0x7f0000007000 4 0\n"
                           "0070 ffffffff 1 R20 LDG.E.CONSTANT 1 R4 4 1 0x7f0000008000 4 0\n"
                           "0080 ffffffff 0 STG.E.EF 2 R4 R6 4 1 0x7f0000009000 4 0\n"
                           "0090 ffffffff 0 EXIT 0 0 0\n\n#END_TB\n";
  write_file(dir / "kernel-1.traceg", text);
  AccelSimTrace trace((dir / "kernel-1.traceg").string());
  const auto w = read_warp(*trace.open_kernel(0), 0, 0);
  REQUIRE(w.size() == 10);
  const CacheOp expected[] = {CacheOp::EvictFirst, CacheOp::EvictFirst, CacheOp::EvictLast, CacheOp::NoAllocate,
                              CacheOp::Bypass,     CacheOp::Bypass,     CacheOp::Default,   CacheOp::Default,
                              CacheOp::EvictFirst, CacheOp::Default};
  for (std::size_t i = 0; i < w.size(); ++i) {
    INFO("instruction " << i << " " << opcode_info(w[i].op).name);
    CHECK(w[i].cache == expected[i]);
  }
  CHECK(w[2].access_bytes == 16);  // the width modifier is still read beside the cache operator
  CHECK(w[5].access_bytes == 8);
  // Written back as Accel-Sim and read again: the same operators.
  write_accelsim_trace((dir / "out").string(), trace);
  AccelSimTrace copy((dir / "out" / "kernelslist.g").string());
  const auto c = read_warp(*copy.open_kernel(0), 0, 0);
  REQUIRE(c.size() == w.size());
  for (std::size_t i = 0; i < c.size(); ++i) {
    INFO("instruction " << i);
    CHECK(c[i].cache == w[i].cache);
    CHECK(c[i].access_bytes == w[i].access_bytes);
  }
}

namespace {

// A v5 kernel file of one CTA (grid 1x1x1) holding `warps` ("warp = N\ninsts = ...\n<lines>\n"), written as `name`
// in `dir` and opened.
AccelSimTrace one_cta_trace(const TempDir& dir, const std::string& name, int binary_version, const std::string& warps) {
  write_file(dir / name, header(5, binary_version, "(1,1,1)") + "#BEGIN_TB\n\nthread block = 0,0,0\n\n" + warps + "#END_TB\n");
  return AccelSimTrace((dir / name).string());
}

}  // namespace

TEST_CASE("accelsim trace: instructions run as untimed NOPs are counted per opcode with the reason",
          "[accelsim][untimed]") {
  // sm_90: a TMA load, an mbarrier wait and a wgmma wait run untimed (the trace has no box, barrier id or group
  // count); SASS's own NOP and an FFMA are not counted.
  TempDir dir;
  AccelSimTrace trace = one_cta_trace(dir, "kernel-1.traceg", 90,
                             "warp = 0\ninsts = 7\n"
                             "0000 00000001 0 UTMALDG.2D 2 UR4 UR6 0 0\n"
                             "0010 ffffffff 0 SYNCS.PHASECHK.TRANS64.TRYWAIT 1 UR4 0 0\n"
                             "0020 00000001 0 UTMALDG.2D 2 UR4 UR6 0 0\n"
                             "0030 ffffffff 1 R2 FFMA 3 R2 R3 R4 0 0\n"
                             "0040 ffffffff 0 WARPGROUP.DEPBAR.LE 0 0 1\n"
                             "0050 ffffffff 0 NOP 0 0 0\n"
                             "0060 ffffffff 0 EXIT 0 0 0\n\n"
                             "warp = 1\ninsts = 1\n0000 ffffffff 0 EXIT 0 0 0\n\n");
  const std::vector<UntimedOpcode> untimed = trace.untimed(0);
  REQUIRE(untimed.size() == 3);  // in table order
  CHECK(untimed[0].opcode == "SYNCS");
  CHECK(untimed[0].instructions == 1);
  CHECK(untimed[1].opcode == "UTMALDG");
  CHECK(untimed[1].instructions == 2);
  CHECK_THAT(untimed[1].why, Contains("no box shape"));
  CHECK(untimed[2].opcode == "WARPGROUP");
  const auto w = read_warp(*trace.open_kernel(0), 0, 0);
  REQUIRE(w.size() == 7);
  CHECK(w[0].op == Opcode::NOP);
  CHECK(w[3].op == Opcode::FFMA);
}

TEST_CASE("accelsim trace: Blackwell's tcgen05 opcodes, timed with a shape modifier and untimed without",
          "[accelsim][untimed][tcgen05]") {
  TempDir dir;
  AccelSimTrace trace = one_cta_trace(dir, "kernel-1.traceg", 100,
                                "warp = 0\ninsts = 5\n"
                                "0000 00000001 0 UTCHMMA.128x256x16.BF16 0 0 0\n"
                                "0010 00000001 0 UTCQMMA 0 0 0\n"  // as SASS spells it: the shape is in a descriptor
                                "0020 00000001 0 UTCBAR 1 UR4 0 0\n"
                                "0030 ffffffff 1 R8 LDTM.16dp32bit.x32 0 0 0\n"
                                "0040 ffffffff 0 EXIT 0 0 0\n\n");
  const auto w = read_warp(*trace.open_kernel(0), 0, 0);
  REQUIRE(w.size() == 5);
  CHECK(w[0].op == Opcode::UTCMMA);
  CHECK((w[0].mma.m == 128 && w[0].mma.n == 256 && w[0].mma.k == 16));
  CHECK(w[0].dtype == DType::BF16);
  CHECK(w[1].op == Opcode::NOP);
  CHECK(w[2].op == Opcode::NOP);
  CHECK(w[3].op == Opcode::LDTM);
  CHECK(w[3].aux == 32);
  const std::vector<UntimedOpcode> untimed = trace.untimed(0);
  REQUIRE(untimed.size() == 2);
  CHECK(untimed[0].opcode == "UTCBAR");
  CHECK(untimed[1].opcode == "UTCQMMA");
  CHECK(untimed[1].instructions == 1);
  // An LDTM without its column count is an error naming the line.
  // LDTM's destination expands to its columns' registers (at most a record's 4); without .xN it loads one column.
  CHECK(w[3].num_dst == 4);
  CHECK(w[3].dst[3] == 11);
  AccelSimTrace bare = one_cta_trace(dir, "kernel-2.traceg", 100,
                                     "warp = 0\ninsts = 2\n0000 ffffffff 1 R8 LDTM 0 0 0\n0010 ffffffff 0 EXIT 0 0 0\n\n");
  const auto b = read_warp(*bare.open_kernel(0), 0, 0);
  CHECK(b[0].aux == 1);
  CHECK(b[0].num_dst == 1);
}
