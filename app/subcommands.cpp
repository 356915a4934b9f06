#include "app/subcommands.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

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

namespace po = boost::program_options;

bool parse_command_options(const std::string& command, int argc, char** argv, po::options_description& desc,
                           po::variables_map& vm, const std::string& usage, const po::positional_options_description* positional) {
  desc.add_options()("help,h", "show this help");
  po::command_line_parser parser(argc, argv);
  // No guessing from a prefix: a mistyped key (--mm for --m) is an error naming it, not silently another key that
  // happens to start with it (--mma).
  parser.style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing);
  parser.options(desc);
  if (positional) parser.positional(*positional);
  const po::parsed_options parsed = parser.run();
  if (!positional) {
    const std::vector<std::string> stray = po::collect_unrecognized(parsed.options, po::include_positional);
    if (!stray.empty())
      throw InputError(fmt::format("{}: unexpected argument '{}': options are written --name value (see warpsim {} --help)",
                                   command, stray.front(), command));
  }
  po::store(parsed, vm);
  if (vm.count("help")) {
    fmt::print("{}\n\n{}\n", usage, fmt::streamed(desc));
    return false;
  }
  po::notify(vm);
  return true;
}

}  // namespace warpsim
