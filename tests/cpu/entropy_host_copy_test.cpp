// The entropy host path's copy out of its pinned slots: every float copied, bit for bit, nothing
// beside the destination touched, whatever the alignment of either side, with streaming stores
// and without.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "api/entropy_api.hpp"

namespace tuned::api {
namespace {

TEST(EntropyHostCopy, CopiesEveryFloatAndNothingElseAtAnyAlignment) {
  constexpr float kGuard = -7.0f;
  for (const bool streaming : {false, true}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{4}, size_t{5}, size_t{17},
                         size_t{64}, size_t{10007}}) {
      for (size_t src_offset = 0; src_offset < 4; ++src_offset) {
        for (size_t dst_offset = 0; dst_offset < 4; ++dst_offset) {
          SCOPED_TRACE(std::to_string(count) + " floats, src +" + std::to_string(src_offset) +
                       ", dst +" + std::to_string(dst_offset) + (streaming ? ", streaming" : ""));
          alignas(64) static float src[10007 + 8], dst[10007 + 8];
          for (size_t i = 0; i < count + 8; ++i) {
            const uint32_t bits = 0x3f800000u + static_cast<uint32_t>(i * 2654435761u % 1000003u);
            std::memcpy(&src[i], &bits, sizeof bits);
            dst[i] = kGuard;
          }
          src[src_offset] = NAN;  // copied as bits, not compared as values
          copy_floats(dst + dst_offset, src + src_offset, count, streaming);
          size_t wrong = 0, touched = 0;
          for (size_t i = 0; i < count + 8; ++i) {
            if (i >= dst_offset && i < dst_offset + count) {
              wrong += std::memcmp(&dst[i], &src[i - dst_offset + src_offset], 4) != 0;
            } else {
              touched += dst[i] != kGuard;
            }
          }
          EXPECT_EQ(wrong, 0u);
          EXPECT_EQ(touched, 0u);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tuned::api
