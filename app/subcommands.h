// Table-driven dispatch of a command line's first word (`warpsim CMD ...`, `warpsim sweep SUB ...`): one place
// for usage, help and the "did you mean" error of an unknown name.
#pragma once

#include <string>
#include <vector>

namespace warpsim {

struct NamedCommand {
  std::string name;
  int (*run)(int argc, char** argv);  // called with argv[0] = the name
};

// Runs the command that argv[1] names with (argc - 1, argv + 1). No name: the usage on stderr, exit status 2;
// --help, -h or help: the usage on stdout, 0. An unknown name throws InputError naming it (`what` says what kind
// of name, e.g. "command"), with the closest known one and the list of all.
int dispatch_command(const std::vector<NamedCommand>& commands, const std::string& what, const char* usage, int argc,
                     char** argv);

}  // namespace warpsim
