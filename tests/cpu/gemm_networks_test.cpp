// The held-out GEMMs of issue 28 without a GPU: bench/network_shapes.hpp's benchmark rows follow
// the rule by which PyTorch hands a Linear layer's passes to cuBLAS and share no problem with the
// fitting rows, random_shapes' large stratum is large and its plain draws are those measured before
// the stratum existed; and gemm_networks and gemm_random print those rows (--print-shapes).
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <array>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "bench/held_out.hpp"
#include "bench/network_shapes.hpp"
#include "bench/random_shapes.hpp"

namespace {

using tuned::bench::benchmark_gemms;
using tuned::bench::NetworkGemm;
using tuned::bench::Shape;

using ShapeKey = std::tuple<std::string, int64_t, int64_t, int64_t>;

ShapeKey key_of(const Shape& s) { return {s.layout, s.m, s.n, s.k}; }

// Shape::text() lives in the bench support library, which this binary does not link.
std::string text(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

double gflop(const Shape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) /
         1e9;
}

bool is_transformer(const std::string& model) { return model != "VGG-16"; }

TEST(NetworkShapes, BenchmarkHasTheNamedModels) {
  std::set<std::string> models;
  for (const auto& g : benchmark_gemms()) models.insert(g.model);
  EXPECT_EQ(models, (std::set<std::string>{"GPT-2 medium", "GPT-2 large", "Llama-2-13B",
                                            "Mistral-7B", "T5-large", "VGG-16"}));
}

// Forward TN m=out n=T k=in, input gradient NN m=in n=T k=out, weight gradient NT m=in n=out k=T,
// with in and out the layer's own (the transformers' from benchmark_networks(); a VGG layer's in
// is 9 C_in, its tokens batch 32 times a side squared).
TEST(NetworkShapes, EveryRowFollowsThePassRule) {
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> layers;
  for (const auto& net : tuned::bench::benchmark_networks()) {
    for (const auto& l : net.layers) layers[{net.model, l.name}] = {l.in, l.out};
  }
  const std::set<int64_t> vgg_tokens = {32 * 224 * 224, 32 * 112 * 112, 32 * 56 * 56,
                                        32 * 28 * 28, 32 * 14 * 14};
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> vgg_layers;
  int rows = 0;
  for (const auto& g : benchmark_gemms()) {
    ++rows;
    SCOPED_TRACE(g.model + " " + g.layer + " " + g.pass + " " + g.shape.layout + " " +
                 text(g.shape));
    int64_t in = 0, out = 0;
    if (g.pass == "forward") {
      EXPECT_EQ(g.shape.layout, "TN");
      EXPECT_EQ(g.shape.n, g.tokens);
      in = g.shape.k;
      out = g.shape.m;
    } else if (g.pass == "input_grad") {
      EXPECT_EQ(g.shape.layout, "NN");
      EXPECT_EQ(g.shape.n, g.tokens);
      in = g.shape.m;
      out = g.shape.k;
    } else if (g.pass == "weight_grad") {
      EXPECT_EQ(g.shape.layout, "NT");
      EXPECT_EQ(g.shape.k, g.tokens);
      in = g.shape.m;
      out = g.shape.n;
    } else {
      ADD_FAILURE() << "unknown pass";
      continue;
    }
    if (is_transformer(g.model)) {
      const auto it = layers.find({g.model, g.layer});
      ASSERT_NE(it, layers.end()) << "no such layer in benchmark_networks()";
      EXPECT_EQ(in, it->second.first);
      EXPECT_EQ(out, it->second.second);
    } else {
      EXPECT_EQ(in % 9, 0) << "a 3x3 convolution's in is 9 C_in";
      EXPECT_EQ(vgg_tokens.count(g.tokens), 1u);
      // The three passes of a layer agree on its in and out.
      const auto [it, inserted] = vgg_layers.emplace(std::pair{g.model, g.layer},
                                                     std::pair{in, out});
      if (!inserted) {
        EXPECT_EQ(it->second, std::pair(in, out));
      }
    }
  }
  EXPECT_GT(rows, 200);
  EXPECT_EQ(vgg_layers.size(), 9u);
}

// Training rows at 512, 2048 and 8192 tokens in all three passes; decoding (1, 4 and 16 tokens)
// forward only: every transformer layer has exactly these.
TEST(NetworkShapes, DecodeRowsAreForwardOnly) {
  using Key = std::tuple<std::string, std::string, std::string>;  // model, layer, pass
  std::map<Key, std::multiset<int64_t>> tokens;
  for (const auto& g : benchmark_gemms()) {
    if (is_transformer(g.model)) tokens[{g.model, g.layer, g.pass}].insert(g.tokens);
  }
  ASSERT_FALSE(tokens.empty());
  for (const auto& [key, seen] : tokens) {
    const auto& [model, layer, pass] = key;
    SCOPED_TRACE(model + " " + layer + " " + pass);
    if (pass == "forward") {
      EXPECT_EQ(seen, (std::multiset<int64_t>{1, 4, 16, 512, 2048, 8192}));
    } else {
      EXPECT_EQ(seen, (std::multiset<int64_t>{512, 2048, 8192}));
    }
  }
}

// The selection model is fitted on fitting_gemms(), fitting_gemms_more(), fitting_gemms_decode()
// and fitting_gemms_vocab(): none of them may be a benchmark problem (nor any other held-out one,
// which gemm_sweep would refuse to measure).
TEST(NetworkShapes, NoFittingShapeIsABenchmarkShape) {
  std::set<ShapeKey> benchmark;
  for (const auto& g : benchmark_gemms()) benchmark.insert(key_of(g.shape));
  auto fitting = tuned::bench::fitting_gemms();
  ASSERT_GT(fitting.size(), 100u);
  const auto more = tuned::bench::fitting_gemms_more();
  ASSERT_GT(more.size(), 100u);
  fitting.insert(fitting.end(), more.begin(), more.end());
  const auto decode = tuned::bench::fitting_gemms_decode();
  ASSERT_GT(decode.size(), 60u);
  fitting.insert(fitting.end(), decode.begin(), decode.end());
  const auto vocab = tuned::bench::fitting_gemms_vocab();
  ASSERT_EQ(vocab.size(), 5u * 3u + 4u * 9u + 2u * 3u);  // decoding 3 each, training 3 passes
  for (const auto& g : vocab) {
    const int64_t ld = g.pass == "input_grad" ? g.shape.k
                       : g.pass == "forward"  ? g.shape.m
                                              : g.shape.n;
    EXPECT_NE(ld % 4, 0) << g.model << " " << g.pass << ": the vocabulary is the unaligned ld";
  }
  fitting.insert(fitting.end(), vocab.begin(), vocab.end());
  for (const auto& g : fitting) {
    EXPECT_EQ(benchmark.count(key_of(g.shape)), 0u)
        << g.model << " " << g.layer << " " << g.pass << " " << g.shape.layout << " "
        << text(g.shape);
    EXPECT_FALSE(tuned::bench::is_held_out_shape(g.shape.layout, g.shape.m, g.shape.n, g.shape.k))
        << g.model << " " << g.layer << " " << g.pass << " " << g.shape.layout << " "
        << text(g.shape);
  }
}

TEST(RandomShapes, LargeStratumIsAtLeastItsGflop) {
  std::vector<uint64_t> seeds(std::begin(tuned::bench::kLargeAcceptanceSeeds),
                              std::end(tuned::bench::kLargeAcceptanceSeeds));
  for (uint64_t s = 1; s <= 40; ++s) seeds.push_back(s);
  for (uint64_t seed : seeds) {
    const auto shapes = tuned::bench::random_shapes(seed, 48, 1.0);
    ASSERT_EQ(shapes.size(), 48u);
    for (const auto& s : shapes) {
      EXPECT_GE(gflop(s), 1.0) << "seed " << seed << " " << s.layout << " " << text(s);
    }
  }
}

// The plain draw is the default argument's, and still the shapes gemm_random measured before the
// stratum existed (bench/results/gemm_random_nvidia-h100.json, seeds 101-103, 2026-11-22).
TEST(RandomShapes, PlainDrawIsUnchangedByTheStratum) {
  for (uint64_t seed : {101, 102, 103, 111, 112, 113, 201}) {
    const auto plain = tuned::bench::random_shapes(seed);
    const auto explicit_zero = tuned::bench::random_shapes(seed, tuned::bench::kShapesPerSeed, 0.0);
    ASSERT_EQ(plain.size(), explicit_zero.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(key_of(plain[i]), key_of(explicit_zero[i])) << "seed " << seed << " shape " << i;
    }
  }
  const auto s101 = tuned::bench::random_shapes(101), s102 = tuned::bench::random_shapes(102),
             s103 = tuned::bench::random_shapes(103);
  EXPECT_EQ(key_of(s101[0]), ShapeKey("TN", 15, 12637, 6217));
  EXPECT_EQ(key_of(s101[1]), ShapeKey("NT", 5, 9341, 1062));
  EXPECT_EQ(key_of(s101[47]), ShapeKey("NN", 1973, 12, 68));
  EXPECT_EQ(key_of(s102[0]), ShapeKey("TT", 49, 3233, 13078));
  EXPECT_EQ(key_of(s103[47]), ShapeKey("NN", 1800, 1, 9));
}

// ---- the benchmarks' --print-shapes, as a user runs them (no GPU needed) ----

// The test binary lives in <build>/tests, the benchmarks in <build>/bench (built with it where
// TUNED_BUILD_BENCH is on).
std::filesystem::path bench_path(const std::string& name) {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / ".." / "bench" / name;
}

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout; stderr goes to the test's
};

ProcessResult run_bench(const std::string& name, const std::string& arguments) {
  const std::string command = "'" + bench_path(name).string() + "' " + arguments;
  ProcessResult run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    run.output.append(buffer.data(), n);
  }
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

#define SKIP_WITHOUT(name)                                                       \
  if (!std::filesystem::exists(bench_path(name))) {                              \
    GTEST_SKIP() << bench_path(name) << " is not built (TUNED_BUILD_BENCH off)"; \
  }

// "model layer pass tokens layout MxNxK gflop", the model's name holding spaces: read from the end.
TEST(NetworkShapes, GemmNetworksPrintsEveryRow) {
  SKIP_WITHOUT("gemm_networks");
  const ProcessResult run = run_bench("gemm_networks", "--print-shapes");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto lines = lines_of(run.output);
  const auto gemms = benchmark_gemms();
  ASSERT_EQ(lines.size(), gemms.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    std::istringstream in(lines[i]);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    ASSERT_GE(words.size(), 7u) << lines[i];
    const size_t n = words.size();
    std::string model = words[0];
    for (size_t w = 1; w + 6 < n; ++w) model += " " + words[w];
    const NetworkGemm& g = gemms[i];
    EXPECT_EQ(model, g.model) << lines[i];
    EXPECT_EQ(words[n - 6], g.layer) << lines[i];
    EXPECT_EQ(words[n - 5], g.pass) << lines[i];
    EXPECT_EQ(words[n - 4], std::to_string(g.tokens)) << lines[i];
    EXPECT_EQ(words[n - 3], g.shape.layout) << lines[i];
    EXPECT_EQ(words[n - 2], text(g.shape)) << lines[i];
    EXPECT_NEAR(std::stod(words[n - 1]), gflop(g.shape), 1e-5 * gflop(g.shape)) << lines[i];
  }
}

TEST(NetworkShapes, GemmNetworksFiltersAndRefusesUnknownModels) {
  SKIP_WITHOUT("gemm_networks");
  const ProcessResult run =
      run_bench("gemm_networks", "--print-shapes --model Mistral-7B --model VGG-16 --max-gflop 10");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  size_t expected = 0;
  for (const auto& g : benchmark_gemms()) {
    expected += (g.model == "Mistral-7B" || g.model == "VGG-16") && gflop(g.shape) <= 10;
  }
  const auto lines = lines_of(run.output);
  EXPECT_EQ(lines.size(), expected);
  EXPECT_GT(expected, 0u);
  for (const auto& line : lines) {
    EXPECT_TRUE(line.rfind("Mistral-7B ", 0) == 0 || line.rfind("VGG-16 ", 0) == 0) << line;
    EXPECT_LE(std::stod(line.substr(line.find_last_of(' ') + 1)), 10.0) << line;
  }
  EXPECT_EQ(run_bench("gemm_networks", "--print-shapes --model Llama-2-7B 2>/dev/null").exit_code,
            2);
  EXPECT_EQ(run_bench("gemm_networks", "--no-user-db --db x.db 2>/dev/null").exit_code, 2);
}

TEST(RandomShapes, GemmRandomPrintsTheLargeStratum) {
  SKIP_WITHOUT("gemm_random");
  const ProcessResult run = run_bench("gemm_random", "--print-shapes --min-gflop 1 --seeds 111");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto lines = lines_of(run.output);
  const auto shapes = tuned::bench::random_shapes(111, 48, 1.0);
  ASSERT_EQ(lines.size(), shapes.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i], "111 " + shapes[i].layout + " " + text(shapes[i]));
  }
  // Without --min-gflop: the plain draw.
  const ProcessResult plain = run_bench("gemm_random", "--print-shapes --seeds 111 --count 1");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const Shape first = tuned::bench::random_shapes(111)[0];
  EXPECT_EQ(plain.output, "111 " + first.layout + " " + text(first) + "\n");
  EXPECT_EQ(run_bench("gemm_random", "--print-shapes --min-gflop 200 2>/dev/null").exit_code, 2);
}

}  // namespace
