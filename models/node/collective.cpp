#include "models/node/collective.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "sim/core/error.h"
#include "sim/registry/registry.h"

namespace warpsim {
namespace {

const char* const kCollectiveProtocolKeys[] = {"ll", "ll128", "simple"};
const char* const kCollectiveProtocolNames[] = {"LL", "LL128", "Simple"};

void declare_collective_protocols(Schema& s, const std::string& algorithm, const std::string& what) {
  for (int p = 0; p < 3; ++p) {
    const std::string prefix = algorithm + "." + kCollectiveProtocolKeys[p] + ".";
    const std::string proto = kCollectiveProtocolNames[p];
    s.real(prefix + "base_latency_us", "us", 0.0,
           fmt::format("{} {}: fixed latency of one call (NCCL's baseLat)", what, proto), 0.0, 1e6);
    s.real(prefix + "hop_latency_us", "us", 0.0,
           fmt::format("{} {}: latency per step over the links (NCCL's hwLat, NVLink)", what, proto), 0.0, 1e6);
    s.real(prefix + "bandwidth_factor", "", 0.0,
           fmt::format("{} {}: fraction of the bus bandwidth the protocol moves data at (0: not used)", what, proto),
           0.0, 1.0);
  }
}

Schema node_schema() {
  Schema s("node", "node", "the GPU's node: GPU-to-GPU links and the collective (NCCL-like) model over them");
  s.quantity("link_bandwidth", ParamType::Bandwidth, std::string("0B/s"),
             "bandwidth one GPU can send to its peers at once, in one direction (NVLink total / 2); 0: not given");
  s.real("link_efficiency", "", 1.0,
         "fraction of link_bandwidth a collective's data can use (NCCL's own per-link figure / the datasheet's)",
         0.0, 1.0);
  s.quantity("bus_bandwidth_ceiling", ParamType::Bandwidth, std::string("0B/s"),
             "upper bound of the bus bandwidth (link_bandwidth x link_efficiency); 0: none");
  s.quantity("ll_bandwidth_ceiling", ParamType::Bandwidth, std::string("0B/s"),
             "upper bound of the LL protocol's bus bandwidth (NCCL's llMaxBw); 0: none");
  declare_collective_protocols(s, "ring", "ring");
  declare_collective_protocols(s, "tree", "tree (all-reduce)");
  s.boolean("nvls.enabled", false, "NVLink SHARP: the NVSwitch reduces and multicasts (H100 and later with NVSwitch)");
  s.real("nvls.latency_us", "us", 0.0, "latency of one NVLS collective (NCCL's hwLat NVLS, its whole latency)", 0.0, 1e6);
  s.real("nvls.bandwidth_fraction", "", 0.0,
         "NVLS bus bandwidth as a fraction of the links' bus bandwidth (NCCL's NVLS graph)", 0.0, 1.0);
  s.real("nvls.algorithm_bandwidth_ratio", "", 0.0,
         "NVLS algorithm bandwidth / bus bandwidth (NCCL's conversion for NVLS)", 0.0, 10.0);
  s.quantity("link_energy_per_bit", ParamType::Energy, std::string("0pJ"),
             "energy of one bit across one GPU link (SerDes, both ends); 0: not counted");
  return s;
}

WARPSIM_REGISTER_SECTION("node", &node_schema, "the GPU's node: GPU-to-GPU links and collectives (tensor parallelism)");

}  // namespace

CollectiveOp collective_op(const std::string& name) {
  if (name == "all_reduce" || name == "allreduce") return CollectiveOp::all_reduce;
  if (name == "all_gather" || name == "allgather") return CollectiveOp::all_gather;
  if (name == "reduce_scatter" || name == "reducescatter") return CollectiveOp::reduce_scatter;
  if (name == "all_to_all" || name == "alltoall") return CollectiveOp::all_to_all;
  throw InputError(fmt::format("unknown collective '{}': expected all_reduce, all_gather, reduce_scatter or all_to_all",
                               name));
}

const char* collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "all_reduce";
    case CollectiveOp::all_gather: return "all_gather";
    case CollectiveOp::reduce_scatter: return "reduce_scatter";
    case CollectiveOp::all_to_all: return "all_to_all";
  }
  return "?";
}

CollectiveParams CollectiveParams::from(const Config& config) {
  CollectiveParams p;
  p.gpu = config.files().empty() ? std::string("the GPU config") : config.files().front();
  const Params& n = config.section("node");
  p.link_bytes_per_s = n.real("link_bandwidth");
  p.link_efficiency = n.real("link_efficiency");
  p.bus_ceiling_bytes_per_s = n.real("bus_bandwidth_ceiling");
  p.ll_ceiling_bytes_per_s = n.real("ll_bandwidth_ceiling");
  for (const char* algorithm : {"ring", "tree"}) {
    std::vector<Protocol>& protocols = std::string(algorithm) == "ring" ? p.ring : p.tree;
    for (int i = 0; i < 3; ++i) {
      const std::string prefix = std::string(algorithm) + "." + kCollectiveProtocolKeys[i] + ".";
      protocols.push_back(Protocol{kCollectiveProtocolNames[i], kCollectiveProtocolKeys[i],
                                   n.real(prefix + "base_latency_us"), n.real(prefix + "hop_latency_us"),
                                   n.real(prefix + "bandwidth_factor")});
    }
  }
  p.nvls = n.boolean("nvls.enabled");
  p.nvls_latency_us = n.real("nvls.latency_us");
  p.nvls_bandwidth_fraction = n.real("nvls.bandwidth_fraction");
  p.nvls_algorithm_ratio = n.real("nvls.algorithm_bandwidth_ratio");
  p.link_energy_per_bit_j = n.real("link_energy_per_bit");
  return p;
}

double CollectiveParams::bus_bytes_per_s() const {
  const double bus = link_bytes_per_s * link_efficiency;
  return bus_ceiling_bytes_per_s > 0 ? std::min(bus, bus_ceiling_bytes_per_s) : bus;
}

std::string collective_choice_text(const CollectiveCandidate& c) { return c.algorithm + "/" + c.protocol; }

CollectiveEstimate estimate_collective(const CollectiveParams& p, CollectiveOp op, double bytes, unsigned gpus) {
  CollectiveEstimate e;
  e.op = op;
  e.bytes = bytes;
  e.gpus = gpus;
  if (gpus <= 1) {
    e.chosen = CollectiveCandidate{"none", "-", 0.0, 0.0, 0.0};
    return e;
  }
  if (p.link_bytes_per_s <= 0)
    throw InputError(fmt::format("{}: node.link_bandwidth is not given: a collective over {} GPUs needs the "
                                 "GPU-to-GPU link bandwidth (see configs/h100_sxm.yaml, node:)", p.gpu, gpus));
  const double n = gpus, bus = p.bus_bytes_per_s();
  auto with_ll_ceiling = [&](const CollectiveParams::Protocol& proto, double bw) {
    return proto.key == "ll" && p.ll_ceiling_bytes_per_s > 0 ? std::min(bw, p.ll_ceiling_bytes_per_s) : bw;
  };
  auto add = [&](const std::string& algorithm, const std::string& protocol, double latency_us, double algbw) {
    if (algbw <= 0) return;
    e.candidates.push_back(CollectiveCandidate{algorithm, protocol, latency_us, algbw, latency_us + bytes / algbw * 1e6});
  };
  const double steps = op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
  if (op == CollectiveOp::all_to_all) {
    const CollectiveParams::Protocol& simple = p.ring.back();
    add("p2p", simple.name, simple.base_latency_us + simple.hop_latency_us, bus * simple.bandwidth_factor * n / (n - 1));
    if (e.candidates.empty())
      throw InputError(fmt::format("{}: node.ring.simple.bandwidth_factor is 0: an all-to-all runs on the Simple "
                                   "protocol (see configs/h100_sxm.yaml, node:)", p.gpu));
    e.chosen = e.candidates.front();
    e.link_bytes = 2.0 * bytes * (n - 1) / n;  // out and in
    e.link_energy_j = e.link_bytes * 8.0 * p.link_energy_per_bit_j;
    return e;
  }
  for (const CollectiveParams::Protocol& proto : p.ring)
    add("ring", proto.name, proto.base_latency_us + steps * proto.hop_latency_us,
        with_ll_ceiling(proto, bus * proto.bandwidth_factor) * n / steps);
  if (op == CollectiveOp::all_reduce)
    for (const CollectiveParams::Protocol& proto : p.tree)
      add("tree", proto.name, proto.base_latency_us + 2 * (n - 1) * proto.hop_latency_us,
          with_ll_ceiling(proto, bus * proto.bandwidth_factor) / 2);
  if (p.nvls) add("nvls", "Simple", p.nvls_latency_us, bus * p.nvls_bandwidth_fraction * p.nvls_algorithm_ratio);
  if (e.candidates.empty())
    throw InputError(fmt::format("{}: node.ring.*.bandwidth_factor are all 0: no protocol to run a collective with "
                                 "(see configs/h100_sxm.yaml, node:)", p.gpu));
  e.chosen = *std::min_element(e.candidates.begin(), e.candidates.end(),
                               [](const CollectiveCandidate& a, const CollectiveCandidate& b) { return a.time_us < b.time_us; });
  // Bytes over this GPU's links, out and in. Ring and tree (a chain on one node): each GPU sends and receives
  // steps/n of the message (all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n). NVLS all-reduce: the
  // switch reads the whole buffer from each GPU and writes its 1/n reduced shard back to it (multimem.ld_reduce),
  // then each GPU's shard goes up once and is multicast down to every GPU: (1 + 1/n) each way. NVLS all-gather:
  // the shard up, the whole output down; reduce-scatter: the whole input up, the shard down.
  const double in_out = [&] {
    if (e.chosen.algorithm != "nvls") return 2.0 * steps / n;
    if (op == CollectiveOp::all_reduce) return 2.0 * (1.0 + 1.0 / n);
    return 1.0 + 1.0 / n;
  }();
  e.link_bytes = in_out * bytes;
  e.link_energy_j = e.link_bytes * 8.0 * p.link_energy_per_bit_j;
  return e;
}

}  // namespace warpsim
