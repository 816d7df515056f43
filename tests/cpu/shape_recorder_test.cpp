// The offline tuning workflow without a GPU: what the recorder writes (once per problem, across
// processes too) is what `autotune --shapes-from` reads back, and every malformed shapes file or
// unusable record path is one clear error naming the file, line and rule.
#include "api/shape_recorder.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/common/temp_dir.hpp"
#include "tools/autotune_options.hpp"
#include "tuned/error.hpp"

namespace tuned {
namespace {

using testing::slurp;
using testing::TempDir;
using tools::ShapeRequest;

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' not in: " << text;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(ShapeRecorder, WritesEachProblemOnceAndAutotuneReadsItBack) {
  TempDir dir;
  const std::string path = dir.file("shapes.txt");
  {
    ShapeRecorder recorder;
    recorder.record("gemm", "NN", {1, 1, 1}, 1);  // off: nothing written, no file made
    EXPECT_FALSE(std::filesystem::exists(path));
    recorder.set_path(path);
    EXPECT_TRUE(recorder.active());
    recorder.record("gemm", "NN", {4096, 1024, 512}, 4);
    recorder.record("gemm", "TN", {7, 127, 1000}, 1);
    recorder.record("gemm", "NN", {4096, 1024, 512}, 4);  // seen: not again
    recorder.record("transpose", "T", {4097, 33}, 1);
    recorder.record("entropy", "u8", {1000, 127, 3, 16}, 1);
  }
  EXPECT_EQ(slurp(path),
            "gemm NN 4096x1024x512 align 4\ngemm TN 7x127x1000 align 1\n"
            "transpose T 4097x33 align 1\nentropy u8 1000x127x3x16 align 1\n");
  {
    // A later process appends only what the file does not hold yet.
    ShapeRecorder recorder;
    recorder.set_path(path);
    recorder.record("gemm", "TN", {7, 127, 1000}, 1);
    recorder.record("gemm", "NT", {1, 7, 4097}, 1);
    recorder.set_path("");  // stops
    EXPECT_FALSE(recorder.active());
    recorder.record("gemm", "TT", {2, 2, 2}, 1);
  }
  const std::vector<ShapeRequest> read = tools::read_shapes_file(path, "gemm", "");
  const std::vector<ShapeRequest> expected = {{"gemm", "NN", {4096, 1024, 512}, 4},
                                              {"gemm", "TN", {7, 127, 1000}, 1},
                                              {"transpose", "T", {4097, 33}, 1},
                                              {"entropy", "u8", {1000, 127, 3, 16}, 1},
                                              {"gemm", "NT", {1, 7, 4097}, 1}};
  EXPECT_EQ(read, expected);
}

TEST(ShapeRecorder, RefusesWhatCannotBeAppendedTo) {
  TempDir dir;
  for (const std::string& path : {dir.file(""), dir.file("missing/shapes.txt")}) {
    ShapeRecorder recorder;
    try {
      recorder.set_path(path);
      ADD_FAILURE() << path << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), TUNED_STATUS_INVALID_ARGUMENT);
      EXPECT_TRUE(contains(e.what(), "cannot record problems into '" + path + "'"));
    }
    EXPECT_FALSE(recorder.active());
  }
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ShapeRecorder recorder;
  try {
    recorder.set_path(fifo);  // never waits for a reader
    ADD_FAILURE() << "a named pipe was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "not a regular file")) << e.what();
  }
}

TEST(ShapesFile, FillsInWhatALineOmitsAndSkipsCommentsAndRepeats) {
  TempDir dir;
  const std::string path = dir.file("shapes.txt");
  write(path,
        "# recorded by a program\n"
        "gemm NN 4096x1024x512 align 4   # a recorder line\n"
        "\n"
        "nt 512x512x512\n"
        "   64x64x64\n"
        "transpose 4097x33\n"
        "gemm NT 512x512x512\n");  // the same problem as line 4
  const std::vector<ShapeRequest> expected = {{"gemm", "NN", {4096, 1024, 512}, 4},
                                              {"gemm", "NT", {512, 512, 512}, 0},
                                              {"gemm", "", {64, 64, 64}, 0},
                                              {"transpose", "", {4097, 33}, 0}};
  EXPECT_EQ(tools::read_shapes_file(path, "gemm", ""), expected);
  // --layout fills in too, for every op: transpose has no TT, and line 6 says so.
  try {
    tools::read_shapes_file(path, "gemm", "TT");
    ADD_FAILURE() << "transpose TT was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), path + ":6:")) << e.what();
  }
}

TEST(ShapesFile, NamesTheFileLineAndRuleOfEachMistake) {
  TempDir dir;
  const std::string path = dir.file("shapes.txt");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gemm XY 4x4x4\n", "must be one of"},
      {"gemm NN\n", "no shape"},
      {"gemm NN 4x4\n", "3"},  // gemm takes m, n, k
      {"gemm NN 4x4x4 align 3\n", "align must be followed by a power of two"},
      {"gemm NN 4x4x4 align\n", "align must be followed by a power of two"},
      {"gemm NN 4x4x4 fast\n", "unexpected 'fast'"},
      {"gemm NN 4x-4x4\n", "is not a number"},
  };
  for (const auto& [text, why] : cases) {
    write(path, "gemm NN 8x8x8\n" + text);
    try {
      tools::read_shapes_file(path, "gemm", "");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR);
      EXPECT_TRUE(contains(e.what(), path + ":2:")) << text;
      EXPECT_TRUE(contains(e.what(), why)) << text;
    }
  }
  write(path, "# only a comment\n\n");
  try {
    tools::read_shapes_file(path, "gemm", "");
    ADD_FAILURE() << "a file without problems was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "no problem to tune")) << e.what();
  }
  try {
    tools::read_shapes_file(dir.file(""), "gemm", "");
    ADD_FAILURE() << "a directory was read";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cannot read shapes file")) << e.what();
  }
}

}  // namespace
}  // namespace tuned
