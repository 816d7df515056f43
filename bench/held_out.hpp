// The problems the GEMM acceptance benchmarks measure, held out of everything the library ships:
// no shipped entry, selection-model fit or test may use them (issue 7, 10 and 28). gemm_sweep
// never measures them and fit_selection drops them; a CPU test checks the shipped tables.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <tuple>

#include "bench/network_shapes.hpp"
#include "bench/random_shapes.hpp"

namespace tuned::bench {

/// Whether layout and shape are a held-out problem (any layout when layout is empty): the shapes
/// of gemm_random's seeds 101-103 and 111-113 (plain and --min-gflop 1 draws), of gemm_families'
/// seed 201, and of bench/gemm_networks.
inline bool is_held_out_shape(const std::string& layout, int64_t m, int64_t n, int64_t k) {
  using Key = std::tuple<std::string, int64_t, int64_t, int64_t>;
  static const std::set<Key> shapes = [] {
    std::set<Key> s;
    auto add = [&](const std::vector<Shape>& list) {
      for (const auto& shape : list) s.emplace(shape.layout, shape.m, shape.n, shape.k);
    };
    for (uint64_t seed : kAcceptanceSeeds) add(random_shapes(seed));
    for (uint64_t seed : kLargeAcceptanceSeeds) {
      add(random_shapes(seed));
      add(random_shapes(seed, kShapesPerSeed, kLargeAcceptanceMinGflop));
    }
    add(random_shapes(kFamiliesSeed));
    for (const auto& g : benchmark_gemms())
      s.emplace(g.shape.layout, g.shape.m, g.shape.n, g.shape.k);
    return s;
  }();
  if (!layout.empty()) return shapes.count({layout, m, n, k}) > 0;
  for (const char* l : {"NN", "NT", "TN", "TT"}) {
    if (shapes.count({l, m, n, k})) return true;
  }
  return false;
}

}  // namespace tuned::bench
