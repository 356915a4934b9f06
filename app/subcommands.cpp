#include "app/subcommands.h"

#include <fmt/format.h>

#include <cstdio>

#include "sim/config/config.h"
#include "sim/core/error.h"

namespace warpsim {

int dispatch_command(const std::vector<NamedCommand>& commands, const std::string& what, const char* usage, int argc,
                     char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "{}", usage);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    fmt::print("{}", usage);
    return 0;
  }
  std::vector<std::string> names;
  for (const NamedCommand& c : commands) {
    if (c.name == name) return c.run(argc - 1, argv + 1);
    names.push_back(c.name);
  }
  const std::string hint = did_you_mean(name, names);
  throw InputError(fmt::format("unknown {} '{}'{}; expected one of: {} (see --help)", what, name,
                               hint.empty() ? "" : "; did you mean '" + hint + "'?", fmt::join(names, ", ")));
}

}  // namespace warpsim
