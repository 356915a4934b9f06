# Provides the target SystemC::systemc. An upstream CMake install of SystemC (SystemCLanguageConfig.cmake) wins;
# otherwise Debian's pkg-config file is used (Debian ships no CMake package for SystemC).
find_package(SystemCLanguage CONFIG QUIET)
if(NOT TARGET SystemC::systemc)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(SYSTEMC REQUIRED IMPORTED_TARGET GLOBAL systemc>=2.3.3)
  add_library(SystemC::systemc ALIAS PkgConfig::SYSTEMC)
endif()
