// tuned_results_json (api/results_api.cpp), without a GPU: a database written through the cache's
// own API is listed as JSON, filtered by op and device; a missing file lists nothing; no state a
// user may leave a database in changes a byte or makes a file beside it, and each refusal names
// the path.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "tests/common/cache_states.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuned/tuned.h"

namespace tuned {
namespace {

using testing::CacheStates;
using testing::TempDir;

const char* kFirst = "GPU-11111111-2222-3333-4444-555555555555";
// Of the same model as kFirst; "GPU-1111" begins both.
const char* kSecond = "GPU-11112222-0000-0000-0000-000000000000";
const char* kOther = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
const char* kH100 = "NVIDIA H100 80GB HBM3";

struct Listing {
  tuned_status_t status;
  std::string json;   // the document, "" after an error
  std::string error;  // tuned_last_error() after an error
};

Listing list(const char* path, const char* op = nullptr, const char* device = nullptr) {
  char* json = reinterpret_cast<char*>(1);  // overwritten with NULL or the text, either way
  Listing listing{tuned_results_json(path, op, device, &json), "", ""};
  if (json != nullptr) listing.json = json;
  if (listing.status != TUNED_STATUS_SUCCESS) {
    EXPECT_EQ(json, nullptr);
    listing.error = tuned_last_error();
  }
  tuned_free(json);
  return listing;
}

// How many bests the document lists (each row has one "device_uuid").
int rows(const std::string& json) {
  int count = 0;
  for (size_t at = json.find("\"device_uuid\""); at != std::string::npos;
       at = json.find("\"device_uuid\"", at + 1)) {
    ++count;
  }
  return count;
}

cache::BestRecord best(const std::string& device, const std::string& op, const std::string& variant,
                       std::vector<int64_t> shape, const std::string& config, double ms,
                       double baseline_ms) {
  cache::BestRecord b;
  b.key.device_uuid = device;
  b.key.op = op;
  b.key.variant = variant;
  b.key.shape = std::move(shape);
  b.key.alignment = 4;
  b.config = config;
  b.kernel_name = op + "_kernel";
  b.ms = ms;
  b.rate = 12.5;
  b.baseline_ms = baseline_ms;
  b.template_hash = "feedface";
  return b;
}

// Three GPUs (two of one model), a best of each op, one of them of a session and with a rate
// unit left empty, as rows older than schema version 5 have it.
void write_database(const std::string& path) {
  cache::Database db(path);
  for (const auto& [uuid, name] :
       {std::pair{kFirst, kH100}, std::pair{kSecond, kH100}, std::pair{kOther, "NVIDIA H200"}}) {
    cache::DeviceRecord d;
    d.uuid = uuid;
    d.name = name;
    d.cc_major = 9;
    db.upsert_device(d);
  }
  const int64_t session = db.begin_session({0, kFirst, "gemm", "anneal", 60, "", ""}).id;
  cache::BestRecord gemm =
      best(kFirst, "gemm", "TN", {4096, 1024, 512}, "GEMV=0,BM=128,BN=64", 0.25, 0.5);
  gemm.rate_unit = "TFLOP/s";
  gemm.session_id = session;
  ASSERT_TRUE(db.offer_best(gemm));
  cache::BestRecord transpose = best(kSecond, "transpose", "T", {1000, 4097}, "TILE=32", 1, 0);
  transpose.origin = cache::BestOrigin::kFirstUse;
  ASSERT_TRUE(db.offer_best(transpose));  // no rate unit stored: the op's
  cache::BestRecord entropy =
      best(kOther, "entropy", "f32", {1000, 127, 3, 16}, "not a list", 2, 1);
  entropy.rate_unit = "GB/s";
  ASSERT_TRUE(db.offer_best(entropy));
}

TEST(ResultsApi, ListsTheBestsOfADatabaseAsJson) {
  TempDir dir;
  const std::string path = dir.file("tuned.db");
  write_database(path);
  const Listing all = list(path.c_str());
  ASSERT_EQ(all.status, TUNED_STATUS_SUCCESS) << all.error;
  EXPECT_EQ(rows(all.json), 3) << all.json;
  EXPECT_EQ(all.json.rfind("{\"database\": \"" + path + "\", \"schema_version\": " +
                               std::to_string(cache::Database::schema_version()) +
                               ", \"skipped\": 0, \"bests\": [\n  {",
                           0),
            0u)
      << all.json;
  // The gemm row, field by field (its time stamp is the database's).
  for (const std::string& field :
       {"\"device_uuid\": \"" + std::string(kFirst) + "\", \"device_name\": \"" + kH100 +
            "\", \"op\": \"gemm\", \"variant\": \"TN\", \"shape\": [4096, 1024, 512], "
            "\"alignment\": 4, \"config\": \"GEMV=0,BM=128,BN=64\", \"params\": {\"GEMV\": 0, "
            "\"BM\": 128, \"BN\": 64}, \"kernel_name\": \"gemm_kernel\", \"ms\": 0.25, "
            "\"rate\": 12.5, \"rate_unit\": \"TFLOP/s\", \"baseline_ms\": 0.5, \"ratio\": 2, "
            "\"session_id\": 1, \"updated_at\": \"",
        std::string("\", \"origin\": \"autotune\", \"template_hash\": \"feedface\", "
                    "\"source\": \"\"}")}) {
    EXPECT_NE(all.json.find(field), std::string::npos) << field << "\n" << all.json;
  }
  // The op's unit where none was stored; no baseline: null; a config that is no list: its text.
  EXPECT_NE(all.json.find("\"rate_unit\": \"GB/s\", \"baseline_ms\": null, \"ratio\": null, "
                          "\"session_id\": null"),
            std::string::npos)
      << all.json;
  EXPECT_NE(all.json.find("\"origin\": \"first-use\""), std::string::npos);
  EXPECT_NE(all.json.find("\"shape\": [1000, 127, 3, 16], \"alignment\": 4, \"config\": \"not a "
                          "list\", \"params\": null"),
            std::string::npos)
      << all.json;
}

TEST(ResultsApi, FiltersByOpAndDevice) {
  TempDir dir;
  const std::string path = dir.file("tuned.db");
  write_database(path);
  EXPECT_EQ(rows(list(path.c_str(), "transpose").json), 1);
  EXPECT_EQ(rows(list(path.c_str(), "").json), 3);                   // "": every op
  EXPECT_EQ(rows(list(path.c_str(), nullptr, kOther).json), 1);      // a whole uuid
  EXPECT_EQ(rows(list(path.c_str(), nullptr, "GPU-aaaa").json), 1);  // the one it begins
  EXPECT_EQ(rows(list(path.c_str(), nullptr, kH100).json), 2);       // a model: both its GPUs
  EXPECT_EQ(rows(list(path.c_str(), "gemm", kH100).json), 1);
  EXPECT_EQ(rows(list(path.c_str(), nullptr, "GPU-ffff").json), 0);  // names nothing
  const Listing ambiguous = list(path.c_str(), nullptr, "GPU-1111");
  EXPECT_EQ(ambiguous.status, TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(ambiguous.error.find(std::string("device 'GPU-1111' begins 2 recorded uuids (") +
                                 kFirst + ", " + kSecond + ")"),
            std::string::npos)
      << ambiguous.error;
  {  // a best of a GPU the devices table does not list: its whole uuid names it
    cache::Database db(path);
    ASSERT_TRUE(db.offer_best(best("GPU-unlisted", "gemm", "NN", {8, 8, 8}, "BM=16", 1, 0)));
  }
  EXPECT_EQ(rows(list(path.c_str(), nullptr, "GPU-unlisted").json), 1);
  EXPECT_EQ(rows(list(path.c_str(), nullptr, "GPU-unlist").json), 0);
  const Listing unknown = list(path.c_str(), "gemv");
  EXPECT_EQ(unknown.status, TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(unknown.error, "op: unknown op 'gemv' (this build knows gemm, transpose, entropy)");
}

TEST(ResultsApi, AMissingFileListsNothingAndStaysMissing) {
  TempDir dir;
  const std::string path = dir.file("none.db");
  const Listing listing = list(path.c_str());
  ASSERT_EQ(listing.status, TUNED_STATUS_SUCCESS) << listing.error;
  EXPECT_EQ(listing.json, "{\"database\": \"" + path +
                              "\", \"schema_version\": null, \"skipped\": 0, \"bests\": []}\n");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ResultsApi, ArgumentErrorsNameTheArgument) {
  EXPECT_EQ(tuned_results_json("x.db", nullptr, nullptr, nullptr), TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(tuned_last_error(), "json: must point to a char* to receive the text");
  const Listing empty = list("");
  EXPECT_EQ(empty.status, TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(empty.error, "path: must not be empty (NULL: the database calls use now)");
  tuned_free(nullptr);
}

// Readers never write: a listing of our own file, and of every state a user may leave one in,
// leaves the bytes as they were and nothing beside them; a file it cannot list is refused with
// an error naming its path.
TEST(ResultsApi, NoListingChangesAByteOrMakesAFile) {
  TempDir dir;
  const std::string path = dir.file("tuned.db");
  write_database(path);
  const std::string before = CacheStates::fingerprint(path);
  ASSERT_EQ(before.find("-wal"), std::string::npos);  // the writer closed: its WAL is gone
  EXPECT_EQ(list(path.c_str()).status, TUNED_STATUS_SUCCESS);
  EXPECT_TRUE(CacheStates::fingerprint(path) == before) << "the listing changed " << path;

  CacheStates states(dir.file("states"));
  for (const auto& state : states.states()) {
    SCOPED_TRACE(state.name);
    const std::string fingerprint = CacheStates::fingerprint(state.path);
    const Listing listing = list(state.path.c_str());
    if (state.name == "schema 1" || state.name == "newer schema" || state.name == "locked") {
      EXPECT_EQ(listing.status, TUNED_STATUS_SUCCESS) << listing.error;
      EXPECT_EQ(rows(listing.json), state.name == "schema 1" ? 1 : 0) << listing.json;
    } else {
      EXPECT_EQ(listing.status, TUNED_STATUS_DATABASE_ERROR) << listing.json;
      EXPECT_NE(listing.error.find(state.path), std::string::npos) << listing.error;
    }
    // (compared, not printed: the fingerprint holds the file's bytes)
    EXPECT_TRUE(CacheStates::fingerprint(state.path) == fingerprint) << "the listing changed it";
  }
}

// NULL lists the database calls use now: tuned_set_database's (in a child process, so that this
// process's database stays the default).
TEST(ResultsApi, NullListsTheDatabaseCallsUse) {
  TempDir dir;
  const std::string path = dir.file("tuned.db");
  write_database(path);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool set = tuned_set_database(path.c_str()) == TUNED_STATUS_SUCCESS;
    char* json = nullptr;
    const bool listed = tuned_results_json(nullptr, "gemm", nullptr, &json) == TUNED_STATUS_SUCCESS;
    const bool right = listed && rows(json) == 1 &&
                       std::string(json).rfind("{\"database\": \"" + path + "\"", 0) == 0;
    tuned_free(json);
    _exit(set && right ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace tuned
