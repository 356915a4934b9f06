// The files of one run, written so that readers never take a killed, failed or mixed set for a finished run.
// Each file goes to a temporary in the same directory and is renamed into place; run.json, the manifest
// (each file's name, size and FNV-1a hash, the warpsim version, the command line), is written the same way
// last. A directory is a complete run when its run.json exists and every file it lists matches it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace warpsim {

inline constexpr const char* kRunManifest = "run.json";

class ResultSetWriter {
 public:
  // Withdraws the set already in `dir`, if any (removes its run.json, and temporaries of killed runs), before
  // anything new is written: a rerun killed half-way must not leave the old manifest over new files.
  explicit ResultSetWriter(std::filesystem::path dir);

  // Writes `name` in the directory through a temporary renamed into place. Throws InputError naming the file
  // when it cannot be written (disk full, file-size limit); no partial file is left under its name.
  void write(const std::string& name, const std::string& text);

  // Writes run.json: from here on the set is complete.
  void commit(const std::string& version, const std::vector<std::string>& command_line);

 private:
  struct Entry {
    std::string name, hash;
    std::uint64_t bytes;
  };
  std::filesystem::path dir_;
  std::vector<Entry> written_;
};

// Writes `text` into `path` through a temporary in the same directory renamed into place: readers see the old
// file or the whole new one, never a part. Throws InputError naming the file when it cannot be written.
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

// Throws InputError ("incomplete run: ... (killed or still running?)") unless `dir` holds a run.json that lists
// `needed` (the file the reader is after) and every file it lists has the size and hash it records.
void verify_result_set(const std::filesystem::path& dir, const std::string& needed);

}  // namespace warpsim
