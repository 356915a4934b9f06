// "Did you mean" suggestions for misspelt sections, keys, implementations, choices and units.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "sim/config/config.h"

namespace warpsim {

namespace {

std::string lower(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Damerau-Levenshtein distance, optimal-string-alignment variant: insertions, deletions, substitutions and
// transpositions of adjacent characters ("cuont" -> "count") each cost 1.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

// Edits allowed before a candidate stops looking like a typo: a couple for short words, a third of longer ones.
constexpr std::size_t kMinSuggestDistance = 2;
constexpr std::size_t kSuggestLengthDivisor = 3;

}  // namespace

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  // Case-insensitive, so that `size_kib` finds `size_KiB` (distance 0 after folding).
  const std::string folded = lower(word);
  const std::size_t limit = std::max(kMinSuggestDistance, word.size() / kSuggestLengthDivisor);
  std::string best;
  std::size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = edit_distance(folded, lower(candidate));
    if (distance < best_distance) {  // strict: the first of equally close candidates wins
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace warpsim
