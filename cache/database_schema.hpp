// The tuning database's schema: its version, the migrations that reach it, and the check that a
// file is ours. Internal to cache/ (database.cpp opens files through it).
#pragma once

#include <string>

#include "cache/database.hpp"

struct sqlite3;

namespace tuned::cache::schema {

// Bump with each schema change and append the step that reaches it to the migrations.
constexpr int kSchemaVersion = 5;

// Whether the file is ours, by reads only (the first read of the file, so a garbage file fails
// here with SQLITE_NOTADB): a writer calls it before its first write, a reader instead of
// writing. Returns the schema version (0: a new, empty database).
int check_identity(sqlite3* db, const std::string& path, Access access);

// A writer's schema: WAL, then the migrations from the file's version to kSchemaVersion in one
// transaction.
void open_schema(sqlite3* db, const std::string& path);

}  // namespace tuned::cache::schema
