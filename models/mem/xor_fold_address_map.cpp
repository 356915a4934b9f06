// Address map "xor_fold": lines interleave over L2 slices and over DRAM channels at line granularity, with an
// XOR fold of higher address bits so that power-of-two strides do not camp on one slice or channel (NVIDIA
// hashes physical addresses over L2 slices in a similar, undocumented way).
//
// Inside a channel (hbm.bank_groups x hbm.banks_per_group banks, rows of hbm.row_size bytes), the channel's
// n-th line (n = fold(line) / channels, the quotient of the hash whose remainder picked the channel) is placed, from the low bits up, as
//   bank group = n mod G,  line-in-row = (n / G) mod (row_size / line),  bank = next bits,  row = the rest,
// and then the bank-group and bank bits are XORed with the low row bits. So consecutive lines of a stream in
// one channel rotate over the bank groups (a column command every tCCD_S instead of tCCD_L) while staying in
// the same row of each group's bank (row hits), and streams or strides a whole row-set apart (G x row_size x
// channels bytes) land in different banks instead of conflicting in one — the XOR bank hashing of GPU memory
// controllers (e.g. the permutation-based interleaving of Zhang et al., MICRO 2000, used by GPGPU-Sim).
#include <string>

#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"

namespace warpsim {
namespace {

// A bijection of the chunk index: within an aligned block of 2^k chunks its low k bits are a permutation, so
// the remainders (and quotients) of a block's hashes are spread evenly.
std::uint64_t fold(std::uint64_t chunk) { return chunk ^ (chunk >> 7) ^ (chunk >> 13) ^ (chunk >> 19); }

unsigned xor_fold(std::uint64_t chunk, unsigned ways) { return static_cast<unsigned>(fold(chunk) % ways); }

bool power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

class XorFoldAddressMap final : public AddressMap {
 public:
  static Schema schema() {
    return Schema("address_map", "xor_fold", "line-granular interleave over L2 slices and DRAM channels with an XOR fold of higher bits; XOR-hashed bank groups and banks inside a channel");
  }

  XorFoldAddressMap(BuildContext& ctx, const Params&, unsigned)
      : line_bytes_(ctx.config.section("l2").u32("line_size")),
        slices_(ctx.config.section("l2").u32("slices")),
        channels_(ctx.config.section("hbm").u32("channels")) {
    const Params& hbm = ctx.config.section("hbm");
    groups_ = hbm.u32("bank_groups");
    banks_ = hbm.u32("banks_per_group");
    const std::uint64_t row_bytes = hbm.u64("row_size");
    for (const char* key : {"bank_groups", "banks_per_group"})
      if (!power_of_two(hbm.u64(key)))
        throw ConfigError(hbm.value(key).where.str() + ": hbm." + key + ": expected a power of two (the address map XORs row bits into it), got " + std::to_string(hbm.u64(key)));
    if (row_bytes % line_bytes_ != 0)
      throw ConfigError(hbm.value("row_size").where.str() + ": hbm.row_size: expected a multiple of l2.line_size (" +
                        std::to_string(line_bytes_) + " B), got " + std::to_string(row_bytes) + " B");
    lines_per_row_ = row_bytes / line_bytes_;
  }

  unsigned slice_of(std::uint64_t line_addr) const override { return xor_fold(line_addr / line_bytes_, slices_); }
  // The hash whose remainder picked the slice: its quotient spreads a slice's lines evenly over the slice's sets.
  std::uint64_t slice_set_key(std::uint64_t line_addr, std::uint32_t, unsigned) const override {
    return fold(line_addr / line_bytes_);
  }

  DramLocation dram_location(std::uint64_t line_addr) const override {
    // The hash's remainder picks the channel and its quotient is the line's index among that channel's lines:
    // fold is a bijection, so (remainder, quotient) is one too and no two lines share a DRAM location whatever
    // the channel count (line / channels would, when channels is not a power of two).
    const std::uint64_t h = fold(line_addr / line_bytes_);
    const std::uint64_t n = h / channels_;
    DramLocation loc;
    loc.channel = static_cast<unsigned>(h % channels_);
    loc.channel_address = n * line_bytes_ + line_addr % line_bytes_;
    std::uint64_t rest = n / groups_;
    const std::uint64_t group = n % groups_;
    loc.column = static_cast<std::uint32_t>((rest % lines_per_row_) * line_bytes_ + line_addr % line_bytes_);
    rest /= lines_per_row_;
    const std::uint64_t bank = rest % banks_;
    loc.row = rest / banks_;
    loc.bank_group = static_cast<unsigned>((group ^ loc.row) % groups_);
    loc.bank = static_cast<unsigned>((bank ^ (loc.row / groups_)) % banks_);
    return loc;
  }

 private:
  std::uint64_t line_bytes_;
  unsigned slices_, channels_;
  unsigned groups_ = 1, banks_ = 1;
  std::uint64_t lines_per_row_ = 1;
};

WARPSIM_REGISTER_COMPONENT(AddressMap, XorFoldAddressMap, "address_map", "xor_fold",
                           "line-granular XOR-folded interleave over slices and channels, XOR-hashed banks");

}  // namespace
}  // namespace warpsim
