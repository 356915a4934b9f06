// Collective communication between the GPUs of one node (tensor parallelism): how long an all-reduce, all-gather
// or reduce-scatter of a message takes over the node's links, and with which algorithm and protocol, chosen the
// way NCCL's tuning model chooses them (NVIDIA/nccl src/graph/tuning.cc): every enabled (algorithm, protocol)
// pair gets a time = latency + bytes / algorithm bandwidth, and the fastest wins.
//
//   bus bandwidth B = node.link_bandwidth x node.link_efficiency, at most node.bus_bandwidth_ceiling
//   ring  (protocol p): bus bandwidth B x ring.p.bandwidth_factor (LL: at most node.ll_bandwidth_ceiling);
//         algorithm bandwidth = bus bandwidth x n / steps, steps = 2(n-1) for an all-reduce, n-1 for an
//         all-gather or reduce-scatter; latency = ring.p.base_latency_us + steps x ring.p.hop_latency_us
//   tree  (all-reduce only): bus bandwidth B x tree.p.bandwidth_factor (LL: at most the LL ceiling); the whole
//         message goes up the tree and comes down again: algorithm bandwidth = bus bandwidth / 2;
//         latency = tree.p.base_latency_us + 2(n-1) x tree.p.hop_latency_us (one node: the tree is a chain)
//   nvls  (NVLink SHARP: the NVSwitch reduces and multicasts; Simple protocol only; node.nvls.enabled): bus
//         bandwidth B x nvls.bandwidth_fraction, algorithm bandwidth = that x nvls.algorithm_bandwidth_ratio;
//         latency = nvls.latency_us
//   p2p   (all-to-all only, as NCCL runs it: a group of send/recv pairs, one to every peer at once over the
//         switch, Simple protocol): each GPU sends (n-1)/n of its buffer and receives as much, at bus bandwidth B
//         x ring.simple.bandwidth_factor: algorithm bandwidth = that x n / (n-1) (nccl-tests' busbw/algbw for
//         alltoall); latency = ring.simple.base_latency_us + ring.simple.hop_latency_us (one step)
//
// `bytes` is NCCL's nBytes: the whole buffer of an all-reduce, the whole gathered output of an all-gather, the
// whole input of a reduce-scatter, each GPU's whole send buffer of an all-to-all. Every figure comes from the config's node: section, with its source there.
// The model is the NCCL tuning model's steady state: no per-size correction factors (NCCL's tree correction),
// no per-channel ceilings (they do not bind at the channel counts NCCL uses on NVSwitch nodes), one node.
//
// Link traffic and energy: the bytes that cross this GPU's own links (sent and received), each costing
// node.link_energy_per_bit per bit.
#pragma once

#include <string>
#include <vector>

#include "sim/config/config.h"

namespace warpsim {

enum class CollectiveOp { all_reduce, all_gather, reduce_scatter, all_to_all };

// "all_reduce", "all_gather", "reduce_scatter", "all_to_all" (also without the underscores, as validation files
// write them); InputError for anything else.
CollectiveOp collective_op(const std::string& name);
const char* collective_op_name(CollectiveOp op);

// The node: section, read once.
struct CollectiveParams {
  struct Protocol {
    std::string name;  // "LL", "LL128", "Simple" (NCCL's names)
    std::string key;   // "ll", "ll128", "simple" (the config's)
    double base_latency_us = 0, hop_latency_us = 0, bandwidth_factor = 0;  // factor 0: not used
  };
  double link_bytes_per_s = 0;      // node.link_bandwidth (0: not given)
  double link_efficiency = 0;       // node.link_efficiency
  double bus_ceiling_bytes_per_s = 0;  // node.bus_bandwidth_ceiling (0: none)
  double ll_ceiling_bytes_per_s = 0;   // node.ll_bandwidth_ceiling (0: none)
  std::vector<Protocol> ring, tree;    // LL, LL128, Simple
  bool nvls = false;
  double nvls_latency_us = 0, nvls_bandwidth_fraction = 0, nvls_algorithm_ratio = 0;
  double link_energy_per_bit_j = 0;  // node.link_energy_per_bit
  std::string gpu;                   // the config file, for messages

  static CollectiveParams from(const Config& config);
  // The bus bandwidth every algorithm starts from (B above), bytes/s.
  double bus_bytes_per_s() const;
};

// One (algorithm, protocol) pair's estimate for a message.
struct CollectiveCandidate {
  std::string algorithm;  // "ring", "tree", "nvls", "p2p"
  std::string protocol;   // "LL", "LL128", "Simple"
  double latency_us = 0;
  double algorithm_bytes_per_s = 0;  // bytes / (time - latency)
  double time_us = 0;
};

struct CollectiveEstimate {
  CollectiveOp op = CollectiveOp::all_reduce;
  double bytes = 0;
  unsigned gpus = 1;
  CollectiveCandidate chosen;            // the fastest candidate; a single GPU: nothing to do, time 0
  std::vector<CollectiveCandidate> candidates;  // every pair considered, in order ring, tree, nvls x LL, LL128, Simple
  double link_bytes = 0;                 // bytes over this GPU's links, both directions
  double link_energy_j = 0;              // link_bytes x 8 x node.link_energy_per_bit
};

// The estimate of one collective of `bytes` over `gpus` GPUs. InputError naming the key when the config does not
// give what it needs (node.link_bandwidth, every protocol's factor 0); gpus == 1 is free (time 0, no traffic).
CollectiveEstimate estimate_collective(const CollectiveParams& params, CollectiveOp op, double bytes, unsigned gpus);

// "ring/Simple"
std::string collective_choice_text(const CollectiveCandidate& c);

}  // namespace warpsim
