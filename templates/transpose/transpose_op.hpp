// The transpose op descriptor: out-of-place B = A^T in FP32, column-major (A is rows x cols with
// leading dimension lda, B is cols x rows with ldb). Its problem, parameter space and
// constraints, kernel naming, launch geometry, problem key and launch; transpose.cu reads the
// same values as -D options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem_key.hpp"
#include "core/space.hpp"
#include "generator/kernel.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/op_info.hpp"

namespace tuned::transpose_op {

struct Problem {
  int64_t rows = 0, cols = 0;  // of A
  int64_t lda = 0, ldb = 0;
  int alignment = 1;  // widest vector (1, 2, 4 floats) that pointers and leading dims allow

  double bytes() const { return 2.0 * 4.0 * static_cast<double>(rows) * cols; }  // read + write
};

/// A problem with the smallest leading dimensions (lda = rows, ldb = cols), aligned pointers.
Problem packed_problem(int64_t rows, int64_t cols);

/// The problem of a call: its sizes, leading dimensions and the pointers' alignment class.
Problem call_problem(int64_t rows, int64_t cols, const void* a, int64_t lda, const void* b,
                     int64_t ldb);

/// Widest vector width w in {4, 2, 1} such that both pointers are 4w-byte aligned and both
/// leading dimensions multiples of w.
int alignment_class(const void* a, const void* b, int64_t lda, int64_t ldb);

/// Checks tuned_transpose's arguments; throws Error(TUNED_STATUS_INVALID_ARGUMENT) naming the
/// argument and the rule (sizes >= 0, lda >= max(1, rows), ldb >= max(1, cols), pointers set when
/// there is work, A and B not overlapping: the transpose is out of place).
void validate_arguments(int64_t rows, int64_t cols, const void* a, int64_t lda, const void* b,
                        int64_t ldb);

/// Every parameter with the values it may take before constraints.
const std::vector<Param>& parameters();

/// The space for this device and problem, with every constraint named.
Space make_space(const DeviceInfo& device, const Problem& problem);

/// A safe, reasonably fast config for any problem.
Config default_config(const DeviceInfo& device, const Problem& problem);

/// The default plus known-good shapes of block, tried first by a search.
std::vector<Config> seed_configs(const DeviceInfo& device, const Problem& problem);

/// config with VEC lowered to the problem's alignment; throws Error(TUNED_STATUS_CONFIG_ERROR)
/// naming the broken constraint when that is not enough.
Config fit_config(const Config& config, const DeviceInfo& device, const Problem& problem);

int threads_per_block(const Config& config);
std::string kernel_name(const Config& config);
KernelSpec kernel_spec(const Config& config);
LaunchGeometry geometry(const Config& config, const Problem& problem);
ProblemKey problem_key(const DeviceInfo& device, const Problem& problem);

/// Launches B = A^T with a kernel built from config (rows, cols > 0).
void launch(const LoadedKernel& kernel, const Config& config, const Problem& problem,
            const float* a, float* b, cudaStream_t stream);

/// What the op is (name, dims, variants, rate unit, parameters): its entry in the catalog.
OpInfo info();

}  // namespace tuned::transpose_op
