// A reader of comma-separated values as RFC 4180 defines them (fields in double quotes may hold commas, line
// breaks and doubled quotes; records end in CRLF or LF), for CSV exports of other tools (Nsight Compute).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace warpsim {

struct CsvRecord {
  int line = 0;                     // 1-based line where the record starts
  std::vector<std::string> fields;  // unquoted
};

// Splits `text` into records. Blank lines are skipped, and so is a UTF-8 byte-order mark. `skip_prefix`, when not
// empty, drops every line that starts with it outside quotes (a tool's own messages mixed into its output, such as
// Nsight Compute's "==PROF== ..."). Throws InputError "FILE:LINE:COL: ..." for a quote inside an unquoted field,
// text after a closing quote, or a quoted field still open at the end of the text; and for text that is not UTF-8
// or holds a NUL byte.
std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& file, std::string_view skip_prefix = {});

}  // namespace warpsim
