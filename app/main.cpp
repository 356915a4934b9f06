// Entry point. libsystemc.so brings its own main(); ours wins, so that SystemC's banner can be switched off
// before the SystemC kernel starts, and hands over to SystemC's start-up (which calls sc_main) as its main would.
#include <csignal>
#include <cstdlib>

#include "app/commands.h"

// Declared in sysc/kernel/sc_externs.h (not included: keeps SystemC headers out of the application).
extern "C" int sc_elab_and_sim(int argc, char* argv[]);

extern "C" int sc_main(int argc, char** argv) { return warpsim::warpsim_main(argc, argv); }

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  // Past a file-size limit (ulimit -f), a write then fails with EFBIG and is reported as an error naming the
  // file, instead of SIGXFSZ killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  return sc_elab_and_sim(argc, argv);
}
