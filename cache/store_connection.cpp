#include "cache/store_connection.hpp"

#include <dlfcn.h>
#include <libpq-fe.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/log.hpp"
#include "tuned/error.hpp"

namespace tuned::cache::store {
namespace {

// The part of libpq the store uses, found in libpq.so.5 on first use.
struct LibPq {
  decltype(&PQconnectdb) connectdb = nullptr;
  decltype(&PQstatus) status = nullptr;
  decltype(&PQerrorMessage) error_message = nullptr;
  decltype(&PQfinish) finish = nullptr;
  decltype(&PQexec) exec = nullptr;
  decltype(&PQexecParams) exec_params = nullptr;
  decltype(&PQresultStatus) result_status = nullptr;
  decltype(&PQresultErrorMessage) result_error_message = nullptr;
  decltype(&PQresultErrorField) result_error_field = nullptr;
  decltype(&PQntuples) ntuples = nullptr;
  decltype(&PQnfields) nfields = nullptr;
  decltype(&PQgetvalue) getvalue = nullptr;
  decltype(&PQgetisnull) getisnull = nullptr;
  decltype(&PQcmdTuples) cmd_tuples = nullptr;
  decltype(&PQclear) clear = nullptr;
  decltype(&PQconninfoParse) conninfo_parse = nullptr;
  decltype(&PQconninfoFree) conninfo_free = nullptr;
  decltype(&PQsetNoticeProcessor) set_notice_processor = nullptr;
  std::string missing;  // why it could not be loaded ("" where it was)
};

template <typename F>
bool bind(void* handle, const char* name, F& target, std::string& missing) {
  target = reinterpret_cast<F>(dlsym(handle, name));
  if (!target && missing.empty()) missing = std::string("libpq lacks ") + name;
  return target != nullptr;
}

const LibPq& libpq() {
  static LibPq pq;
  static std::once_flag once;
  std::call_once(once, [] {
    // TUNED_LIBPQ: a libpq of the user's choosing (a path); else the system's.
    const char* chosen = std::getenv("TUNED_LIBPQ");
    void* handle = nullptr;
    for (const char* name : {chosen, "libpq.so.5", "libpq.so"}) {
      if (name && *name && (handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    }
    if (!handle) {
      pq.missing =
          "libpq (PostgreSQL's client library, Debian's libpq5) is not installed or not found; "
          "install it or set TUNED_LIBPQ to its path";
      return;
    }
    std::string& m = pq.missing;
    bind(handle, "PQconnectdb", pq.connectdb, m);
    bind(handle, "PQstatus", pq.status, m);
    bind(handle, "PQerrorMessage", pq.error_message, m);
    bind(handle, "PQfinish", pq.finish, m);
    bind(handle, "PQexec", pq.exec, m);
    bind(handle, "PQexecParams", pq.exec_params, m);
    bind(handle, "PQresultStatus", pq.result_status, m);
    bind(handle, "PQresultErrorMessage", pq.result_error_message, m);
    bind(handle, "PQresultErrorField", pq.result_error_field, m);
    bind(handle, "PQntuples", pq.ntuples, m);
    bind(handle, "PQnfields", pq.nfields, m);
    bind(handle, "PQgetvalue", pq.getvalue, m);
    bind(handle, "PQgetisnull", pq.getisnull, m);
    bind(handle, "PQcmdTuples", pq.cmd_tuples, m);
    bind(handle, "PQclear", pq.clear, m);
    bind(handle, "PQconninfoParse", pq.conninfo_parse, m);
    bind(handle, "PQconninfoFree", pq.conninfo_free, m);
    bind(handle, "PQsetNoticeProcessor", pq.set_notice_processor, m);
  });
  return pq;
}

[[noreturn]] void fail(const std::string& store, const std::string& what) {
  throw Error(TUNED_STATUS_DATABASE_ERROR, "store " + store + ": " + what);
}

const LibPq& loaded(const std::string& store) {
  const LibPq& pq = libpq();
  if (!pq.missing.empty()) fail(store, pq.missing);
  return pq;
}

// libpq's message as one line: its hint lines joined to the first.
std::string trimmed(std::string text) {
  std::string line;
  bool gap = false;
  for (char c : text) {
    if (c == '\n' || c == '\t') {
      gap = true;
      continue;
    }
    if (gap && !line.empty()) line += line.back() == '.' ? " " : "; ";
    gap = false;
    line += c;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// The server's notices ("relation already exists, skipping") are not the user's business.
void quiet(void*, const char*) {}

// SQLSTATE classes after which the statement may succeed on a new connection or a second try:
// connection exceptions (08), the server shutting down or starting (57P01-57P03), serialization
// failures and deadlocks (40001, 40P01).
bool transient_state(const std::string& state) {
  return state.rfind("08", 0) == 0 || state == "57P01" || state == "57P02" || state == "57P03" ||
         state == "40001" || state == "40P01";
}

// Thrown inside the class for an error after which a retry may succeed.
struct Transient {
  std::string why;
};

}  // namespace

const std::string& Row::text(size_t i) const {
  const auto& field = fields.at(i);
  if (!field) throw Error(TUNED_STATUS_DATABASE_ERROR, "store: NULL where a value was expected");
  return *field;
}

int64_t Row::int64(size_t i) const {
  const std::string& t = text(i);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || end != t.data() + t.size()) {
    throw Error(TUNED_STATUS_DATABASE_ERROR, "store: '" + t + "' is no integer");
  }
  return value;
}

double Row::real(size_t i) const {
  const std::string& t = text(i);
  char* end = nullptr;
  const double value = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) throw Error(TUNED_STATUS_DATABASE_ERROR, "store: '" + t + "' is no number");
  return value;
}

Params& Params::add(double value) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  values_.emplace_back(ec == std::errc() && std::isfinite(value) ? std::string(buffer, end) : "0");
  return *this;
}

std::string describe_store(const std::string& url) {
  const LibPq& pq = libpq();
  if (!pq.missing.empty()) return "(a PostgreSQL store)";
  char* error = nullptr;
  PQconninfoOption* options = pq.conninfo_parse(url.c_str(), &error);
  if (!options) {
    if (error) std::free(error);  // its text may quote the string: not shown
    return "(a malformed PostgreSQL connection string)";
  }
  std::string host, port, dbname, user;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (!o->val) continue;
    const std::string key = o->keyword;
    if (key == "host" || (key == "hostaddr" && host.empty())) host = o->val;
    if (key == "port") port = o->val;
    if (key == "dbname") dbname = o->val;
    if (key == "user") user = o->val;
  }
  pq.conninfo_free(options);
  std::string name = "postgresql://";
  if (!user.empty()) name += user + "@";
  name += host.empty() ? "localhost" : host;
  if (!port.empty()) name += ":" + port;
  if (!dbname.empty()) name += "/" + dbname;
  return name;
}

Connection::Connection(const std::string& url, std::chrono::milliseconds retry_for,
                       std::chrono::milliseconds connect_for)
    : url_(url), name_(describe_store(url)), retry_for_(retry_for) {
  loaded(name_);
  if (name_ == "(a malformed PostgreSQL connection string)") {
    fail(name_, "not a libpq connection string or postgresql:// URI");
  }
  connect_with_retry(connect_for);
}

Connection::~Connection() { close(); }

void Connection::close() {
  if (conn_) libpq().finish(static_cast<PGconn*>(conn_));
  conn_ = nullptr;
}

bool Connection::try_connect(std::string& why) {
  const LibPq& pq = libpq();
  close();
  PGconn* conn = pq.connectdb(url_.c_str());
  if (conn && pq.status(conn) == CONNECTION_OK) {
    pq.set_notice_processor(conn, quiet, nullptr);
    conn_ = conn;
    return true;
  }
  why = conn ? trimmed(pq.error_message(conn)) : "out of memory";
  if (conn) pq.finish(conn);
  return false;
}

void Connection::connect_with_retry(std::chrono::milliseconds wait_for) {
  const auto deadline = std::chrono::steady_clock::now() + wait_for;
  auto pause = std::chrono::milliseconds(100);
  std::string why;
  bool said = false;
  while (!try_connect(why)) {
    // A refused password or an unknown database does not heal by waiting.
    const bool lasting = why.find("password") != std::string::npos ||
                         why.find("does not exist") != std::string::npos ||
                         why.find("no pg_hba.conf entry") != std::string::npos;
    if (lasting || std::chrono::steady_clock::now() + pause > deadline) {
      fail(name_, "cannot connect: " + why +
                      (lasting ? "" : " (tried for " + std::to_string(wait_for.count() / 1000) + " s)"));
    }
    if (!said) {
      log(LogLevel::kWarn, "store " + name_ + " unreachable (" + why + "); trying again");
      said = true;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(2000));
  }
}

Result Connection::exec(const std::string& sql, const Params& params, const char* what) {
  const LibPq& pq = libpq();
  if (!conn_) lost("not connected", what);
  std::vector<const char*> values;
  for (const auto& v : params.values()) values.push_back(v ? v->c_str() : nullptr);
  PGconn* conn = static_cast<PGconn*>(conn_);
  // Without parameters, one text may hold several statements (the schema's migrations).
  PGresult* r = values.empty() ? pq.exec(conn, sql.c_str())
                               : pq.exec_params(conn, sql.c_str(), static_cast<int>(values.size()),
                                                nullptr, values.data(), nullptr, nullptr, 0);
  const ExecStatusType status = r ? pq.result_status(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    const char* state_field = r ? pq.result_error_field(r, PG_DIAG_SQLSTATE) : nullptr;
    const std::string state = state_field ? state_field : "";
    const std::string why = trimmed(r ? pq.result_error_message(r) : pq.error_message(conn));
    if (r) pq.clear(r);
    if (pq.status(conn) != CONNECTION_OK || transient_state(state)) lost(why, what);
    fail(name_, std::string(what) + ": " + why);
  }
  Result result;
  const int rows = pq.ntuples(r), fields = pq.nfields(r);
  result.rows.resize(rows);
  for (int i = 0; i < rows; ++i) {
    auto& row = result.rows[i].fields;
    row.reserve(fields);
    for (int f = 0; f < fields; ++f) {
      if (pq.getisnull(r, i, f)) {
        row.emplace_back(std::nullopt);
      } else {
        row.emplace_back(pq.getvalue(r, i, f));
      }
    }
  }
  const char* changed = pq.cmd_tuples(r);
  if (changed && *changed) result.changed = std::strtoll(changed, nullptr, 10);
  pq.clear(r);
  return result;
}

void Connection::lost(const std::string& why, const char* what) {
  if (!in_transaction_) fail(name_, std::string(what) + ": " + why);
  throw Transient{why};
}

void Connection::transaction(const std::function<void(Connection&)>& work, const char* what) {
  struct Inside {  // exec's transient errors are retried here, not thrown at the caller
    bool& flag;
    explicit Inside(bool& f) : flag(f) { flag = true; }
    ~Inside() { flag = false; }
  } inside(in_transaction_);
  const auto deadline = std::chrono::steady_clock::now() + retry_for_;
  auto pause = std::chrono::milliseconds(100);
  bool said = false;
  for (;;) {
    try {
      exec("BEGIN", {}, what);
      try {
        work(*this);
        exec("COMMIT", {}, what);
        return;
      } catch (const Transient&) {
        throw;
      } catch (...) {
        try {
          exec("ROLLBACK", {}, what);
        } catch (...) {  // the first error is the one to report
        }
        throw;
      }
    } catch (const Transient& t) {
      if (std::chrono::steady_clock::now() + pause > deadline) {
        fail(name_, std::string(what) + ": " + t.why + " (gave up after " +
                        std::to_string(retry_for_.count() / 1000) + " s)");
      }
      if (!said) {
        log(LogLevel::kWarn, "store " + name_ + ": " + what + " interrupted (" + t.why + "); trying again");
        said = true;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(2000));
      const LibPq& pq = libpq();
      if (!conn_ || pq.status(static_cast<PGconn*>(conn_)) != CONNECTION_OK) {
        std::string why;
        if (!try_connect(why)) continue;  // not yet: wait on
      } else {
        try {
          exec("ROLLBACK", {}, what);  // a serialization failure: the transaction is aborted
        } catch (...) {
        }
      }
    }
  }
}

Result Connection::retried(const std::string& sql, const Params& params, const char* what) {
  Result result;
  transaction([&](Connection& c) { result = c.exec(sql, params, what); }, what);
  return result;
}

}  // namespace tuned::cache::store
