// The one Catch2 main of every test executable (unit, integration, slurm): Catch2's implementation is the slowest
// translation unit of the build, so it is compiled once (tests/CMakeLists.txt: catch_main) and linked by each.
// libsystemc.so defines main() and references sc_main, so executables that link SystemC need a dummy sc_main;
// Catch2's main wins and the dummy is never called (in the unit tests, which do not link SystemC, it is unused).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

extern "C" int sc_main(int, char**) { return 0; }
