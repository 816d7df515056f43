// Seeded random GEMM problems nobody tuned, the same on every machine (splitmix64, no library
// distributions): m, n, k each log-uniform in [1, 16384], redrawn together while m*n*k > 2^36
// (or, for a large-shape stratum, while 2*m*n*k < min_gflop * 1e9); each dimension forced odd with
// probability 1/3 (a third of them); layout uniform over NN, NT, TN, TT. The acceptance seeds:
// 101-103 (gemm_random, issue 7), 111-113 (gemm_random --min-gflop 1, issue 28; their plain draws
// too) and 201 (gemm_families, issue 10). No shipped entry, fit or test may use their shapes
// (bench/held_out.hpp guards the fit and the sweeps).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"

namespace tuned::bench {

inline constexpr uint64_t kAcceptanceSeeds[] = {101, 102, 103};  // gemm_random's
inline constexpr uint64_t kLargeAcceptanceSeeds[] = {111, 112, 113};  // gemm_random --min-gflop 1
inline constexpr double kLargeAcceptanceMinGflop = 1.0;
inline constexpr uint64_t kFamiliesSeed = 201;                      // gemm_families'

inline constexpr int kShapesPerSeed = 48;

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t state_;
};

/// count shapes of seed. min_gflop > 0 draws the same law conditioned on 2*m*n*k >= min_gflop*1e9
/// (checked on the drawn sizes, before the odd ones are made odd): a large-shape stratum.
inline std::vector<Shape> random_shapes(uint64_t seed, int count = kShapesPerSeed,
                                        double min_gflop = 0) {
  static const char* const kLayouts[] = {"NN", "NT", "TN", "TT"};
  constexpr int64_t kMaxDim = 16384;
  constexpr int64_t kMaxVolume = int64_t{1} << 36;
  SplitMix64 rng(seed * 0x2545F4914F6CDD1Dull + 7);
  std::vector<Shape> shapes;
  for (int i = 0; i < count; ++i) {
    int64_t d[3];
    do {
      for (auto& x : d) {
        x = std::llround(std::exp(rng.uniform() * std::log(static_cast<double>(kMaxDim))));
        x = std::clamp<int64_t>(x, 1, kMaxDim);
      }
    } while (d[0] * d[1] * d[2] > kMaxVolume ||
             2.0 * static_cast<double>(d[0] * d[1] * d[2]) < min_gflop * 1e9);
    for (auto& x : d) {
      if (rng.uniform() < 1.0 / 3.0 && x % 2 == 0) x = x < kMaxDim ? x + 1 : x - 1;
    }
    const char* layout = kLayouts[rng.next() % 4];
    shapes.push_back({layout, d[0], d[1], d[2]});
  }
  return shapes;
}

}  // namespace tuned::bench
