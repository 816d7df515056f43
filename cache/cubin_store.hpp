// The tuning database as the generator's cubin store, so a new process loads tuned kernels
// instead of recompiling them.
#pragma once

#include "cache/database.hpp"
#include "core/cubin.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {

class DatabaseCubinStore : public CubinStore {
 public:
  explicit DatabaseCubinStore(Database& db) : db_(db) {}
  std::optional<CubinRecord> find(const CubinKey& key) override { return db_.find_cubin(key); }
  // A cubin that cannot be stored (disk full, read-only file) is only a missed shortcut for the
  // next process: the kernel in hand still runs, so the failure is not the caller's.
  void put(const CubinKey& key, const CubinRecord& cubin) override {
    try {
      db_.put_cubin(key, cubin);
    } catch (const Error&) {
    }
  }
  // Likewise: an entry that stays only costs the next process the same recompile.
  void drop(const CubinKey& key) noexcept override {
    try {
      db_.drop_cubin(key);
    } catch (...) {
    }
  }

 private:
  Database& db_;
};

}  // namespace tuned::cache
