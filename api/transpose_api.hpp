// The transpose's API entry: validates tuned_transpose's arguments, names the problem for the
// runtime and hands it a launcher holding the call's pointers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace tuned::api {

void transpose(int64_t rows, int64_t cols, const float* a, int64_t lda, float* b, int64_t ldb,
               cudaStream_t stream);
std::string describe_transpose(int64_t rows, int64_t cols, const float* a, int64_t lda,
                               const float* b, int64_t ldb);

}  // namespace tuned::api
