#include "app/result_set.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "app/fnv1a.h"
#include "app/json_input.h"
#include "sim/config/input_file.h"
#include "sim/core/error.h"

namespace warpsim {
namespace {

namespace fs = std::filesystem;

// Temporaries are named so that a later run into the directory recognises, and removes, those of killed runs.
constexpr std::string_view kPartialPrefix = ".warpsim-partial-";

std::string hash_of(const std::string& bytes) {
  Fnv1a64 h;
  h.add(bytes);
  return h.hex();
}

// 0, or the errno of the write that failed.
int write_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR) return errno;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  return 0;
}

// `text` into `path` through a temporary in the same directory (rename is atomic only within a file system).
// No fsync: a kill does not lose written data, and after a power loss run.json's hashes expose a file that
// did not reach the disk.
void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path temporary = path.parent_path() / fmt::format("{}{}-{}", kPartialPrefix, path.filename().string(), ::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw InputError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(errno)));
  int error = write_all(fd, text);
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    throw InputError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(error)));
  }
}

[[noreturn]] void incomplete(const fs::path& dir, const std::string& why) {
  throw InputError(fmt::format("incomplete run: '{}': {} (killed or still running?)", dir.string(), why));
}

}  // namespace

void write_file_atomically(const fs::path& path, const std::string& text) { write_atomically(path, text); }

ResultSetWriter::ResultSetWriter(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::remove(dir_ / kRunManifest, ec);
  if (ec) throw InputError(fmt::format("cannot remove the earlier '{}': {}", (dir_ / kRunManifest).string(), ec.message()));
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec))
    if (e.path().filename().string().rfind(kPartialPrefix, 0) == 0) fs::remove(e.path(), ec);
}

void ResultSetWriter::write(const std::string& name, const std::string& text) {
  write_atomically(dir_ / name, text);
  written_.push_back({name, hash_of(text), text.size()});
}

void ResultSetWriter::commit(const std::string& version, const std::vector<std::string>& command_line) {
  nlohmann::ordered_json manifest;
  manifest["warpsim_version"] = version;
  manifest["command_line"] = command_line;
  manifest["files"] = nlohmann::ordered_json::array();
  for (const Entry& e : written_)
    manifest["files"].push_back({{"name", e.name}, {"bytes", e.bytes}, {"fnv1a64", e.hash}});
  write_atomically(dir_ / kRunManifest, manifest.dump(2) + "\n");
}

void verify_result_set(const fs::path& dir, const std::string& needed) {
  std::error_code ec;
  if (!fs::exists(dir / kRunManifest, ec)) incomplete(dir, fmt::format("no {}", kRunManifest));
  const std::string manifest_file = (dir / kRunManifest).string();
  const nlohmann::json manifest = parse_json_input(read_input_file(manifest_file, kMaxResultFileBytes, "run manifest"), manifest_file);
  const auto files = manifest.is_object() ? manifest.find("files") : manifest.end();
  if (files == manifest.end() || !files->is_array())
    throw InputError(fmt::format("'{}': files must be an array (not a warpsim run.json)", manifest_file));
  bool lists_needed = false;
  for (std::size_t i = 0; i < files->size(); ++i) {
    const nlohmann::json& f = (*files)[i];
    const bool well_formed = f.is_object() && f.value("name", nlohmann::json()).is_string() &&
                             f.value("bytes", nlohmann::json()).is_number_unsigned() &&
                             f.value("fnv1a64", nlohmann::json()).is_string();
    // A listed name is a file of the directory, nothing elsewhere.
    const std::string name = well_formed ? f["name"].get<std::string>() : "";
    if (!well_formed || name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      throw InputError(fmt::format("'{}': files[{}] must have a plain file name, bytes and fnv1a64", manifest_file, i));
    lists_needed = lists_needed || name == needed;
    const fs::path path = dir / name;
    const fs::file_status status = fs::status(path, ec);
    if (status.type() != fs::file_type::regular) incomplete(dir, fmt::format("{} is missing", name));
    const std::string bytes = read_input_file(path.string(), kMaxResultFileBytes, "result file");
    if (bytes.size() != f["bytes"].get<std::uint64_t>())
      incomplete(dir, fmt::format("{} has {} bytes, {} lists {}", name, bytes.size(), kRunManifest, f["bytes"].get<std::uint64_t>()));
    if (hash_of(bytes) != f["fnv1a64"].get<std::string>())
      incomplete(dir, fmt::format("{} is not the file {} lists (its hash differs)", name, kRunManifest));
  }
  if (!lists_needed) incomplete(dir, fmt::format("{} does not list {}", kRunManifest, needed));
}

}  // namespace warpsim
