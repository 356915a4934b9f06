#include "app/sweep/collect.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "app/json_input.h"
#include "app/result_set.h"
#include "app/sweep/job_runner.h"
#include "app/sweep/plan.h"
#include "sim/config/config.h"
#include "sim/config/input_file.h"
#include "sim/core/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace warpsim::sweep {
namespace {

inline constexpr const char* kDatabaseFile = "results.sqlite";

json read_json(const fs::path& file, const char* what) {
  return parse_json_input(read_input_file(file.string(), kNoSizeLimit, what), file.string());
}

}  // namespace

std::string runs_as(const json& job) { return job.contains("alias_of") ? job.at("alias_of").get<std::string>() : job.at("name").get<std::string>(); }

namespace {

// A kernel's headline stats, in stats.json's order: its numbers, utilisation, stalls, speed of light.
std::vector<std::pair<std::string, json>> headline_stats(const json& kernel) {
  std::vector<std::pair<std::string, json>> out;
  for (const auto& [key, value] : kernel.items()) {
    if (value.is_number() || value.is_boolean()) out.emplace_back(key, value);
    else if ((key == "utilization" || key == "stalls") && value.is_object())
      for (const auto& [k, v] : value.items())
        if (v.is_number()) out.emplace_back(key + "." + k, v);
  }
  if (const auto sol = kernel.find("speed_of_light"); sol != kernel.end() && sol->is_object()) {
    for (const char* side : {"compute", "memory"})
      if (sol->contains(side) && (*sol)[side].contains("pct_of_peak")) out.emplace_back(fmt::format("speed_of_light.{}_pct", side), (*sol)[side]["pct_of_peak"]);
    if (sol->contains("limiter") && (*sol)["limiter"].is_string()) out.emplace_back("speed_of_light.limiter", (*sol)["limiter"]);
  }
  return out;
}

std::string csv_cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number()) return format_number(v.get<double>());
  const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

struct JobResults {
  json stats;  // stats.json
  double wall_s = 0;
};

class Database {
 public:
  explicit Database(const std::string& path) : path_(path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) fail("open");
    exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;");
    exec(R"(CREATE TABLE jobs(name TEXT PRIMARY KEY, candidate TEXT, alias_of TEXT, runs_as TEXT, state TEXT,
              config_hash TEXT, workload TEXT, workload_kind TEXT, wall_s REAL, total_cycles INTEGER, total_time_us REAL);
            CREATE TABLE params(job TEXT, kind TEXT, name TEXT, value REAL, text TEXT);
            CREATE TABLE kernels(job TEXT, kernel INTEGER, name TEXT);
            CREATE TABLE stats(job TEXT, kernel INTEGER, name TEXT, value REAL);)");
  }
  ~Database() {
    for (auto& [sql, st] : statements_) sqlite3_finalize(st);
    if (db_) sqlite3_close(db_);
  }
  void exec(const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string e = error ? error : "?";
      sqlite3_free(error);
      throw InputError(fmt::format("{}: {}", path_, e));
    }
  }
  // Inserts one row; each value a JSON scalar (null, number, string, bool).
  void insert(const char* sql, const std::vector<json>& values) {
    sqlite3_stmt*& st = statements_[sql];
    if (!st && sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK) fail("prepare");
    for (std::size_t i = 0; i < values.size(); ++i) {
      const json& v = values[i];
      const int at = static_cast<int>(i + 1);
      if (v.is_null()) sqlite3_bind_null(st, at);
      else if (v.is_number_integer()) sqlite3_bind_int64(st, at, v.get<std::int64_t>());
      else if (v.is_number()) sqlite3_bind_double(st, at, v.get<double>());
      else if (v.is_boolean()) sqlite3_bind_int(st, at, v.get<bool>());
      else {
        const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
        sqlite3_bind_text(st, at, s.c_str(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      }
    }
    if (sqlite3_step(st) != SQLITE_DONE) fail("insert");
    sqlite3_reset(st);
  }
  void commit() { exec("COMMIT;"); }

 private:
  [[noreturn]] void fail(const char* what) {
    throw InputError(fmt::format("cannot {} the database '{}': {}", what, path_, db_ ? sqlite3_errmsg(db_) : "out of memory"));
  }
  std::string path_;
  sqlite3* db_ = nullptr;
  std::map<std::string, sqlite3_stmt*> statements_;
};

// A temporary name next to `path` (renamed into place when complete).
fs::path temporary_for(const fs::path& path) {
  return path.parent_path() / fmt::format(".{}.tmp.{}", path.filename().string(), getpid());
}

}  // namespace

std::string status_report(const std::string& run_dir, bool& all_done) {
  const json m = read_manifest(run_dir);
  std::map<JobState, std::size_t> counts;
  std::vector<std::string> problems;
  for (const auto& job : m.at("jobs")) {
    const std::string name = job.at("name");
    if (job.contains("alias_of")) {
      ++counts[JobState::alias];
      continue;
    }
    const fs::path dir = fs::path(run_dir) / kJobsDir / name;
    const JobState s = job_state(dir);
    ++counts[s];
    if (s == JobState::failed || s == JobState::unfinished) {
      std::string why = last_line(dir / (s == JobState::failed ? kFailedMarker : kUnfinishedMarker));
      if (const std::string log = last_line(dir / kJobLog); !log.empty()) why += fmt::format("\n      log: {}", log);
      problems.push_back(fmt::format("  {} {}: {}", state_name(s), name, why));
    }
  }
  std::string out = fmt::format("sweep {} ({} jobs): ", m.value("name", ""), m.at("jobs").size());
  std::vector<std::string> parts;
  for (JobState s : {JobState::pending, JobState::running, JobState::done, JobState::failed, JobState::unfinished, JobState::alias})
    parts.push_back(fmt::format("{} {}", counts[s], state_name(s)));
  out += fmt::format("{}\n", fmt::join(parts, ", "));
  for (const auto& p : problems) out += p + "\n";
  all_done = counts[JobState::pending] + counts[JobState::running] + counts[JobState::failed] + counts[JobState::unfinished] == 0;
  return out;
}

CollectSummary collect_results(const std::string& run_dir, const std::string& csv_path) {
  const json m = read_manifest(run_dir);
  const std::vector<std::string> params = m.at("param_columns"), workload_params = m.at("workload_columns");
  CollectSummary summary;

  // The results of every job that has them, read once (aliases share their original's).
  std::map<std::string, JobResults> results;
  for (const auto& job : m.at("jobs")) {
    const std::string source = runs_as(job);
    if (results.count(source)) continue;
    const fs::path dir = fs::path(run_dir) / kJobsDir / source;
    if (job_state(dir) != JobState::done) continue;
    JobResults r;
    r.stats = read_json(dir / kStatsFile, "job results");
    r.wall_s = read_json(dir / kDoneMarker, "job done marker").value("wall_s", 0.0);
    results.emplace(source, std::move(r));
  }

  // Stat columns: the union over all kernels, in first-seen order.
  std::vector<std::string> stat_columns;
  std::set<std::string> seen;
  for (const auto& [name, r] : results)
    for (const json& kernel : r.stats.at("kernels"))
      for (const auto& [stat, value] : headline_stats(kernel))
        if (seen.insert(stat).second) stat_columns.push_back(stat);

  const fs::path db_path = fs::path(run_dir) / kDatabaseFile, db_tmp = temporary_for(db_path);
  std::error_code ec;
  fs::remove(db_tmp, ec);
  std::string csv;
  {
    Database db(db_tmp.string());
    std::vector<std::string> header{"job", "candidate", "alias_of", "config_hash", "workload", "workload_kind"};
    header.insert(header.end(), params.begin(), params.end());
    for (const auto& w : workload_params) header.push_back("workload." + w);
    for (const char* c : {"kernel", "kernel_name", "job_total_cycles", "job_total_time_us", "wall_s"}) header.push_back(c);
    header.insert(header.end(), stat_columns.begin(), stat_columns.end());
    std::vector<std::string> cells;
    for (const auto& h : header) cells.push_back(csv_cell(h));
    csv += fmt::format("{}\n", fmt::join(cells, ","));

    for (const auto& job : m.at("jobs")) {
      const std::string name = job.at("name"), source = runs_as(job);
      const json& workload = job.at("workload");
      const auto found = results.find(source);
      const JobState state = job.contains("alias_of") ? JobState::alias : job_state(fs::path(run_dir) / kJobsDir / name);
      const json alias = job.contains("alias_of") ? job.at("alias_of") : json();
      const bool has = found != results.end();
      db.insert("INSERT INTO jobs VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                {name, job.at("candidate"), alias, source, state_name(state), job.at("config_hash"), workload.at("label"),
                 workload.at("kind"), has ? json(found->second.wall_s) : json(),
                 has ? found->second.stats.at("total_cycles") : json(), has ? found->second.stats.at("total_time_us") : json()});
      const auto add_params = [&](const char* kind, const json& values) {
        for (const auto& [key, v] : values.items())
          db.insert("INSERT INTO params VALUES(?,?,?,?,?)",
                    {name, kind, key, v.is_number() ? v : json(), v.is_number() ? json() : json(csv_cell(v))});
      };
      add_params("design", job.at("design_point"));
      add_params("workload", workload.at("params"));
      if (!has) {
        ++summary.jobs_without;
        continue;
      }
      ++summary.jobs_with_results;
      const JobResults& r = found->second;
      const json& kernels = r.stats.at("kernels");
      for (std::size_t k = 0; k < kernels.size(); ++k) {
        const json& kernel = kernels[k];
        std::vector<std::string> row{csv_cell(name), csv_cell(job.at("candidate")), csv_cell(alias), csv_cell(job.at("config_hash")),
                                     csv_cell(workload.at("label")), csv_cell(workload.at("kind"))};
        for (const auto& p : params) row.push_back(csv_cell(job.at("design_point").value(p, json())));
        for (const auto& w : workload_params) row.push_back(csv_cell(workload.at("params").value(w, json())));
        row.push_back(std::to_string(k));
        row.push_back(csv_cell(kernel.value("name", "")));
        row.push_back(csv_cell(r.stats.at("total_cycles")));
        row.push_back(csv_cell(r.stats.at("total_time_us")));
        row.push_back(csv_cell(r.wall_s));
        std::map<std::string, json> values;
        for (auto& [stat, v] : headline_stats(kernel)) values[stat] = v;
        for (const auto& s : stat_columns) {
          const auto v = values.find(s);
          row.push_back(v == values.end() ? "" : csv_cell(v->second));
        }
        csv += fmt::format("{}\n", fmt::join(row, ","));
        ++summary.rows;
        db.insert("INSERT INTO kernels VALUES(?,?,?)", {name, k, kernel.value("name", "")});
        for (const auto& [stat, v] : values)
          if (v.is_number()) db.insert("INSERT INTO stats VALUES(?,?,?,?)", {name, k, stat, v});
        if (const auto counters = kernel.find("counters"); counters != kernel.end() && counters->is_object())
          for (const auto& [counter, v] : counters->items())
            if (v.is_number()) db.insert("INSERT INTO stats VALUES(?,?,?,?)", {name, k, "counters." + counter, v});
      }
    }
    db.exec("CREATE INDEX stats_job ON stats(job, kernel); CREATE INDEX params_job ON params(job);");
    db.commit();
  }
  fs::rename(db_tmp, db_path, ec);
  if (ec) throw InputError(fmt::format("cannot write '{}': {}", db_path.string(), ec.message()));
  write_file_atomically(csv_path, csv);
  return summary;
}

}  // namespace warpsim::sweep
