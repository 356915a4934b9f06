// Table-driven dispatch of a command line's first word (`warpsim CMD ...`, `warpsim sweep SUB ...`): one place
// for usage, help and the "did you mean" error of an unknown name.
#pragma once

#include <boost/program_options.hpp>
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

// Parses a command's options into `vm` (with -h/--help added). Without `positional`, a command takes no positional
// arguments, and a stray one (`warpsim run a100_sxm`) is an error naming `command` rather than silently ignored.
// Returns false after printing the usage and options for --help.
bool parse_command_options(const std::string& command, int argc, char** argv,
                           boost::program_options::options_description& desc, boost::program_options::variables_map& vm,
                           const std::string& usage,
                           const boost::program_options::positional_options_description* positional = nullptr);

}  // namespace warpsim
