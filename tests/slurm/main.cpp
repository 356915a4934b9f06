// Catch2 main for the Slurm backend's tests. They link the application library, hence SystemC, whose
// libsystemc.so defines main() and references sc_main: a dummy sc_main links it; Catch2's main wins.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

extern "C" int sc_main(int, char**) { return 0; }
