// Which cases of reference files a command works on: `validate` and `calibrate` read the same files and filter
// them the same way (--gpu: the same config file however it is named; --only: a regular expression on the id).
#pragma once

#include <string>
#include <vector>

#include "app/validate/reference.h"

namespace warpsim {

// Every case of `files`, checked (ids unique across the files too), then filtered by `gpu` (a config name or
// path; "" keeps all) and `only` (ECMAScript regex searched in the id; "" keeps all); then the cases an importer
// made of `import_file` (validate --ncu: each checked as a reference file's case, all on the importer's GPU),
// filtered by `only`. InputError, prefixed with `command`, when nothing is left.
std::vector<ReferenceCase> select_cases(const std::string& command, const std::vector<std::string>& files,
                                        const std::string& gpu, const std::string& only,
                                        const std::vector<ReferenceCase>& imported = {},
                                        const std::string& import_file = "");

}  // namespace warpsim
