// Instruction-emitting toolkit: the out-of-line address helpers (see emit.h).
#include "traces/synth/emit.h"

#include <algorithm>

#include "sim/core/error.h"

namespace warpsim::synth {

std::uint32_t matrix_edge_lane_mask(const RowMajorMatrix& m, std::uint64_t row, std::uint64_t col,
                                    std::uint32_t lanes_per_row, std::uint32_t lane_elems) {
  std::uint32_t mask = 0;
  for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) {
    const std::uint64_t r = row + lane / lanes_per_row;
    const std::uint64_t c = col + std::uint64_t{lane % lanes_per_row} * lane_elems;
    if (r < m.rows && c < m.cols) mask |= 1u << lane;
  }
  return mask;
}

CoalescedTileCopy::CoalescedTileCopy(std::uint32_t rows, std::uint32_t row_bytes, std::uint32_t copying_threads,
                                     std::uint32_t chunk_bytes)
    : chunks_per_row(row_bytes / chunk_bytes),
      lanes_per_row(std::min<std::uint32_t>(row_bytes / chunk_bytes, kWarpSize)),
      threads(copying_threads),
      copies_per_thread(rows * (row_bytes / chunk_bytes) / copying_threads) {
  WARPSIM_ASSERT(chunk_bytes > 0 && row_bytes % chunk_bytes == 0 && copying_threads > 0,
                 "tile rows must be whole chunks");
}

std::uint32_t swizzled_chunk_offset(std::uint32_t row, std::uint32_t chunk, std::uint32_t chunks_per_row) {
  const std::uint32_t linear = row * chunks_per_row + chunk;
  const std::uint32_t line = linear / kSwizzleChunks, slot = linear % kSwizzleChunks;
  const std::uint32_t rows_per_line = std::max(1u, kSwizzleChunks / chunks_per_row);
  const std::uint32_t key = (row / rows_per_line) % kSwizzleChunks;
  return line * kSwizzleLineBytes + (slot ^ key) * kVecBytes;
}

std::array<std::int32_t, kWarpSize> swizzled_rows_offsets(std::uint32_t tile_offset, std::uint32_t row0,
                                                          std::uint32_t first_byte, std::uint32_t chunks_per_row,
                                                          std::uint32_t lanes_per_row, std::uint32_t lane_bytes) {
  WARPSIM_ASSERT(lanes_per_row > 0 && lane_bytes > 0 && kVecBytes % lane_bytes == 0 && first_byte % lane_bytes == 0,
                 "each lane's bytes must lie in one 16-byte chunk");
  std::array<std::int32_t, kWarpSize> lanes{};
  for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) {
    const std::uint32_t byte = first_byte + (lane % lanes_per_row) * lane_bytes;
    lanes[lane] = static_cast<std::int32_t>(
        tile_offset + swizzled_chunk_offset(row0 + lane / lanes_per_row, byte / kVecBytes, chunks_per_row) +
        byte % kVecBytes);
  }
  return lanes;
}

std::array<std::int32_t, kWarpSize> ldmatrix_x4_offsets(std::uint32_t tile_offset, std::uint32_t row0,
                                                        std::uint32_t chunk0, std::uint32_t chunks_per_row,
                                                        LdsmOrder order) {
  std::array<std::int32_t, kWarpSize> lanes{};
  for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) {
    const std::uint32_t q = lane / kLdsmRows, r = lane % kLdsmRows;  // matrix q, its row r
    const bool rows_first = order == LdsmOrder::RowHalvesFirst;
    const std::uint32_t half = rows_first ? q % 2 : q / 2;
    const std::uint32_t chunk = rows_first ? q / 2 : q % 2;
    lanes[lane] = static_cast<std::int32_t>(
        tile_offset + swizzled_chunk_offset(row0 + half * kLdsmRows + r, chunk0 + chunk, chunks_per_row));
  }
  return lanes;
}

}  // namespace warpsim::synth
