// What a tuned_gemm call does: key the problem, choose a config (the user's exact key; else the
// nearer of the user's nearest tuned shape and the shipped defaults' entry; else the built-in
// default), get the kernel (loaded once per process, cubin from the database or NVRTC) and launch
// it. One Runtime per process, thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cache/cubin_store.hpp"
#include "cache/database.hpp"
#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/gemm/gemm_op.hpp"

namespace tuned {

class Runtime {
 public:
  static Runtime& instance();

  /// "" selects the default ($TUNED_DB, else the cache folder). An explicitly chosen database
  /// that cannot be opened is an error; an unusable default only means nothing tuned is known.
  void set_database(const std::string& path);

  void gemm(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const float* alpha,
            const float* a, int64_t lda, const float* b, int64_t ldb, const float* beta, float* c,
            int64_t ldc, cudaStream_t stream);
  std::string describe_gemm(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const float* a,
                            int64_t lda, const float* b, int64_t ldb, const float* c,
                            int64_t ldc);

 private:
  struct Choice {
    Config config;
    std::string origin;  // "exact", "nearest MxNxK", "shipped", "shipped nearest MxNxK", "default"
    // Set after the first launch, so later calls skip rebuilding the spec and its cubin key.
    std::shared_ptr<const LoadedKernel> kernel;
  };

  Runtime();
  const DeviceInfo& current_device();
  cache::Database* database();  // nullptr when none can be used
  Choice choose_gemm(const DeviceInfo& device, const gemm_op::Problem& problem);
  cudaMemPool_t workspace_pool(int device);  // created on first use, kept for the process
  // What a memoized choice depends on (the problem key without strings).
  struct MemoKey {
    int device;
    bool trans_a, trans_b;
    int64_t m, n, k;
    int alignment;
    bool operator==(const MemoKey&) const = default;
  };
  struct MemoKeyHash {
    size_t operator()(const MemoKey& k) const;
  };
  static MemoKey memo_key(const DeviceInfo& device, const gemm_op::Problem& problem);
  gemm_op::Problem make_problem(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const void* a,
                             int64_t lda, const void* b, int64_t ldb, const void* c, int64_t ldc);

  std::mutex mutex_;
  std::map<int, DeviceInfo> devices_;
  std::string db_path_;
  bool db_explicit_ = false;
  bool db_opened_ = false;
  std::unique_ptr<cache::Database> db_;
  std::unique_ptr<cache::DatabaseCubinStore> store_;
  KernelCache kernels_;
  std::unordered_map<MemoKey, Choice, MemoKeyHash> choices_;
  std::map<int, cudaMemPool_t> pools_;
};

}  // namespace tuned
