#include "templates/gemm/gemm_tma.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

#include "tuned/error.hpp"

namespace tuned::gemm_op {

namespace {

// cuTensorMapEncodeTiled from the driver the runtime loaded (the library links no libcuda).
PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess) {
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    }
  });
  if (fn == nullptr) {
    throw Error(TUNED_STATUS_CUDA_ERROR,
                "the CUDA driver has no cuTensorMapEncodeTiled (the TMA-fed gemm kernels need a "
                "CUDA 12 driver or later)");
  }
  return fn;
}

}  // namespace

TensorMapBytes encode_tensor_map(const char* operand, const float* base, int64_t inner,
                                 int64_t outer, int64_t ld, int64_t products, int64_t stride,
                                 int box_inner, int box_outer) {
  static_assert(sizeof(CUtensorMap) == sizeof(TensorMapBytes), "a CUtensorMap is 128 bytes");
  // An empty extent still needs a valid map (the kernel then copies nothing). A shared operand
  // (stride 0) is one matrix: the kernel reads it at product coordinate 0.
  const int64_t matrices = stride > 0 ? std::max<int64_t>(products, 1) : 1;
  const int64_t column_floats = ld > 0 ? ld : 4;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(inner > 0 ? inner : 1),
                              static_cast<cuuint64_t>(outer > 0 ? outer : 1),
                              static_cast<cuuint64_t>(matrices)};
  const cuuint64_t strides[2] = {
      static_cast<cuuint64_t>(column_floats) * sizeof(float),
      static_cast<cuuint64_t>(stride > 0 ? stride : column_floats * std::max<int64_t>(outer, 1)) *
          sizeof(float)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_inner),
                             static_cast<cuuint32_t>(box_outer), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  CUtensorMap map;
  const CUresult r = encoder()(
      &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<float*>(base), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw Error(TUNED_STATUS_CUDA_ERROR,
                std::string("cuTensorMapEncodeTiled refused operand ") + operand + " (error " +
                    std::to_string(static_cast<int>(r)) + "; " + std::to_string(inner) + " x " +
                    std::to_string(outer) + ", ld " + std::to_string(ld) + ", " +
                    std::to_string(matrices) + " matrices " + std::to_string(stride) +
                    " apart; 16-byte aligned base, ld and stride multiples of 4 needed)");
  }
  TensorMapBytes bytes;
  std::memcpy(&bytes, &map, sizeof bytes);
  return bytes;
}

}  // namespace tuned::gemm_op
