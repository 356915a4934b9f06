// Address map "xor_fold": lines interleave over L2 slices and over DRAM channels at line granularity, with an
// XOR fold of higher address bits so that power-of-two strides do not camp on one slice or channel (NVIDIA
// hashes physical addresses over L2 slices in a similar, undocumented way). The address inside a channel is the
// line's index among the lines that channel holds, so a DRAM model sees consecutive rows fill up in order.
#include <string>

#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"

namespace warpsim {
namespace {

// A bijection of the chunk index: within an aligned block of 2^k chunks its low k bits are a permutation, so
// the remainders (and quotients) of a block's hashes are spread evenly.
std::uint64_t fold(std::uint64_t chunk) { return chunk ^ (chunk >> 7) ^ (chunk >> 13) ^ (chunk >> 19); }

unsigned xor_fold(std::uint64_t chunk, unsigned ways) { return static_cast<unsigned>(fold(chunk) % ways); }

class XorFoldAddressMap final : public AddressMap {
 public:
  static Schema schema() {
    return Schema("address_map", "xor_fold", "line-granular interleave over L2 slices and DRAM channels with an XOR fold of higher bits");
  }

  XorFoldAddressMap(BuildContext& ctx, const Params&, unsigned)
      : line_bytes_(ctx.config.section("l2").u32("line_size")),
        slices_(ctx.config.section("l2").u32("slices")),
        channels_(ctx.config.section("hbm").u32("channels")) {}

  unsigned slice_of(std::uint64_t line_addr) const override { return xor_fold(line_addr / line_bytes_, slices_); }
  // The hash whose remainder picked the slice: its quotient spreads a slice's lines evenly over the slice's sets.
  std::uint64_t slice_set_key(std::uint64_t line_addr, std::uint32_t, unsigned) const override {
    return fold(line_addr / line_bytes_);
  }

  DramLocation dram_location(std::uint64_t line_addr) const override {
    const std::uint64_t line = line_addr / line_bytes_;
    return DramLocation{xor_fold(line, channels_), line / channels_ * line_bytes_ + line_addr % line_bytes_};
  }

 private:
  std::uint64_t line_bytes_;
  unsigned slices_, channels_;
};

WARPSIM_REGISTER_COMPONENT(AddressMap, XorFoldAddressMap, "address_map", "xor_fold",
                           "line-granular XOR-folded interleave over slices and channels");

}  // namespace
}  // namespace warpsim
