#include "cache/database_file.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

#include "cache/sqlite_statement.hpp"
#include "tuned/error.hpp"

namespace tuned::cache::file {
namespace {

namespace fs = std::filesystem;
using sqlite::fail;

struct OpenInodes {
  std::mutex mutex;
  std::map<std::pair<dev_t, ino_t>, int> count;
};
// Never destroyed: databases held by other statics (the runtime's) close after it would be.
OpenInodes& open_inodes() {
  static OpenInodes* inodes = new OpenInodes;
  return *inodes;
}

// Runs body (which may open and close the file itself) only while no connection of this process
// has the file open; returns whether it ran.
template <typename Body>
bool while_not_open(const Identity& file, Body&& body) {
  OpenInodes& inodes = open_inodes();
  std::lock_guard<std::mutex> lock(inodes.mutex);
  if (auto it = inodes.count.find({file.device, file.inode}); it != inodes.count.end()) {
    return false;
  }
  body();
  return true;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// SQLite's URI form of a path, so that query parameters (immutable=1) can follow it.
std::string uri(const std::string& path, const char* parameters) {
  std::string text = "file:";
  static const char kHex[] = "0123456789ABCDEF";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      text += '%';
      text += kHex[static_cast<unsigned char>(c) >> 4];
      text += kHex[static_cast<unsigned char>(c) & 15];
    } else {
      text += c;
    }
  }
  return text + parameters;
}

// Opens and runs a first read, which is where SQLite meets the file's state (locks, WAL index,
// journal); on failure the handle is closed and Error thrown.
sqlite3* open_and_probe(const std::string& path, const std::string& name, int flags,
                        const std::function<void(sqlite3*)>& prepare) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string reason = sqlite::describe(db, rc, "cannot open");
    sqlite3_close_v2(db);
    fail(path, reason);
  }
  try {
    sqlite3_extended_result_codes(db, 1);
    if (prepare) prepare(db);
    sqlite::query_int(db, path, "SELECT count(*) FROM sqlite_master");
  } catch (...) {
    sqlite3_close_v2(db);
    throw;
  }
  return db;
}

// Copies a file byte for byte; false on any failure (the snapshot is then not made).
bool copy_file(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  return !ec;
}

}  // namespace

bool Identity::operator==(const Identity& o) const {
  return exists == o.exists && device == o.device && inode == o.inode && size == o.size &&
         modified.tv_sec == o.modified.tv_sec && modified.tv_nsec == o.modified.tv_nsec &&
         wal == o.wal && shm == o.shm && journal == o.journal && wal_size == o.wal_size;
}

Identity identify(const std::string& path) {
  Identity id;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.device = st.st_dev;
    id.inode = st.st_ino;
    id.size = st.st_size;
    id.modified = st.st_mtim;
  }
  if (::stat((path + "-wal").c_str(), &st) == 0) {
    id.wal = true;
    id.wal_size = st.st_size;
  }
  id.shm = exists(path + "-shm");
  id.journal = exists(path + "-journal");
  return id;
}

void check_openable(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && status.type() != fs::file_type::not_found) {
    fail(path, "cannot be examined: " + ec.message());  // a symlink loop, a folder we may not see
  }
  if (!fs::exists(status)) return;
  if (fs::is_directory(status)) fail(path, "is a folder, not a database file");
  if (!fs::is_regular_file(status)) {
    fail(path, "is not a regular file (a named pipe, device or socket), not a database file");
  }
  // SQLite reads a short foreign file as an empty database and a writer's schema would overwrite
  // it. An empty file is ours only with its pages still in the -wal file (a writer killed before
  // a checkpoint); a zero-byte file alone is refused untouched, not turned into a database.
  std::string refusal;
  while_not_open(identify(path), [&] {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;  // unreadable: SQLite's open says so
    char header[16] = {};
    const ssize_t got = ::pread(fd, header, sizeof header, 0);
    ::close(fd);
    if (got > 0 && (got < 16 || std::memcmp(header, "SQLite format 3", 16) != 0)) {
      refusal = sqlite::kNotADatabase;
    } else if (got == 0) {
      std::error_code wal_ec;
      const auto wal_bytes = fs::file_size(path + "-wal", wal_ec);
      if (wal_ec || wal_bytes == 0) {
        refusal = "file is empty, not a tuned database (remove it to start a new one there)";
      }
    }
  });
  if (!refusal.empty()) fail(path, refusal);
}

const char* to_string(ReadMode mode) {
  switch (mode) {
    case ReadMode::kImmutable:
      return "immutable";
    case ReadMode::kInPlace:
      return "in place";
    case ReadMode::kSnapshot:
      return "snapshot";
  }
  return "?";
}

void ReadConnection::close() {
  if (db != nullptr) sqlite3_close_v2(db);
  db = nullptr;
  if (!snapshot_dir.empty()) {
    std::error_code ec;
    fs::remove_all(snapshot_dir, ec);
    snapshot_dir.clear();
  }
}

ReadConnection open_reader(const std::string& path, const std::function<void(sqlite3*)>& prepare) {
  ReadConnection c;
  c.opened = identify(path);
  const int read_only = SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX;
  auto immutable = [&] {
    c.mode = ReadMode::kImmutable;
    c.db = open_and_probe(path, uri(path, "?immutable=1"), read_only | SQLITE_OPEN_URI, prepare);
  };
  if (!c.opened.wal && !c.opened.journal) {
    // No writer is inside a transaction (it would have made a -wal or a -journal first), so the
    // file alone holds every committed row, and a writer's next change shows in identify().
    immutable();
    return c;
  }
  std::exception_ptr in_place_failure;
  if (c.opened.wal && c.opened.shm) {
    // A writer's WAL index exists: read through it (SQLite reads a -shm it may not write), and
    // nothing new is created beside the file.
    try {
      c.mode = ReadMode::kInPlace;
      c.db = open_and_probe(path, path, read_only, prepare);
      return c;
    } catch (const Error&) {
      in_place_failure = std::current_exception();  // e.g. an index a crashed writer left: a
                                                    // snapshot recovers it
    }
  }
  // A -wal without its index (a writer in exclusive locking mode, a copied database) or a rollback
  // journal: reading in place would create the index beside the file or need to roll the journal
  // back. A private copy is read instead, journal and -wal first, so that a writer's commit
  // during the copy leaves a state SQLite's recovery makes consistent.
  auto bytes = [](const std::string& name) {
    struct stat st;
    return ::stat(name.c_str(), &st) == 0 ? st.st_size : off_t{0};
  };
  const off_t wal_bytes = bytes(path + "-wal"), journal_bytes = bytes(path + "-journal");
  bool copied = false;
  if (c.opened.size + wal_bytes + journal_bytes <= kMaxSnapshotBytes) {
    std::string dir = (fs::temp_directory_path() / "tuned-read-XXXXXX").string();
    if (::mkdtemp(dir.data()) != nullptr) {
      c.snapshot_dir = dir;
      const std::string copy = dir + "/tuned.db";
      while_not_open(c.opened, [&] {
        copied = (!c.opened.journal || copy_file(path + "-journal", copy + "-journal")) &&
                 (!c.opened.wal || copy_file(path + "-wal", copy + "-wal")) &&
                 copy_file(path, copy);
      });
      if (copied) {
        try {
          c.mode = ReadMode::kSnapshot;
          c.db = open_and_probe(path, copy, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, prepare);
          return c;
        } catch (const Error&) {
          if (!in_place_failure) in_place_failure = std::current_exception();
        }
      }
      c.close();
    }
  }
  if (in_place_failure) std::rethrow_exception(in_place_failure);
  immutable();
  c.note = std::string("read without the rows its ") +
           (c.opened.wal ? "-wal file holds" : "-journal file would restore") +
           " (no shared index beside it to read it through, and no private copy could be made)";
  return c;
}

bool create_atomically(const std::string& path,
                       const std::function<void(sqlite3*, const std::string&)>& build) {
  static std::atomic<unsigned> counter{0};
  const std::string temporary =
      path + ".new-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  auto remove_temporary = [&] {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      ::unlink((temporary + suffix).c_str());
    }
  };
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(temporary.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  try {
    if (rc != SQLITE_OK) fail(path, sqlite::describe(db, rc, "cannot create"));
    build(db, path);
  } catch (...) {
    sqlite3_close_v2(db);
    remove_temporary();
    throw;
  }
  // Closing the last connection checkpoints the WAL into the file and deletes the -wal.
  rc = sqlite3_close(db);
  if (rc != SQLITE_OK) {
    sqlite3_close_v2(db);
    remove_temporary();
    fail(path, std::string("cannot create: closing the new file failed: ") + sqlite3_errstr(rc));
  }
  // link() never replaces: of processes creating the database together, one file wins whole.
  int result = ::link(temporary.c_str(), path.c_str());
  int error = result == 0 ? 0 : errno;
  if (result != 0 && error != EEXIST) {
    // A file system without hard links: a rename that refuses to replace does the same.
    result = ::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
    error = result == 0 ? 0 : errno;
  }
  remove_temporary();
  if (error == EEXIST) return false;
  if (error != 0) fail(path, "cannot create: " + std::string(std::strerror(error)));
  return true;
}

std::string cubin_distrust(const std::string& path) {
  const uid_t me = ::geteuid();
  // "" when st passes, else what is wrong with it.
  auto owned_and_closed = [me](const struct stat& st, bool folder) -> std::string {
    if (st.st_uid != me && st.st_uid != 0) {
      return "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
             std::to_string(me) + ") or root";
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !(folder && (st.st_mode & S_ISVTX) != 0)) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return std::string("writable by ") + ((st.st_mode & S_IWOTH) != 0 ? "others" : "its group") +
             " (mode " + mode + ")";
    }
    return "";
  };
  struct stat st;
  for (const std::string file : {path, path + "-wal"}) {
    if (::stat(file.c_str(), &st) != 0) {
      if (file == path) return "'" + path + "' cannot be examined: " + std::strerror(errno);
      continue;  // no -wal
    }
    if (std::string why = owned_and_closed(st, false); !why.empty()) {
      return "'" + file + "' is " + why;
    }
  }
  std::error_code ec;
  std::vector<fs::path> folders = {fs::absolute(path, ec).parent_path()};
  const fs::path real = fs::canonical(path, ec);
  if (!ec && real.parent_path() != folders.front()) folders.push_back(real.parent_path());
  for (const fs::path& folder : folders) {
    if (::stat(folder.c_str(), &st) != 0) {
      return "folder '" + folder.string() + "' cannot be examined: " + std::strerror(errno);
    }
    if (std::string why = owned_and_closed(st, true); !why.empty()) {
      return "its folder '" + folder.string() + "' is " + why;
    }
  }
  return "";
}

void note_open(const Identity& file) {
  OpenInodes& inodes = open_inodes();
  std::lock_guard<std::mutex> lock(inodes.mutex);
  ++inodes.count[{file.device, file.inode}];
}

void note_closed(const Identity& file) {
  OpenInodes& inodes = open_inodes();
  std::lock_guard<std::mutex> lock(inodes.mutex);
  auto it = inodes.count.find({file.device, file.inode});
  if (it != inodes.count.end() && --it->second == 0) inodes.count.erase(it);
}

}  // namespace tuned::cache::file
