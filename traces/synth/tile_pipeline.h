// Phase machine of a warp running a software-pipelined tile loop (GEMM k-tiles, attention KV blocks, a norm's
// row tiles...), as a lazily generated stream: the prologue (setup, fill the first stages-1 shared-memory
// buffers), then the main loop one tile per generate() call (wait for tile i, consume it, refill its stage's
// successor with tile i+stages-1), then the epilogue, which must end with EXIT. The main loop's body restarts at
// the same pc every iteration, as a real loop's code does.
//
// The warp class derives from TilePipelineWarp<itself> (CRTP: the hooks are resolved at compile time, no virtual
// call per tile or instruction) and provides
//   void emit_prologue(InstChunk&);                        // setup and the stages-1 fills (or a jump elsewhere)
//   void emit_iteration(InstChunk&, std::uint32_t i);      // main-loop iteration i, counted from 0
//   void emit_epilogue(InstChunk&);                        // after the last iteration; ends with EXIT
#pragma once

#include <cstdint>

#include "sim/core/error.h"
#include "traces/synth/generated.h"

namespace warpsim::synth {

// The tiles one warp's loop walks: global tiles [first, end) through a ring of `stages` buffers.
struct PipelineTiles {
  std::uint32_t first = 0, end = 0;
  std::uint32_t stages = 2;
  std::uint32_t iterations() const { return end - first; }
  // Buffer that iteration i (counted from 0) reads.
  std::uint32_t stage_of(std::uint32_t i) const { return i % stages; }
  // Phase parity of that buffer's use by iteration i: it flips each time the ring of stages wraps around (the
  // parity an mbarrier try_wait names).
  std::uint32_t phase_of(std::uint32_t i) const { return (i / stages) & 1u; }
  // Global tile that the prologue's fill number s (< stages-1) loads.
  std::uint32_t prologue_tile(std::uint32_t s) const { return first + s; }
  // Global tile that iteration i loads into the buffer freed by iteration i-1 (past `end` near the loop's end:
  // nothing to load, but the code slots stay).
  std::uint32_t refill_tile(std::uint32_t i) const { return first + i + stages - 1; }
  bool in_range(std::uint32_t global_tile) const { return global_tile < end; }
};

template <class Warp>
class TilePipelineWarp : public WarpGenerator {
 public:
  bool generate(InstChunk& c) final {
    Warp& warp = static_cast<Warp&>(*this);
    switch (phase_) {
      case Phase::Prologue:
        warp.emit_prologue(c);
        loop_pc_ = c.pc();
        phase_ = tiles_.iterations() > 0 ? Phase::MainLoop : Phase::Epilogue;
        return true;
      case Phase::MainLoop:
        // One iteration per chunk, or several while the chunk is short (fewer calls for tiny loop bodies).
        do {
          c.set_pc(done_ < peeled_ ? loop_pc_ : loop_pc_ + (peeled_ ? body_bytes_ : 0));
          warp.emit_iteration(c, done_);
          if (done_ == 0) body_bytes_ = c.pc() - loop_pc_;
          ++done_;
        } while (done_ < tiles_.iterations() && c.size() < min_chunk_insts_);
        if (done_ == tiles_.iterations()) phase_ = Phase::Epilogue;
        return true;
      case Phase::Epilogue:
        // With a peeled copy: after the main copy of the body, however many iterations this warp ran.
        if (peeled_ != 0 && body_bytes_ != 0) c.set_pc(loop_pc_ + 2 * body_bytes_);
        warp.emit_epilogue(c);
        WARPSIM_ASSERT(!c.empty(), "a pipelined warp's epilogue must end with EXIT");
        phase_ = Phase::Done;
        return true;
      case Phase::Done:
        break;
    }
    return false;
  }

 protected:
  // `min_chunk_insts`: keep adding iterations to a chunk until it holds this many records (0: one per chunk).
  explicit TilePipelineWarp(PipelineTiles tiles, std::uint32_t min_chunk_insts = 0)
      : tiles_(tiles), min_chunk_insts_(min_chunk_insts) {}
  const PipelineTiles& tiles() const { return tiles_; }
  void set_min_chunk_insts(std::uint32_t n) { min_chunk_insts_ = n; }
  // The first `n` iterations run from a copy of the loop body of their own, laid out before the main loop's
  // (a loop the compiler peeled off, e.g. flash-attention's masking steps): code that the instruction cache
  // sees as separate lines. Every iteration's code must have the same length (skip() what one does not emit).
  void set_peeled_iterations(std::uint32_t n) { peeled_ = n; }

 private:
  enum class Phase { Prologue, MainLoop, Epilogue, Done };
  PipelineTiles tiles_;
  std::uint32_t min_chunk_insts_ = 0;
  Phase phase_ = Phase::Prologue;
  std::uint32_t done_ = 0;  // iterations emitted
  std::uint32_t loop_pc_ = 0;
  std::uint32_t peeled_ = 0;      // leading iterations run from their own copy of the body
  std::uint32_t body_bytes_ = 0;  // code length of one iteration, known once the first is emitted
};

}  // namespace warpsim::synth
