// The slots of the memory system. Each is an abstract interface with one or more registered implementations
// (`impl:` in the config picks one), so that a new L2 or DRAM model is one new file plus one registration.
#pragma once

#include <cstdint>

#include "models/mem/mem_request.h"
#include "sim/core/component.h"
#include "sim/core/port.h"

namespace warpsim {

// SM <-> L2 network (config section `noc`). Not a ticking component: it computes each message's delivery
// time from link latency and per-port bandwidth reservations, and hands the message to the receiver's port.
class Interconnect {
 public:
  virtual ~Interconnect() = default;
  // `now`: global time at which the sender hands the message over.
  virtual void send_request(MemRequest req, TimeFs now) = 0;   // SM req.sm -> L2 slice req.slice
  virtual void send_response(MemRequest req, TimeFs now) = 0;  // L2 slice req.slice -> SM req.sm
  virtual void attach_sm(unsigned sm, Port<MemRequest>* response_port) = 0;
  virtual void attach_slice(unsigned slice, Port<MemRequest>* request_port) = 0;
  // L2 slice that owns a line (address hashing).
  virtual unsigned slice_of(std::uint64_t line_addr) const = 0;
};

// One L2 slice (config section `l2`; instantiated `l2.slices` times).
class L2Slice : public Component {
 public:
  using Component::Component;
  virtual Port<MemRequest>& request_port() = 0;    // from the interconnect
  virtual Port<MemRequest>& dram_response_port() = 0;
};

// One DRAM channel (config section `hbm`; instantiated `hbm.channels` times).
class DramChannel : public Component {
 public:
  using Component::Component;
  virtual Port<MemRequest>& request_port() = 0;   // from L2 slices; responses go to the slice's port
  // Slices register where their responses go (indexed by MemRequest::slice).
  virtual void attach_slice(unsigned slice, Port<MemRequest>* response_port) = 0;
};

}  // namespace warpsim
