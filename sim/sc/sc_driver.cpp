#include "sim/sc/sc_driver.h"

#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "sim/core/error.h"

namespace warpsim {
namespace {

class ScClockDomain : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(ScClockDomain);
  ScClockDomain(const sc_core::sc_module_name& name, ClockDomain& domain, const std::function<bool()>& finished,
                std::exception_ptr& error)
      : sc_core::sc_module(name), domain_(domain), finished_(finished), error_(error) {
    SC_METHOD(run_due_cycle);
    sensitive << wake_;
    dont_initialize();
  }

  void start_of_simulation() override {
    // From now on, work scheduled into this domain from elsewhere re-arms the process earlier if needed.
    domain_.set_wake_listener([this](TimeFs t) { arm(t); });
    arm(domain_.next_time());
  }

 private:
  static TimeFs now_fs() { return sc_core::sc_time_stamp().value(); }  // resolution is 1 fs

  void arm(TimeFs t) {
    if (t == kTimeNever) return;
    const TimeFs now = now_fs();
    wake_.notify(t > now ? sc_core::sc_time::from_value(t - now) : sc_core::SC_ZERO_TIME);
  }

  void run_due_cycle() {
    try {
      if (domain_.next_time() == now_fs()) domain_.run_cycle(domain_.next_cycle());
    } catch (...) {
      // Errors found mid-run (e.g. a corrupt CTA block read on demand) leave SystemC untouched and are
      // rethrown to the caller as they were thrown, as under the plain driver.
      error_ = std::current_exception();
      sc_core::sc_stop();
      return;
    }
    if (finished_()) {
      sc_core::sc_stop();
      return;
    }
    arm(domain_.next_time());
  }

  ClockDomain& domain_;
  const std::function<bool()>& finished_;
  std::exception_ptr& error_;
  sc_core::sc_event wake_;
};

}  // namespace

bool run_with_systemc(Simulation& sim, const std::function<bool()>& finished) {
  static bool elaborated = false;
  WARPSIM_ASSERT(!elaborated, "SystemC allows one elaboration per process");
  elaborated = true;
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  // SystemC reports (e.g. "simulation stopped by user") are not for our users.
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);

  std::exception_ptr error;
  std::vector<std::unique_ptr<ScClockDomain>> modules;
  for (const auto& d : sim.domains())
    modules.push_back(std::make_unique<ScClockDomain>(("domain_" + d->name()).c_str(), *d, finished, error));
  sc_core::sc_start();
  for (const auto& d : sim.domains()) d->set_wake_listener({});
  // The SystemC kernel keeps references to its modules until the process exits.
  for (auto& m : modules) m.release();
  if (error) std::rethrow_exception(error);
  return finished();
}

}  // namespace warpsim
