// The node a GPU sits in, as far as tensor-parallel communication needs it: the bandwidth of its GPU-to-GPU links
// and the latency of a collective over them. Only parameters: no component reads them while simulating a kernel;
// `warpsim llm --tp N` estimates its all-reduces from them (app/llm/plan.cpp). Zero (the default) means "not
// given": a tensor-parallel scenario on a config without them is refused with an error naming the key.
#include "sim/registry/registry.h"

namespace warpsim {
namespace {

Schema node_schema() {
  Schema s("node", "node", "the GPU's node: GPU-to-GPU links, for tensor-parallel communication estimates");
  s.quantity("link_bandwidth", ParamType::Bandwidth, std::string("0B/s"),
             "bandwidth one GPU can send to its peers at once, in one direction (NVLink total / 2); 0: not given");
  s.real("collective_base_latency_us", "us", 0.0,
         "fixed cost of one collective call (NCCL's baseLat of its protocol), added once per all-reduce", 0.0, 1e6);
  s.real("link_hop_latency_us", "us", 0.0,
         "latency of one step of a ring over the links (NCCL's hwLat), added per step: 2(n-1) steps per all-reduce",
         0.0, 1e6);
  return s;
}

WARPSIM_REGISTER_SECTION("node", &node_schema, "the GPU's node: GPU-to-GPU links (tensor-parallel estimates)");

}  // namespace
}  // namespace warpsim
