// The cubins table: compiled kernels stored with their size and checksum, loaded only from a file
// that others cannot write (file::cubin_distrust), and dropped where damaged at rest.
#include <sqlite3.h>

#include <mutex>
#include <optional>
#include <string>

#include "cache/database.hpp"
#include "cache/database_file.hpp"
#include "cache/sqlite_statement.hpp"
#include "core/log.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

using sqlite::Statement;
using sqlite::Transaction;

}  // namespace

bool Database::cubins_trusted() const { return file::cubin_distrust(path_).empty(); }

std::optional<CubinRecord> Database::find_cubin(const CubinKey& key) {
  // The library runs what it loads: from a file others could have written, nothing (one line per
  // file and reason; the caller compiles from the config, as for a missing cubin).
  if (const std::string distrust = file::cubin_distrust(path_); !distrust.empty()) {
    log_once(LogLevel::kWarn, "untrusted cubins|" + path_ + "|" + distrust,
             "tuning database '" + path_ + "': no cubin is loaded from it (" + distrust +
                 "); kernels are compiled from their configs instead");
    return std::nullopt;
  }
  std::lock_guard lock(mutex_);
  CubinRecord c;
  std::optional<int64_t> stored_bytes;
  std::optional<std::string> stored_checksum;
  {
    Statement s(db_, path_,
                std::string("SELECT image, kernel_name, log, registers, spill_bytes, "
                            "stack_bytes, static_smem_bytes, compile_ms, ") +
                    (version_ >= 2 ? "image_bytes, image_checksum" : "NULL, NULL") +
                    " FROM cubins WHERE source_hash = ? AND options = ? AND arch = ? AND "
                    "nvrtc_version = ?",
                "find cubin");
    s.bind(1, key.source_hash).bind(2, key.options).bind(3, key.arch).bind(4, key.nvrtc_version);
    if (!s.step()) return std::nullopt;
    c.image = s.blob(0);
    c.kernel_name = s.text(1);
    c.log = s.text(2);
    c.registers = s.integer(3);
    c.spill_bytes = s.integer(4);
    c.stack_bytes = s.integer(5);
    c.static_smem_bytes = s.integer(6);
    c.compile_ms = s.real(7);
    if (!s.is_null(8)) stored_bytes = s.int64(8);
    if (!s.is_null(9)) stored_checksum = s.text(9);
  }
  // Rows of schema version 1 carry no checksum: trusted, as they always were.
  if (!stored_checksum) return c;
  const int64_t bytes = static_cast<int64_t>(c.image.size());
  const std::string checksum = cubin_checksum(c.image);
  if (bytes == stored_bytes.value_or(bytes) && checksum == *stored_checksum) return c;

  // Damaged at rest. Deleted only if the row is still the damaged one (another process may have
  // replaced it meanwhile); a failed delete is harmless, since the caller's recompiled cubin
  // replaces the row.
  std::string outcome = "deleted";
  if (access_ == Access::kRead) {
    outcome = "left in place (a read-only lookup)";
  } else
    try {
      Transaction transaction(db_, path_);
      Statement s(db_, path_,
                  "DELETE FROM cubins WHERE source_hash = ? AND options = ? AND arch = ? AND "
                  "nvrtc_version = ? AND image = ? AND image_checksum = ?",
                  "delete damaged cubin " + c.kernel_name);
      s.bind(1, key.source_hash).bind(2, key.options).bind(3, key.arch).bind(4, key.nvrtc_version);
      s.bind_blob(5, c.image).bind(6, *stored_checksum);
      s.run();
      transaction.commit();
    } catch (const Error& e) {
      outcome = std::string("not deleted: ") + e.what();
    }
  log_once(LogLevel::kWarn,
           "damaged cubin|" + path_ + "|" + key.source_hash + "|" + key.arch + "|" + key.options,
           "cubin of " + c.kernel_name + " in the tuning database '" + path_ + "' is damaged (" +
               std::to_string(bytes) + " bytes, checksum " + checksum + "; stored with " +
               (stored_bytes ? std::to_string(*stored_bytes) : std::string("?")) +
               " bytes, checksum " + *stored_checksum + "): " + outcome +
               "; it will be recompiled");
  return std::nullopt;
}

void Database::put_cubin(const CubinKey& key, const CubinRecord& cubin) {
  writing("store a cubin");
  std::lock_guard lock(mutex_);
  Transaction transaction(db_, path_);
  Statement s(db_, path_,
              "INSERT OR REPLACE INTO cubins (source_hash, options, arch, nvrtc_version, image, "
              "kernel_name, log, registers, spill_bytes, stack_bytes, static_smem_bytes, "
              "compile_ms, image_bytes, image_checksum, created_at) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " TUNED_NOW ")",
              "store cubin " + cubin.kernel_name);
  s.bind(1, key.source_hash).bind(2, key.options).bind(3, key.arch).bind(4, key.nvrtc_version);
  s.bind_blob(5, cubin.image);
  s.bind(6, cubin.kernel_name)
      .bind(7, cubin.log)
      .bind(8, cubin.registers)
      .bind(9, cubin.spill_bytes)
      .bind(10, cubin.stack_bytes)
      .bind(11, cubin.static_smem_bytes)
      .bind(12, cubin.compile_ms)
      .bind(13, static_cast<int64_t>(cubin.image.size()))
      .bind(14, cubin_checksum(cubin.image));
  s.run();
  transaction.commit();
}

void Database::drop_cubin(const CubinKey& key) {
  writing("drop a cubin");
  std::lock_guard lock(mutex_);
  Transaction transaction(db_, path_);
  Statement s(db_, path_,
              "DELETE FROM cubins WHERE source_hash = ? AND options = ? AND arch = ? AND "
              "nvrtc_version = ?",
              "drop cubin");
  s.bind(1, key.source_hash).bind(2, key.options).bind(3, key.arch).bind(4, key.nvrtc_version);
  s.run();
  transaction.commit();
}

}  // namespace tuned::cache
