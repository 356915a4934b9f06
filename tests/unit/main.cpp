// Catch2 main for the unit tests (kept alone: this TU is slow to compile and rarely changes).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
