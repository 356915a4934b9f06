#include "sim/stats/json.h"

#include <cmath>
#include <cstdio>

namespace warpsim {

std::string JsonWriter::quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}

std::string JsonWriter::number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

void JsonWriter::key_prefix(const std::string& key) {
  if (!first_.empty()) {
    if (!first_.back()) out_ += ",";
    first_.back() = false;
    out_ += "\n" + std::string(first_.size() * 2, ' ');
  }
  if (!key.empty()) out_ += quote(key) + ": ";
}

JsonWriter& JsonWriter::begin_object(const std::string& key) {
  key_prefix(key);
  out_ += "{";
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) out_ += "\n" + std::string(first_.size() * 2, ' ');
  out_ += "}";
  if (first_.empty()) out_ += "\n";
  return *this;
}
JsonWriter& JsonWriter::begin_array(const std::string& key) {
  key_prefix(key);
  out_ += "[";
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) out_ += "\n" + std::string(first_.size() * 2, ' ');
  out_ += "]";
  return *this;
}
JsonWriter& JsonWriter::value(const std::string& key, const std::string& v) {
  key_prefix(key);
  out_ += quote(v);
  return *this;
}
JsonWriter& JsonWriter::value(const std::string& key, double v) {
  key_prefix(key);
  out_ += number(v);
  return *this;
}
JsonWriter& JsonWriter::value(const std::string& key, std::uint64_t v) {
  key_prefix(key);
  out_ += std::to_string(v);
  return *this;
}
JsonWriter& JsonWriter::value(const std::string& key, std::int64_t v) {
  key_prefix(key);
  out_ += std::to_string(v);
  return *this;
}
JsonWriter& JsonWriter::value(const std::string& key, bool v) {
  key_prefix(key);
  out_ += v ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::null(const std::string& key) {
  key_prefix(key);
  out_ += "null";
  return *this;
}

}  // namespace warpsim
