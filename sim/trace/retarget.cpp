// Retargeting decorator (see retarget.h): the rule table, the per-warp rewriting stream and the report.
#include "sim/trace/retarget.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <tuple>

#include "sim/core/error.h"

namespace warpsim {
namespace {

// What happens to a captured record on a target older than the arch that introduced its instruction.
enum class Action {
  SplitIntoMmaSync,   // HGMMA -> the warp's share as mma.sync HMMAs
  Drop,               // no equivalent needed: removed
  Refuse,             // no faithful mapping: InputError
  LoadNowStoreLater,  // LDGSTS -> LDG into a staging register; the STS waits for the group's wait
  CommitStores,       // LDGDEPBAR -> dropped; the pending STSs become one group
  StoresOfWaitedGroups,  // DEPBAR N -> dropped; the STSs of all but the newest N groups are issued
};

struct Rule {
  Opcode op;
  int since;    // the first arch that has the instruction (sm_XX)
  Action action;
  const char* how;  // the report's wording of the mapping
};

// The rules, one place. `since` from the PTX ISA: wgmma, cp.async.bulk.tensor (TMA) and mbarrier expect_tx /
// try_wait are sm_90 instructions, tcgen05 sm_100's; cp.async (LDGSTS) is sm_80's. Named barriers with a thread count (BAR with
// `group`, BAR_ARV: bar.sync/bar.arrive a, b) exist on every target (PTX ISA 2.0, sm_20), so they pass through.
constexpr Rule kRules[] = {
    {Opcode::HGMMA, 90, Action::SplitIntoMmaSync, "mma.sync per warp, same dtype and FLOPs"},
    {Opcode::WARPGROUP_ARRIVE, 90, Action::Drop, "dropped: mma.sync results are scoreboarded"},
    {Opcode::WARPGROUP_COMMIT, 90, Action::Drop, "dropped: mma.sync results are scoreboarded"},
    {Opcode::WARPGROUP_DEPBAR, 90, Action::Drop, "dropped: mma.sync results are scoreboarded"},
    {Opcode::UTMALDG, 90, Action::Refuse, "TMA"},
    {Opcode::SYNCS_ARRIVE_TRANS64, 90, Action::Refuse, "mbarrier transaction counts"},
    {Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT, 90, Action::Refuse, "mbarrier transaction counts"},
    {Opcode::MBARRIER_INIT, 90, Action::Refuse, "mbarrier transaction counts"},
    {Opcode::USETMAXREG, 90, Action::Drop, "dropped: register reallocation (setmaxnreg) is sm_90's"},
    // tcgen05 (PTX ISA: sm_100a): accumulators in tensor memory, which no earlier GPU has.
    {Opcode::UTCMMA, 100, Action::Refuse, "tcgen05 MMAs into tensor memory"},
    {Opcode::UTCBAR, 100, Action::Refuse, "tcgen05 MMAs into tensor memory"},
    {Opcode::LDTM, 100, Action::Refuse, "tcgen05 MMAs into tensor memory"},
    {Opcode::LDGSTS, 80, Action::LoadNowStoreLater, "LDG into a staging register now, STS when its group is waited for"},
    {Opcode::LDGDEPBAR, 80, Action::CommitStores, "dropped: its cp.async group's STSs wait for the group's DEPBAR"},
    {Opcode::DEPBAR, 80, Action::StoresOfWaitedGroups, "dropped: the STSs of the groups it waits for take its place"},
};

const Rule* rule_for(Opcode op, int target) {
  for (const Rule& r : kRules)
    if (r.op == op && target < r.since) return &r;
  return nullptr;
}

// mma.sync's K for an operand type (PTX ISA, mma.sync shapes on sm_80: m16n8k16 f16/bf16, m16n8k8 tf32,
// m16n8k32 s8/u8 and, on sm_89, e4m3/e5m2); 0 for a type mma.sync m16n8 has no shape for.
std::uint16_t mma_sync_k(DType t) {
  switch (t) {
    case DType::F16:
    case DType::BF16:
      return 16;
    case DType::TF32:
      return 8;
    case DType::FP8:
    case DType::I8:
      return 32;
    default:
      return 0;
  }
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Identifies one kind of rewrite for the report.
struct MappingKey {
  Opcode op;
  DType dtype;
  std::uint16_t m, n, k;
  bool sparse;
  std::uint8_t access_bytes;
  bool operator<(const MappingKey& o) const {
    return std::tie(op, dtype, m, n, k, sparse, access_bytes) <
           std::tie(o.op, o.dtype, o.m, o.n, o.k, o.sparse, o.access_bytes);
  }
};

MappingKey key_of(const WarpInst& in) {
  const bool mma = op_class(in.op) == OpClass::Tensor;
  return MappingKey{in.op, mma ? in.dtype : DType::None, mma ? in.mma.m : std::uint16_t{0},
                    mma ? in.mma.n : std::uint16_t{0}, mma ? in.mma.k : std::uint16_t{0},
                    mma && (in.aux & kMmaSparse), in.op == Opcode::LDGSTS ? in.access_bytes : std::uint8_t{0}};
}

std::string mma_text(const MappingKey& k, std::uint16_t hmma_k, std::uint64_t per_warp) {
  const std::string type = "." + upper(dtype_name(k.dtype)) + (k.sparse ? ".SP" : "");
  return std::to_string(per_warp) + " x HMMA.168" + std::to_string(hmma_k) + type + " per warp";
}

std::string describe_from(const MappingKey& k) {
  if (k.op == Opcode::HGMMA)
    return "HGMMA." + std::to_string(k.m) + "x" + std::to_string(k.n) + "x" + std::to_string(k.k) + "." +
           upper(dtype_name(k.dtype)) + (k.sparse ? ".SP" : "");
  if (k.op == Opcode::LDGSTS) return "LDGSTS." + std::to_string(k.access_bytes * 8);
  return std::string(opcode_info(k.op).name);
}

}  // namespace

// Per opening of a kernel to retarget: what the rewriting streams need of it (copied: a warp stream may outlive
// its CTA and kernel sources) and what they did.
struct RetargetedTrace::KernelTally {
  std::string kernel_name, captured_arch;
  std::uint32_t registers_per_thread = 0;
  int target = 0;  // sm_XX of the target
  std::map<MappingKey, RetargetMapping> mappings;
  void add(const MappingKey& key, const std::string& to, std::uint64_t emitted) {
    RetargetMapping& m = mappings[key];
    if (m.from.empty()) {
      m.from = describe_from(key);
      m.to = to;
    }
    ++m.instructions;
    m.emitted += emitted;
  }
};

namespace {

// One warp's stream, rewritten record by record. The inner stream is read again only when everything produced
// from its previous batch has been handed out, so the Deltas pointers of the records handed out stay valid until
// the next read(), as the interface promises.
class RetargetWarpStream final : public WarpStream {
 public:
  RetargetWarpStream(std::unique_ptr<WarpStream> inner, std::shared_ptr<RetargetedTrace::KernelTally> tally)
      : inner_(std::move(inner)), tally_owner_(std::move(tally)), tally_(*tally_owner_), target_(tally_.target) {
    // Staging registers for LDGSTS's LDG: above the kernel's own (registers_per_thread), so they create no false
    // dependencies; with none left, R254 (the last before RZ).
    first_staging_ = static_cast<std::uint16_t>(std::min<std::uint32_t>(tally_.registers_per_thread, kRegZero - 1));
    next_staging_ = first_staging_;
  }

  std::size_t read(WarpInst* out, std::size_t max) override {
    while (pos_ == produced_.size()) {
      produced_.clear();
      pos_ = 0;
      if (ended_) return 0;
      const std::size_t n = inner_->read(batch_.data(), batch_.size());
      if (n == 0) {
        ended_ = true;
        flush_stores();
        continue;
      }
      for (std::size_t i = 0; i < n; ++i) rewrite(batch_[i]);
    }
    const std::size_t count = std::min(max, produced_.size() - pos_);
    std::copy_n(produced_.begin() + static_cast<std::ptrdiff_t>(pos_), count, out);
    pos_ += count;
    return count;
  }

 private:
  void rewrite(const WarpInst& in) {
    const Rule* rule = rule_for(in.op, target_);
    if (in.op == Opcode::EXIT) flush_stores();  // a cp.async group never waited for still lands before the exit
    if (!rule) {
      produced_.push_back(in);
      return;
    }
    switch (rule->action) {
      case Action::SplitIntoMmaSync:
        split_hgmma(in);
        return;
      case Action::Drop:
        tally_.add(key_of(in), rule->how, 0);
        return;
      case Action::Refuse:
        refuse(tally_.kernel_name, tally_.captured_arch, in.op, target_);
      case Action::LoadNowStoreLater:
        load_now_store_later(in, rule->how);
        return;
      case Action::CommitStores:
        committed_.push_back(std::move(open_group_));
        open_group_.clear();
        tally_.add(key_of(in), rule->how, 0);
        return;
      case Action::StoresOfWaitedGroups: {
        while (committed_.size() > in.aux) {
          produced_.insert(produced_.end(), committed_.front().begin(), committed_.front().end());
          committed_.pop_front();
        }
        tally_.add(key_of(in), rule->how, 0);  // the STSs are counted with their LDGSTS
        return;
      }
    }
  }

 public:
  [[noreturn]] static void refuse(const std::string& kernel, const std::string& captured, Opcode op, int target,
                                  const std::string& where = {}) {
    const Rule* rule = rule_for(op, target);
    const int since = rule ? rule->since : 90;
    throw InputError(where + "kernel '" + kernel + "' was captured for " + captured + " and uses " +
                     (since >= 100 ? std::string("tcgen05 (MMAs into tensor memory")
                                   : std::string("TMA (bulk tensor copies completing on mbarriers")) +
                     "; first such instruction: " + std::string(opcode_info(op).name) + "), which sm_" +
                     std::to_string(target) + " lacks: warpsim does not invent a mapping for it; run it on an sm_" +
                     std::to_string(since) + " or newer config, or capture (or synthesize) the kernel for this GPU");
  }

 private:
  void split_hgmma(const WarpInst& in) {
    const std::uint16_t k = mma_sync_k(in.dtype);
    WarpInst mma = in;
    mma.op = Opcode::HMMA;
    mma.mma = MmaShape{16, 8, k};
    const std::uint64_t flops = mma_flops_per_warp(in);
    const std::uint64_t per_mma = k ? mma_flops_per_warp(mma) : 0;
    if (per_mma == 0 || flops % per_mma != 0)
      throw InputError("kernel '" + tally_.kernel_name + "' (captured for " + tally_.captured_arch + ") has an HGMMA m" +
                       std::to_string(in.mma.m) + "n" + std::to_string(in.mma.n) + "k" + std::to_string(in.mma.k) +
                       " on " + std::string(dtype_name(in.dtype)) + " operands that no whole number of mma.sync m16n8k" +
                       std::to_string(k) + " instructions matches, so it cannot run on sm_" + std::to_string(target_));
    const std::uint64_t count = flops / per_mma;
    // The accumulator is written by the last HMMA only, and read (chained) by it: the HMMAs before it stand for
    // the warp's other, independent accumulator blocks, as mma.sync code has them, and wait only for the
    // captured non-accumulator operands (an RS HGMMA's A fragment). Dependents of the accumulator wait for the
    // last HMMA, which the in-order tensor pipe completes last.
    WarpInst independent = mma;
    independent.num_dst = 0;
    independent.dst.fill(kNoReg);
    independent.num_src = 0;
    independent.src.fill(kNoReg);
    for (int i = 0; i < in.num_src; ++i)
      if (std::find(in.dst.begin(), in.dst.begin() + in.num_dst, in.src[i]) == in.dst.begin() + in.num_dst)
        independent.src[independent.num_src++] = in.src[i];
    for (std::uint64_t i = 0; i + 1 < count; ++i) produced_.push_back(independent);
    produced_.push_back(mma);
    tally_.add(key_of(in), mma_text(key_of(in), k, count), count);
  }

  void load_now_store_later(const WarpInst& in, const char* how) {
    const std::uint16_t staging = next_staging_;
    next_staging_ = next_staging_ + 1 >= kRegZero ? first_staging_ : static_cast<std::uint16_t>(next_staging_ + 1);
    WarpInst load = in;
    load.op = Opcode::LDG;
    load.aux = 0;  // an LDG's aux is a spin-wait count (format 1.6); the copy's is not one
    load.num_dst = 1;
    load.dst.fill(kNoReg);
    load.dst[0] = staging;
    produced_.push_back(load);
    // The shared-memory destination is not in the record: lane-contiguous (conflict-free, as cp.async copies of
    // swizzled tiles are) from offset 0.
    WarpInst store{};
    store.pc = in.pc;
    store.op = Opcode::STS;
    store.active_mask = in.active_mask;
    store.space = MemSpace::Shared;
    store.addr_mode = AddrMode::Strided;
    store.access_bytes = in.access_bytes;
    store.stride = in.access_bytes;
    store.num_src = 1;
    store.src[0] = staging;
    open_group_.push_back(store);
    tally_.add(key_of(in), how, 2);
  }

  void flush_stores() {
    for (const auto& group : committed_) produced_.insert(produced_.end(), group.begin(), group.end());
    committed_.clear();
    produced_.insert(produced_.end(), open_group_.begin(), open_group_.end());
    open_group_.clear();
  }

  std::unique_ptr<WarpStream> inner_;
  std::shared_ptr<RetargetedTrace::KernelTally> tally_owner_;
  RetargetedTrace::KernelTally& tally_;
  int target_;
  std::vector<WarpInst> batch_ = std::vector<WarpInst>(16);  // one per resident warp: kept small
  std::vector<WarpInst> produced_;
  std::size_t pos_ = 0;
  bool ended_ = false;
  std::vector<WarpInst> open_group_;              // STSs of cp.asyncs not yet committed
  std::deque<std::vector<WarpInst>> committed_;   // STSs per committed group, oldest first
  std::uint16_t first_staging_ = 0, next_staging_ = 0;
};

class RetargetCta final : public CtaSource {
 public:
  RetargetCta(std::unique_ptr<CtaSource> inner, std::shared_ptr<RetargetedTrace::KernelTally> tally)
      : inner_(std::move(inner)), tally_(std::move(tally)) {}
  std::uint32_t num_warps() const override { return inner_->num_warps(); }
  std::unique_ptr<WarpStream> open_warp(std::uint32_t warp) override {
    return std::make_unique<RetargetWarpStream>(inner_->open_warp(warp), tally_);
  }

 private:
  std::unique_ptr<CtaSource> inner_;
  std::shared_ptr<RetargetedTrace::KernelTally> tally_;
};

class RetargetKernel final : public KernelSource {
 public:
  RetargetKernel(std::unique_ptr<KernelSource> inner, std::shared_ptr<RetargetedTrace::KernelTally> tally)
      : inner_(std::move(inner)), tally_(std::move(tally)) {}
  const KernelInfo& info() const override { return inner_->info(); }
  std::unique_ptr<CtaSource> open_cta(std::uint64_t cta_id) override {
    return std::make_unique<RetargetCta>(inner_->open_cta(cta_id), tally_);
  }

 private:
  std::unique_ptr<KernelSource> inner_;
  std::shared_ptr<RetargetedTrace::KernelTally> tally_;
};

}  // namespace

int sm_version(std::string_view arch) noexcept {
  if (arch.size() < 4 || arch.substr(0, 3) != "sm_") return 0;
  int v = 0;
  std::size_t i = 3;
  for (; i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])) && v < 10000; ++i) v = v * 10 + (arch[i] - '0');
  if (i == 3) return 0;
  for (; i < arch.size(); ++i)  // a feature suffix: sm_90a, sm_100f
    if (!std::isalpha(static_cast<unsigned char>(arch[i]))) return 0;
  return v;
}

bool needs_retargeting(std::string_view captured, std::string_view target) noexcept {
  const int from = sm_version(captured), to = sm_version(target);
  return from > 0 && to > 0 && to < from;
}

RetargetedTrace::RetargetedTrace(std::unique_ptr<TraceSource> inner, std::string target_arch)
    : inner_(std::move(inner)), target_arch_(std::move(target_arch)) {}

RetargetedTrace::~RetargetedTrace() = default;

std::unique_ptr<KernelSource> RetargetedTrace::open_kernel(std::size_t index) {
  std::unique_ptr<KernelSource> kernel = inner_->open_kernel(index);
  if (tallies_.size() < num_kernels()) tallies_.resize(num_kernels());
  if (!needs_retargeting(kernel->info().target_arch, target_arch_)) {
    if (index < tallies_.size()) tallies_[index].reset();
    return kernel;  // untouched: the run is the same as without the decorator
  }
  auto tally = std::make_shared<KernelTally>();
  tally->kernel_name = kernel->info().name;
  tally->captured_arch = kernel->info().target_arch;
  tally->registers_per_thread = kernel->info().registers_per_thread;
  tally->target = sm_version(target_arch_);
  if (index < tallies_.size()) tallies_[index] = tally;
  return std::make_unique<RetargetKernel>(std::move(kernel), std::move(tally));
}

std::string RetargetedTrace::captured_arch(std::size_t index) const {
  return index < tallies_.size() && tallies_[index] ? tallies_[index]->captured_arch : std::string();
}

std::vector<RetargetMapping> RetargetedTrace::mappings(std::size_t index) const {
  std::vector<RetargetMapping> out;
  if (index >= tallies_.size() || !tallies_[index]) return out;
  for (const auto& [key, m] : tallies_[index]->mappings) out.push_back(m);
  return out;
}

void RetargetedTrace::check_mappable() {
  const int target = sm_version(target_arch_);
  std::vector<WarpInst> batch(4096);
  for (std::size_t k = 0; k < inner_->num_kernels(); ++k) {
    const std::unique_ptr<KernelSource> kernel = inner_->open_kernel(k);
    if (!needs_retargeting(kernel->info().target_arch, target_arch_)) continue;
    const std::unique_ptr<CtaSource> cta = kernel->open_cta(0);
    for (std::uint32_t w = 0; w < cta->num_warps(); ++w) {
      const std::unique_ptr<WarpStream> warp = cta->open_warp(w);
      for (std::size_t n; (n = warp->read(batch.data(), batch.size())) > 0;)
        for (std::size_t i = 0; i < n; ++i)
          if (const Rule* rule = rule_for(batch[i].op, target); rule && rule->action == Action::Refuse)
            RetargetWarpStream::refuse(kernel->info().name, kernel->info().target_arch, batch[i].op, target,
                                       inner_->description() + ": ");
    }
  }
}

}  // namespace warpsim
