// The database file as the filesystem sees it, before and beside SQLite: what is at the path, how
// a reader opens it without writing a byte or leaving a file beside it, how a writer creates it
// atomically, and how an open reader notices that the file changed under it. Internal to cache/.
//
// Opening and closing a descriptor of a file drops every POSIX lock this process holds on it, and
// SQLite's locks are POSIX locks: code here opens the database file itself only while no
// connection of this process has it open (open_inodes), so a second handle never unlocks a first.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <ctime>
#include <functional>
#include <string>

struct sqlite3;

namespace tuned::cache::file {

/// The file and its side files at one moment, from stat() alone.
struct Identity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  timespec modified{};
  bool wal = false, shm = false, journal = false;  // -wal, -shm, -journal beside it
  off_t wal_size = 0;                              // commits in a -wal grow it
  bool operator==(const Identity& other) const;
};
Identity identify(const std::string& path);

/// Refuses, with Error(TUNED_STATUS_DATABASE_ERROR) naming the path and the reason, what no
/// connection should open: a folder, a named pipe, device or socket (an open would block or read
/// garbage), a symlink loop, a file whose header is not SQLite's, a zero-byte file with no -wal
/// (SQLite would make a database of it). A missing file is fine (the caller decides).
void check_openable(const std::string& path);

/// How a reader sees the file.
enum class ReadMode {
  kImmutable,  // no side file exists, so the file holds every committed row: read as immutable
               // (no lock, no side file); reopened when identify() changes
  kInPlace,    // a writer's -wal and -shm exist: read through them, read-only
  kSnapshot,   // a -wal without -shm, or a rollback journal: copied aside and read there
};
const char* to_string(ReadMode mode);

/// A reader's connection; its owner calls close() when done.
struct ReadConnection {
  sqlite3* db = nullptr;
  ReadMode mode = ReadMode::kImmutable;
  Identity opened;           // identify() just before opening
  std::string snapshot_dir;  // kSnapshot: the private folder, removed by close()
  std::string note;          // a line for the log where the view is not the whole truth
  void close();
};

/// Opens path for reading as above (SQLITE_OPEN_READONLY; the snapshot copy read-write, being
/// private); prepare(db) runs before the first read (busy handler). Files larger than
/// kMaxSnapshotBytes are not copied: the main file is read as immutable and `note` says that rows
/// committed in its -wal are not visible. Throws Error(DATABASE_ERROR) when the file cannot be
/// opened or read.
ReadConnection open_reader(const std::string& path, const std::function<void(sqlite3*)>& prepare);
constexpr off_t kMaxSnapshotBytes = off_t{64} << 20;

/// Creates the database at path atomically: `build` makes it under a temporary name in the same
/// folder, which is then linked into place only if nothing is there yet, so no process ever sees
/// a half-made file. Returns false when another process was first (its file stays).
bool create_atomically(const std::string& path,
                       const std::function<void(sqlite3*, const std::string&)>& build);

/// Why the library must not load cubins stored in the database at path, or "" when it may. A
/// cubin is code the library runs and its checksum proves no origin, so, as ssh treats its key
/// files: the file (and its -wal, where one exists) must be owned by the current user or root and
/// writable by neither group nor others, and so must the folder holding it (as given and after
/// symlinks), unless that folder is sticky (like /tmp: others cannot replace a file there).
std::string cubin_distrust(const std::string& path);

/// Counts this process's connections per file (by device and inode), so that the checks above
/// open the file only while none is open.
void note_open(const Identity& file);
void note_closed(const Identity& file);

}  // namespace tuned::cache::file
