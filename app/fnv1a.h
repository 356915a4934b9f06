// FNV-1a, 64 bits: the config hash of stats.json and the file hashes of run.json. Not cryptographic: it tells
// damaged or mixed files from the ones a run wrote, not a forgery.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace warpsim {

class Fnv1a64 {
 public:
  void add(std::string_view bytes) {
    for (unsigned char c : bytes) hash_ = (hash_ ^ c) * 1099511628211ull;
  }
  std::string hex() const { return fmt::format("{:016x}", hash_); }

 private:
  std::uint64_t hash_ = 1469598103934665603ull;
};

}  // namespace warpsim
