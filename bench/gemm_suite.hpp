// The GEMM benchmark suite: every shape of the design notes' anchor table, square sizes 256 to
// 8192, skinny and large-k shapes where split-K matters, and all four layouts at 4096^3.
#pragma once

#include <vector>

#include "bench/bench_util.hpp"

namespace tuned::bench {

inline std::vector<Shape> gemm_suite() {
  return {
      // Anchor table (design notes), NN.
      {"NN", 1024, 1024, 1024}, {"NN", 2048, 2048, 2048}, {"NN", 4096, 4096, 4096},
      {"NN", 8192, 8192, 8192}, {"NN", 4097, 4097, 4097}, {"NN", 1000, 1000, 1000},
      {"NN", 512, 512, 512}, {"NN", 256, 256, 256}, {"NN", 127, 127, 127},
      {"NN", 32, 4096, 4096}, {"NN", 4096, 32, 4096}, {"NN", 16384, 16384, 64},
      {"NN", 3000, 200, 5000}, {"NN", 12345, 678, 910},
      // More squares, skinny and large-k shapes.
      {"NN", 768, 768, 768}, {"NN", 64, 2048, 8192}, {"NN", 1000, 1000, 8000},
      // The other layouts at 4096^3.
      {"NT", 4096, 4096, 4096}, {"TN", 4096, 4096, 4096}, {"TT", 4096, 4096, 4096},
  };
}

}  // namespace tuned::bench
