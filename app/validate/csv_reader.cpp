#include "app/validate/csv_reader.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/config/input_file.h"
#include "sim/core/error.h"

namespace warpsim {
namespace {

// Line and column (1-based, in bytes) of `offset` in `text`.
std::pair<int, int> position_of(std::string_view text, std::size_t offset) {
  const std::string_view before = text.substr(0, offset);
  const int line = 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  const std::size_t line_start = before.rfind('\n');
  const int column = static_cast<int>(offset - (line_start == std::string_view::npos ? 0 : line_start + 1)) + 1;
  return {line, column};
}

[[noreturn]] void fail_at(std::string_view text, std::size_t offset, const std::string& file, const std::string& what) {
  const auto [line, column] = position_of(text, offset);
  throw InputError(fmt::format("{}:{}:{}: {}", file, line, column, what));
}

}  // namespace

std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& file, std::string_view skip_prefix) {
  std::size_t bad = 0;
  if (const std::string problem = text_problem(text, bad); !problem.empty()) fail_at(text, bad, file, problem);

  std::vector<CsvRecord> records;
  std::size_t i = 0;
  int line = 1;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  // Records end in LF or CRLF (a CR elsewhere is data).
  const auto at_line_end = [&](std::size_t j) {
    return j >= text.size() || text[j] == '\n' || (text[j] == '\r' && (j + 1 == text.size() || text[j + 1] == '\n'));
  };
  // Consumes the line break at `i`, if any.
  const auto take_line_break = [&]() {
    if (i < text.size() && text[i] == '\r') ++i;
    if (i < text.size() && text[i] == '\n') ++i;
    ++line;
  };

  while (i < text.size()) {
    if (at_line_end(i)) {  // blank line
      take_line_break();
      continue;
    }
    if (!skip_prefix.empty() && text.substr(i, skip_prefix.size()) == skip_prefix) {
      while (!at_line_end(i)) ++i;
      take_line_break();
      continue;
    }
    CsvRecord record;
    record.line = line;
    for (;;) {  // one field per iteration
      std::string field;
      if (i < text.size() && text[i] == '"') {
        const std::size_t open = i++;
        for (;;) {
          if (i >= text.size()) fail_at(text, open, file, "quoted field not closed: a '\"' is missing");
          const char c = text[i];
          if (c == '"') {
            if (i + 1 < text.size() && text[i + 1] == '"') {  // a doubled quote stands for one
              field += '"';
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          if (c == '\n') ++line;
          field += c;
          ++i;
        }
        if (!at_line_end(i) && text[i] != ',')
          fail_at(text, i, file, fmt::format("unexpected '{}' after the closing quote of a field (expected ',' or the end of the line)",
                                             printable(text.substr(i, 1))));
      } else {
        const std::size_t start = i;
        while (!at_line_end(i) && text[i] != ',') {
          if (text[i] == '"')
            fail_at(text, i, file, "'\"' inside a field that does not start with one (quote the whole field, doubling inner quotes)");
          ++i;
        }
        field.assign(text.substr(start, i - start));
      }
      record.fields.push_back(std::move(field));
      if (i < text.size() && text[i] == ',') {
        ++i;
        continue;
      }
      break;  // end of line or of the text
    }
    records.push_back(std::move(record));
    take_line_break();
  }
  return records;
}

}  // namespace warpsim
