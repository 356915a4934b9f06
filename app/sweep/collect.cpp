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
#include "app/sweep/results.h"
#include "sim/config/config.h"
#include "sim/config/input_file.h"
#include "sim/core/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace warpsim::sweep {
namespace {

inline constexpr const char* kDatabaseFile = "results.sqlite";

}  // namespace

std::string runs_as(const json& job) { return job.contains("alias_of") ? job.at("alias_of").get<std::string>() : job.at("name").get<std::string>(); }

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

namespace {

class Database {
 public:
  explicit Database(const std::string& path) : path_(path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) fail("open");
    exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;");
    exec(R"(CREATE TABLE jobs(name TEXT PRIMARY KEY, candidate TEXT, alias_of TEXT, runs_as TEXT, state TEXT,
              config_hash TEXT, workload TEXT, workload_kind TEXT, wall_s REAL, total_cycles INTEGER, total_time_us REAL);
            CREATE TABLE params(job TEXT, kind TEXT, name TEXT, value REAL, text TEXT);
            CREATE TABLE job_stats(job TEXT, name TEXT, value REAL, text TEXT);
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
  const RunResults results = load_run_results(run_dir);
  const std::vector<std::string>& params = results.param_columns;
  const std::vector<std::string>& workload_params = results.workload_columns;
  CollectSummary summary;

  // Job and stat columns: the union over all jobs and kernels, in first-seen order (jobs in the manifest's order).
  std::vector<std::string> job_stat_columns, stat_columns;
  std::set<std::string> seen;
  for (const JobResult& job : results.jobs) {
    if (!job.stats) continue;
    for (const auto& [column, value] : job_columns(job))
      if (seen.insert(column).second) job_stat_columns.push_back(column);
    for (const json& kernel : job.stats->at("kernels"))
      for (const auto& [stat, value] : kernel_columns(kernel))
        if (seen.insert(stat).second) stat_columns.push_back(stat);
  }

  const fs::path db_path = fs::path(run_dir) / kDatabaseFile, db_tmp = temporary_for(db_path);
  std::error_code ec;
  fs::remove(db_tmp, ec);
  std::string csv;
  {
    Database db(db_tmp.string());
    std::vector<std::string> header{"job", "candidate", "alias_of", "config_hash", "workload", "workload_kind"};
    header.insert(header.end(), params.begin(), params.end());
    for (const auto& w : workload_params) header.push_back("workload." + w);
    for (const char* c : {"kernel", "kernel_name"}) header.push_back(c);
    header.insert(header.end(), job_stat_columns.begin(), job_stat_columns.end());
    header.insert(header.end(), stat_columns.begin(), stat_columns.end());
    std::vector<std::string> cells;
    for (const auto& h : header) cells.push_back(csv_cell(h));
    csv += fmt::format("{}\n", fmt::join(cells, ","));

    for (const JobResult& job : results.jobs) {
      const json alias = job.alias_of.empty() ? json() : json(job.alias_of);
      const bool has = job.stats != nullptr;
      db.insert("INSERT INTO jobs VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                {job.name, job.candidate, alias, job.runs_as, state_name(job.state), job.config_hash, job.workload,
                 job.workload_kind, has ? json(job.wall_s) : json(), has ? job.stats->at("total_cycles") : json(),
                 has ? job.stats->at("total_time_us") : json()});
      const auto add_params = [&](const char* kind, const json& values) {
        for (const auto& [key, v] : values.items())
          db.insert("INSERT INTO params VALUES(?,?,?,?,?)",
                    {job.name, kind, key, v.is_number() ? v : json(), v.is_number() ? json() : json(csv_cell(v))});
      };
      add_params("design", job.design_point);
      add_params("workload", job.workload_params);
      if (!has) {
        ++summary.jobs_without;
        continue;
      }
      ++summary.jobs_with_results;
      std::map<std::string, json> job_values;
      for (auto& [column, v] : job_columns(job)) {
        job_values[column] = v;
        db.insert("INSERT INTO job_stats VALUES(?,?,?,?)", {job.name, column, v.is_number() ? v : json(), v.is_number() ? json() : json(csv_cell(v))});
      }
      const json& kernels = job.stats->at("kernels");
      for (std::size_t k = 0; k < kernels.size(); ++k) {
        const json& kernel = kernels[k];
        std::vector<std::string> row{csv_cell(job.name), csv_cell(job.candidate), csv_cell(alias), csv_cell(job.config_hash),
                                     csv_cell(job.workload), csv_cell(job.workload_kind)};
        for (const auto& p : params) row.push_back(csv_cell(job.design_point.value(p, json())));
        for (const auto& w : workload_params) row.push_back(csv_cell(job.workload_params.value(w, json())));
        row.push_back(std::to_string(k));
        row.push_back(csv_cell(kernel.value("name", "")));
        for (const auto& c : job_stat_columns) {
          const auto v = job_values.find(c);
          row.push_back(v == job_values.end() ? "" : csv_cell(v->second));
        }
        std::map<std::string, json> values;
        for (auto& [stat, v] : kernel_columns(kernel)) values[stat] = v;
        for (const auto& s : stat_columns) {
          const auto v = values.find(s);
          row.push_back(v == values.end() ? "" : csv_cell(v->second));
        }
        csv += fmt::format("{}\n", fmt::join(row, ","));
        ++summary.rows;
        db.insert("INSERT INTO kernels VALUES(?,?,?)", {job.name, k, kernel.value("name", "")});
        for (const auto& [stat, v] : values)
          if (v.is_number()) db.insert("INSERT INTO stats VALUES(?,?,?,?)", {job.name, k, stat, v});
        if (const auto counters = kernel.find("counters"); counters != kernel.end() && counters->is_object())
          for (const auto& [counter, v] : counters->items())
            if (v.is_number()) db.insert("INSERT INTO stats VALUES(?,?,?,?)", {job.name, k, "counters." + counter, v});
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
