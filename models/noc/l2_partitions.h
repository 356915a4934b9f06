// How the L2 slices split into partitions (l2.partitions): consecutive slice indices, as equal as the counts
// allow (B200's 253 slices: 127 + 126). A line's home is the slice the address map names; a partition that is not
// the home keeps the line's copy in its slice of the same rank (wrapped when the partitions differ in size).
// Shared by the interconnect (models/noc/hierarchical.cpp), which routes reads to the copy, and the L2 slices
// (models/mem/l2_slice.cpp), which tell a copy lookup from a home access.
#pragma once

namespace warpsim {

struct L2Partitions {
  unsigned slices = 1, partitions = 1;

  unsigned of(unsigned slice) const { return static_cast<unsigned>(static_cast<unsigned long long>(slice) * partitions / slices); }
  unsigned first(unsigned partition) const {  // the first slice s with of(s) == partition
    return static_cast<unsigned>((static_cast<unsigned long long>(partition) * slices + partitions - 1) / partitions);
  }
  unsigned size(unsigned partition) const { return first(partition + 1) - first(partition); }
  unsigned copy_slice(unsigned home_slice, unsigned partition) const {
    const unsigned rank = home_slice - first(of(home_slice));
    return first(partition) + rank % size(partition);
  }
};

}  // namespace warpsim
