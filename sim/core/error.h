// Errors the user can act on. Each carries one complete message (file, line or key, what was expected);
// the CLI prints it once and exits non-zero. Internal invariant violations use WARPSIM_ASSERT instead.
#pragma once

#include <stdexcept>
#include <string>

namespace warpsim {

// Bad user input: config, trace, command line, missing file.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration problem; the message starts with "file:line:col: dotted.key:".
class ConfigError : public InputError {
 public:
  using InputError::InputError;
};

// A malformed or unreadable trace; the message names the file and the position.
class TraceError : public InputError {
 public:
  using InputError::InputError;
};

// The simulation stopped making progress (deadlock, runaway); the message carries the diagnosis.
class SimulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace warpsim

#define WARPSIM_ASSERT(cond, msg)                                               \
  do {                                                                          \
    if (!(cond)) ::warpsim::assertion_failed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
