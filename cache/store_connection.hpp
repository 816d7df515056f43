// One connection to a PostgreSQL server, for the tuning store (cache/tuning_store.hpp) and its
// queue (cache/store_queue.hpp). libpq is loaded when a store is first named (dlopen of
// libpq.so.5), so libtuned and the tools run where it is absent and say so only to whoever asks
// for a store. The library's calls never come here.
//
// A store is named by a libpq connection string ("host=db1 dbname=tuned") or URI
// ("postgresql://tuner@db1/tuned"); the password comes from ~/.pgpass or PGPASSWORD as libpq
// reads them, TLS as the string asks. Errors name the store by host, port, database and user,
// never by the string itself (it may hold a password).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tuned::cache::store {

/// One row of a result, its fields as text (NULL: nullopt).
struct Row {
  std::vector<std::optional<std::string>> fields;
  const std::string& text(size_t i) const;  // throws for NULL
  int64_t int64(size_t i) const;
  double real(size_t i) const;
  bool is_null(size_t i) const { return !fields.at(i).has_value(); }
};

/// A statement's parameters, as text (nullopt: NULL), bound $1, $2, ...
class Params {
 public:
  Params& add(const std::string& value) { values_.emplace_back(value); return *this; }
  Params& add(const char* value) { values_.emplace_back(value); return *this; }
  Params& add(int64_t value) { values_.emplace_back(std::to_string(value)); return *this; }
  Params& add(int value) { return add(static_cast<int64_t>(value)); }
  Params& add(double value);  // exactly (shortest text that reads back)
  Params& add(bool value) { values_.emplace_back(value ? "true" : "false"); return *this; }
  Params& null() { values_.emplace_back(std::nullopt); return *this; }
  const std::vector<std::optional<std::string>>& values() const { return values_; }

 private:
  std::vector<std::optional<std::string>> values_;
};

/// What a statement did: its rows and how many rows it changed.
struct Result {
  std::vector<Row> rows;
  int64_t changed = 0;
};

/// The store as errors name it: "postgresql://user@host:port/dbname" with no password or other
/// option ("" fields left out).
std::string describe_store(const std::string& url);

class Connection {
 public:
  /// Connects, waiting up to connect_for for a server that is unreachable or starting; throws
  /// Error(TUNED_STATUS_DATABASE_ERROR) naming the store: no libpq, a malformed string, a server
  /// that refuses (a password, a database that does not exist: at once) or stays unreachable.
  /// retry_for: how long transaction() waits for a server that went away later.
  explicit Connection(const std::string& url,
                      std::chrono::milliseconds retry_for = std::chrono::seconds(60),
                      std::chrono::milliseconds connect_for = std::chrono::seconds(15));
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& name() const { return name_; }

  /// Runs one statement (an error is thrown as Error naming the store and what).
  Result exec(const std::string& sql, const Params& params = {}, const char* what = "query");

  /// Runs work inside BEGIN ... COMMIT. Where the connection breaks (the server restarted, a
  /// network error), it reconnects and runs work again from the start, for up to retry_for:
  /// work must be idempotent, as a transaction that never committed left nothing behind and
  /// one whose COMMIT was lost in transit must find its own rows and change nothing. Any other
  /// error rolls back and is thrown.
  void transaction(const std::function<void(Connection&)>& work, const char* what);
  /// The same for one statement outside an explicit transaction (its own).
  Result retried(const std::string& sql, const Params& params, const char* what);

  /// How long transaction() and retried() wait for a lost server (default: the constructor's).
  void set_retry_for(std::chrono::milliseconds retry_for) { retry_for_ = retry_for; }

 private:
  void connect_with_retry(std::chrono::milliseconds wait_for);
  bool try_connect(std::string& why);
  void close();
  // A lost connection or a transient failure: retried inside transaction(), thrown otherwise.
  [[noreturn]] void lost(const std::string& why, const char* what);

  std::string url_;
  std::string name_;
  std::chrono::milliseconds retry_for_;
  void* conn_ = nullptr;  // PGconn*
  bool in_transaction_ = false;
};

}  // namespace tuned::cache::store
