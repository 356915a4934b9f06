// A minimal streaming JSON writer (no JSON library is in the project's stack). Produces indented,
// deterministic output: numbers are printed with enough digits to round-trip.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace warpsim {

class JsonWriter {
 public:
  JsonWriter& begin_object(const std::string& key = {});
  JsonWriter& end_object();
  JsonWriter& begin_array(const std::string& key = {});
  JsonWriter& end_array();
  JsonWriter& value(const std::string& key, const std::string& v);
  JsonWriter& value(const std::string& key, const char* v) { return value(key, std::string(v)); }
  JsonWriter& value(const std::string& key, double v);
  JsonWriter& value(const std::string& key, std::uint64_t v);
  JsonWriter& value(const std::string& key, std::int64_t v);
  JsonWriter& value(const std::string& key, std::uint32_t v) { return value(key, std::uint64_t{v}); }
  JsonWriter& value(const std::string& key, bool v);
  JsonWriter& null(const std::string& key);
  const std::string& str() const { return out_; }

  static std::string quote(const std::string& s);
  static std::string number(double v);

 private:
  void key_prefix(const std::string& key);
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written yet
};

}  // namespace warpsim
