// Tuning-database files in every state a user may leave one in, for the tests that check that no
// state of the cache fails a call (CPU: tests/cpu/cache_states_test.cpp, the runtime's choices;
// GPU: tests/gpu/cache_states_test.cpp, the three ops computing right in fresh processes).
#pragma once

#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "tests/common/temp_dir.hpp"

namespace tuned::testing {

// Schema version 1 exactly as migrate_to_1 created it (files written by builds before issue 7).
inline constexpr const char* kSchemaVersion1 = R"sql(
  CREATE TABLE devices (
    uuid TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, cc_major INTEGER NOT NULL,
    cc_minor INTEGER NOT NULL, sm_count INTEGER NOT NULL, memory_bytes INTEGER NOT NULL,
    clock_khz INTEGER NOT NULL, first_seen TEXT NOT NULL, last_seen TEXT NOT NULL);
  CREATE TABLE cubins (
    source_hash TEXT NOT NULL, options TEXT NOT NULL, arch TEXT NOT NULL,
    nvrtc_version TEXT NOT NULL, image BLOB NOT NULL, kernel_name TEXT NOT NULL,
    log TEXT NOT NULL, registers INTEGER NOT NULL, spill_bytes INTEGER NOT NULL,
    stack_bytes INTEGER NOT NULL, static_smem_bytes INTEGER NOT NULL, compile_ms REAL NOT NULL,
    created_at TEXT NOT NULL, PRIMARY KEY (source_hash, options, arch, nvrtc_version));
  CREATE TABLE sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, device_uuid TEXT NOT NULL, op TEXT NOT NULL,
    strategy TEXT NOT NULL, budget_s REAL NOT NULL, started_at TEXT NOT NULL);
  CREATE INDEX sessions_by_device_op ON sessions (device_uuid, op);
  CREATE TABLE trials (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id INTEGER REFERENCES sessions (id),
    device_uuid TEXT NOT NULL, op TEXT NOT NULL, layout TEXT NOT NULL, shape TEXT NOT NULL,
    d0 INTEGER, d1 INTEGER, d2 INTEGER, alignment INTEGER NOT NULL, config TEXT NOT NULL,
    kernel_name TEXT NOT NULL, disposition TEXT NOT NULL, message TEXT NOT NULL,
    ms_median REAL NOT NULL, ms_min REAL NOT NULL, runs INTEGER NOT NULL, tflops REAL NOT NULL,
    rel_error REAL NOT NULL, registers INTEGER NOT NULL, spill_bytes INTEGER NOT NULL,
    compile_ms REAL NOT NULL, created_at TEXT NOT NULL);
  CREATE INDEX trials_by_session ON trials (session_id);
  CREATE INDEX trials_by_device_op ON trials (device_uuid, op, layout, shape, alignment);
  CREATE TABLE best (
    id INTEGER PRIMARY KEY AUTOINCREMENT, device_uuid TEXT NOT NULL, op TEXT NOT NULL,
    layout TEXT NOT NULL, shape TEXT NOT NULL, d0 INTEGER, d1 INTEGER, d2 INTEGER,
    alignment INTEGER NOT NULL, config TEXT NOT NULL, kernel_name TEXT NOT NULL, ms REAL NOT NULL,
    tflops REAL NOT NULL, baseline_ms REAL NOT NULL, session_id INTEGER, updated_at TEXT NOT NULL,
    UNIQUE (device_uuid, op, layout, shape, alignment));
  PRAGMA user_version = 1;
  PRAGMA application_id = 1953853028;  -- 0x74756e64, "tund"
)sql";

// One best row of a schema-1 file.
inline constexpr const char* kVersion1Best = R"sql(
  INSERT INTO best (device_uuid, op, layout, shape, d0, d1, d2, alignment, config, kernel_name,
                    ms, tflops, baseline_ms, session_id, updated_at)
    VALUES ('GPU-old', 'gemm', 'NN', '1024x1024x1024', 1024, 1024, 1024, 4, 'BM=64', 'gemm_nn',
            0.5, 4.25, 0.55, NULL, '2026-01-01T00:00:00Z');
)sql";

// How many lines of text contain fragment (log lines naming a database).
inline int lines_naming(const std::string& text, const std::string& fragment) {
  int count = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    count += text.substr(start, end - start).find(fragment) != std::string::npos;
    start = end + 1;
  }
  return count;
}

// Runs SQL on a file with SQLite directly (not through tuned); throws on failure.
inline void run_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open(path.c_str(), &db);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  const std::string message = db ? sqlite3_errmsg(db) : "";
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error(path + ": " + message);
}

struct CacheState {
  std::string name;  // "schema 1", "locked", ...
  std::string path;
};

// Every state in one folder; the lock holder is a child process, stopped by the destructor.
class CacheStates {
 public:
  explicit CacheStates(const std::string& folder) : folder_(folder) {
    namespace fs = std::filesystem;
    fs::remove_all(folder_);
    fs::create_directories(folder_);
    add("schema 1",
        [](const std::string& p) { run_sql(p, std::string(kSchemaVersion1) + kVersion1Best); });
    add("newer schema", [](const std::string& p) {
      { cache::Database db(p); }
      run_sql(p, "ALTER TABLE best ADD COLUMN future TEXT; PRAGMA user_version = 7");
    });
    add("another application", [](const std::string& p) {
      run_sql(p, "PRAGMA application_id = 12345; CREATE TABLE orders (id INTEGER, total REAL)");
    });
    add("random bytes", [](const std::string& p) {
      std::mt19937 rng(29);
      std::string bytes(65536, '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      std::ofstream(p, std::ios::binary) << bytes;
    });
    add("zero bytes", [](const std::string& p) { std::ofstream(p).close(); });
    add("folder", [](const std::string& p) { fs::create_directories(p); });
    add("named pipe", [](const std::string& p) {
      if (::mkfifo(p.c_str(), 0600) != 0) throw std::runtime_error("mkfifo " + p);
    });
    add("symlink loop", [](const std::string& p) {
      fs::create_symlink(p + ".other", p);
      fs::create_symlink(p, p + ".other");
    });
    // Another process holds the database under an exclusive lock, inside a write transaction.
    add("locked", [this](const std::string& p) {
      { cache::Database db(p); }
      int ready[2];
      if (::pipe(ready) != 0) throw std::runtime_error("pipe");
      holder_ = ::fork();
      if (holder_ == 0) {
        sqlite3* db = nullptr;
        char ok = sqlite3_open(p.c_str(), &db) == SQLITE_OK &&
                          sqlite3_exec(db,
                                       "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; "
                                       "INSERT INTO devices VALUES ('GPU-lock', 'held', 9, 0, 1, "
                                       "1, 1, 'now', 'now')",
                                       nullptr, nullptr, nullptr) == SQLITE_OK
                      ? 1
                      : 0;
        if (::write(ready[1], &ok, 1) != 1) _exit(2);
        ::pause();  // until the destructor's SIGTERM
        _exit(0);
      }
      char ok = 0;
      if (::read(ready[0], &ok, 1) != 1 || !ok) throw std::runtime_error("lock holder failed");
      ::close(ready[0]);
      ::close(ready[1]);
    });
  }
  ~CacheStates() {
    if (holder_ > 0) {
      ::kill(holder_, SIGTERM);
      ::waitpid(holder_, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(folder_, ec);
  }
  CacheStates(const CacheStates&) = delete;
  CacheStates& operator=(const CacheStates&) = delete;

  const std::vector<CacheState>& states() const { return states_; }

  // What the state is on disk, to compare before and after: the bytes of a regular file (and of
  // its side files), the entries of a folder, the kind of anything else.
  static std::string fingerprint(const std::string& path) {
    namespace fs = std::filesystem;
    std::string text;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      const std::string p = path + suffix;
      std::error_code ec;
      const auto status = fs::symlink_status(p, ec);
      if (ec || !fs::exists(status)) continue;
      text += std::string("[") + suffix + "] ";
      if (fs::is_symlink(status)) {
        text += "link " + fs::read_symlink(p, ec).string();
      } else if (fs::is_regular_file(status)) {
        std::ifstream in(p, std::ios::binary);
        text += std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      } else if (fs::is_directory(status)) {
        for (const auto& entry : fs::directory_iterator(p, ec)) text += entry.path().string() + ";";
      } else {
        text += "special " + std::to_string(static_cast<int>(status.type()));
      }
    }
    // Nothing new beside it either.
    for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path())) {
      const std::string name = entry.path().filename().string();
      const std::string base = fs::path(path).filename().string();
      if (name.rfind(base, 0) == 0) text += "|" + name;
    }
    return text;
  }

 private:
  template <typename Make>
  void add(const std::string& name, Make&& make) {
    std::string file = name;
    for (char& c : file) c = c == ' ' ? '_' : c;
    const std::string path = folder_ + "/" + file + ".db";
    make(path);
    states_.push_back({name, path});
  }

  std::string folder_;
  std::vector<CacheState> states_;
  pid_t holder_ = -1;
};

}  // namespace tuned::testing
