// Catch2 main for the integration tests. libsystemc.so defines main() and references sc_main, so a dummy
// sc_main is needed to link; Catch2's main wins and the dummy is never called.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

extern "C" int sc_main(int, char**) { return 0; }
