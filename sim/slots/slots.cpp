#include "sim/slots/slots.h"

#include "sim/registry/registry.h"

namespace warpsim {
namespace {

constexpr auto kRequired = std::nullopt;  // every hardware number comes from the GPU's config, with its source

Schema address_map_shared() {
  return Schema("address_map", "", "which L2 slice and which DRAM channel own each line");
}

Schema noc_shared() { return Schema("noc", "", "SM-to-L2 interconnect"); }

Schema l2_shared() {
  Schema s("l2", "", "L2 cache slices");
  s.quantity("size", ParamType::Size, kRequired, "total L2 capacity over all slices", 1024, 4ull << 30).total_over("l2.slices");
  s.uint("slices", "slices", kRequired, "number of L2 slices; lines are spread over them by the address map", 1, 4096).unit_count();
  s.quantity("line_size", ParamType::Size, kRequired, "cache line size", 32, 4096);
  s.quantity("sector_size", ParamType::Size, kRequired, "sector size (unit of fills and of DRAM traffic)", 8, 4096);
  s.quantity("bandwidth", ParamType::Bandwidth, kRequired, "aggregate L2 bandwidth over all slices", 1e6).total_over("l2.slices");
  return s;
}

Schema hbm_shared() {
  Schema s("hbm", "", "device memory (HBM) channels");
  s.quantity("capacity", ParamType::Size, kRequired, "device memory capacity (informative; traces are not bounds-checked against it)", 1.0).total_over("hbm.channels");
  s.quantity("bandwidth", ParamType::Bandwidth, kRequired, "peak DRAM bandwidth of the whole device", 1e6).total_over("hbm.channels");
  s.uint("channels", "channels", kRequired, "independent channels; addresses interleave across them", 1, 4096).unit_count();
  s.quantity("access_granularity", ParamType::Size, kRequired, "bytes moved per access (a sector)", 1, 4096);
  s.uint("latency", "cycles", kRequired, "HBM-clock cycles an idle read adds beyond an L2 miss (controller, PHY, interconnect and, for a banked model, the DRAM core's ACT + RD of a closed bank)", 0, 100000);
  s.uint("read_queue_depth", "requests", kRequired, "reads a channel's controller holds; a full queue pushes back on the L2 slices", 1, 4096);
  s.uint("write_queue_depth", "requests", kRequired, "writes (L2 write-backs) a channel's controller holds; a full queue pushes back on the L2 slices", 1, 4096);
  s.uint("bank_groups", "groups", kRequired, "bank groups per channel (power of two; the address map hashes over them)", 1, 64);
  s.uint("banks_per_group", "banks", kRequired, "banks per bank group (power of two), each with one row buffer", 1, 64);
  s.quantity("row_size", ParamType::Size, kRequired, "bytes of one row of one bank in one channel (the page)", 32, 1 << 20);
  return s;
}

Schema l1_shared() {
  Schema s("l1", "", "per-SM L1 data cache");
  s.quantity("unified_size", ParamType::Size, kRequired, "L1 + shared memory SRAM per SM; L1 gets what resident CTAs' shared memory leaves", 0, 64ull << 20);
  s.quantity("line_size", ParamType::Size, kRequired, "cache line size (power of two; equal to l2.line_size)", 32, 4096);
  s.quantity("sector_size", ParamType::Size, kRequired, "sector size (power of two; equal to l2.sector_size)", 8, 4096);
  s.uint("hit_latency", "cycles", kRequired, "SM cycles, load-to-use of an L1 hit", 1, 10000);
  s.uint("bandwidth", "B/cycle", kRequired, "bytes per SM cycle through the L1 data path for global/local accesses", 1, 4096);
  s.uint("mshrs", "lines", kRequired, "outstanding missed lines per SM", 1, 1 << 20);
  return s;
}

}  // namespace

void declare_gpu_slots(Registry& r) {
  r.declare_slot({"address_map", "xor_fold", "address mapping: line -> L2 slice, DRAM channel", &address_map_shared});
  r.declare_slot({"noc", "hierarchical", "SM <-> L2 interconnect", &noc_shared});
  r.declare_slot({"l2", "sectored", "L2 cache slices", &l2_shared});
  r.declare_slot({"hbm", "hbm_simple", "DRAM channels", &hbm_shared});
  r.declare_slot({"sm", "subpartitioned", "streaming multiprocessors", nullptr});
  r.declare_slot({"l1", "sectored", "L1 data cache of each SM", &l1_shared});
  r.declare_slot({"async_copy", "tma", "asynchronous copy engine of each SM, beside the LSU (TMA)", nullptr});
}

}  // namespace warpsim
