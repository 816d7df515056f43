// Which math family a GEMM config computes in (gemm.cu's MMA and KSUM), as the space's rules, the
// seeds and the launch ask it.
#pragma once

#include "core/space.hpp"

namespace tuned::gemm_op {

// Tensor-core configs (the mma's fragment layout), and those of them that sum in double.
inline bool is_mma(const Config& c) { return c.has("MMA") && c.get("MMA") != 0; }
inline bool sums_in_double(const Config& c) { return c.has("MMA") && c.get("MMA") == 1; }
// MMA = 3, 4, 5: warpgroup mma (wgmma), whose tiles and stages follow their own rules; 4 and 5
// are fed by the TMA (tensor maps at launch, 16-byte rows, B read k-contiguous); 5 takes one
// TF32 product, not three.
inline bool is_wgmma(const Config& c) { return c.has("MMA") && c.get("MMA") >= 3; }
inline bool is_tma(const Config& c) { return c.has("MMA") && c.get("MMA") >= 4; }
inline bool is_plain_tf32(const Config& c) { return c.has("MMA") && c.get("MMA") == 5; }
// KSUM = 1: k summed in partial chains, a second set of sums beside the running ones.
inline bool sums_in_chains(const Config& c) { return c.has("KSUM") && c.get("KSUM") == 1; }

}  // namespace tuned::gemm_op
