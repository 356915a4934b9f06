// An independent builder of native trace files from traces/FORMAT.md alone, for hand-crafted (and malformed)
// content: shared by the unit tests of the reader and the integration tests that feed such files to warpsim.
// Deliberately no simulator code, so that it checks the reader against the specification.
#pragma once

#include <zstd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace crafted {

using Bytes = std::vector<std::uint8_t>;

struct Dim {
  std::uint32_t x = 1, y = 1, z = 1;
};


inline void put_le(Bytes& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
inline void put_var(Bytes& out, std::uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<std::uint8_t>(v | 0x80));
  out.push_back(static_cast<std::uint8_t>(v));
}
inline void put_str(Bytes& out, const std::string& s) {
  put_var(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}
inline Bytes zstd_frame(const Bytes& raw) {
  Bytes out(ZSTD_compressBound(raw.size()));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  const std::size_t n = ZSTD_compress2(cctx, out.data(), out.size(), raw.data(), raw.size());
  ZSTD_freeCCtx(cctx);
  REQUIRE(!ZSTD_isError(n));
  out.resize(n);
  return out;
}

struct CraftedFile {
  std::uint16_t major = 1, minor = 0;
  bool has_kernel = true;     // false: a well-formed file with an empty kernel table
  std::string name = "crafted";
  Dim grid{1, 1, 1};
  Dim block{32, 1, 1};        // one warp per CTA
  std::uint32_t registers = 32;
  Bytes info_extra;           // appended to the KINF payload (minor-version extension)
  std::vector<Bytes> ctas;    // decompressed CTA payloads, grid.count() of them
};

// One CTA payload: warp table, then each warp's records.
inline Bytes cta_payload(const std::vector<std::pair<std::uint32_t, Bytes>>& warps) {
  Bytes out;
  put_le(out, warps.size(), 4);
  std::uint64_t offset = 4 + 8 * warps.size();
  for (const auto& [count, records] : warps) {
    put_le(out, offset, 4);
    put_le(out, count, 4);
    offset += records.size();
  }
  for (const auto& w : warps) out.insert(out.end(), w.second.begin(), w.second.end());
  return out;
}

inline Bytes build_file(const CraftedFile& f) {
  const std::uint8_t magic[8] = {0x89, 'W', 'S', 'T', 'R', '\r', '\n', 0x1a};
  Bytes out(magic, magic + 8);
  put_le(out, f.major, 2);
  put_le(out, f.minor, 2);
  put_le(out, 0, 4);
  auto block = [&out](const char* tag, std::uint32_t kernel, std::uint64_t cta, const Bytes& payload,
                      std::uint32_t raw) {
    const std::uint64_t at = out.size();
    out.insert(out.end(), tag, tag + 4);
    put_le(out, kernel, 4);
    put_le(out, cta, 8);
    put_le(out, payload.size(), 4);
    put_le(out, raw, 4);
    out.insert(out.end(), payload.begin(), payload.end());
    return at;
  };
  Bytes index;
  const auto finish = [&] {
    const std::uint64_t index_at =
        block("INDX", f.has_kernel ? 1 : 0, 0, index, static_cast<std::uint32_t>(index.size()));
    put_le(out, index_at, 8);
    put_le(out, index.size(), 8);
    put_le(out, f.has_kernel ? 1 : 0, 4);
    put_le(out, f.major, 2);
    put_le(out, f.minor, 2);
    const char* footer_magic = "WSTRINDX";
    out.insert(out.end(), footer_magic, footer_magic + 8);
    return out;
  };
  if (!f.has_kernel) return finish();
  Bytes info;
  put_str(info, f.name);
  for (std::uint32_t v : {f.grid.x, f.grid.y, f.grid.z, f.block.x, f.block.y, f.block.z, f.registers, 0u})
    put_var(info, v);
  put_str(info, "sm_90");
  put_var(info, 0);
  info.insert(info.end(), f.info_extra.begin(), f.info_extra.end());
  const std::uint64_t info_at = block("KINF", 0, 0, zstd_frame(info), static_cast<std::uint32_t>(info.size()));
  Bytes cta_table;
  for (std::size_t c = 0; c < f.ctas.size(); ++c) {
    const Bytes frame = zstd_frame(f.ctas[c]);
    put_le(cta_table, block("CTAB", 0, c, frame, static_cast<std::uint32_t>(f.ctas[c].size())), 8);
    put_le(cta_table, frame.size(), 4);
    put_le(cta_table, f.ctas[c].size(), 4);
  }
  put_le(index, info_at, 8);
  put_le(index, 32, 8);  // CTA table right after the one kernel entry
  put_le(index, f.ctas.size(), 8);
  put_le(index, 0, 8);
  index.insert(index.end(), cta_table.begin(), cta_table.end());
  return finish();
}

// A one-CTA, one-warp file of version 1.`minor` whose warp holds `count` records encoded as `records`.
inline Bytes one_warp_file(std::uint32_t count, const Bytes& records, std::uint16_t minor = 0) {
  CraftedFile f;
  f.minor = minor;
  f.ctas.push_back(cta_payload({{count, records}}));
  return build_file(f);
}

}  // namespace crafted
