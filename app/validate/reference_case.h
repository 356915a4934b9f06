// One validation case of `warpsim validate`: a measured figure of a real GPU and the workload that reproduces it
// (the shared design of validate; reference files and importers such as Nsight Compute's produce these).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace warpsim {

struct ReferenceCase {
  std::string id, gpu;                        // gpu: config name or path (already resolved against the file's dir)
  std::vector<std::string> overrides;         // "section.key=value" from `set:`
  std::string kind;                           // workload.kind
  std::map<std::string, std::string> keys;    // workload keys except kind, values as text
  std::string metric;
  double measured = 0;
  std::string source, category, tunes, note;
  std::string file; int line = 0;             // where the case starts, for messages
};

}  // namespace warpsim
