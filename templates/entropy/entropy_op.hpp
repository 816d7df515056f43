// The entropy op descriptor (GPU side): local entropy of a rows x cols column-major matrix of
// FP32 integers or uint8 values in [0, levels), window (2r+1)^2 clipped at the borders (see
// entropy_cpu.hpp for the definition and the CPU paths). Its parameter space with every rule named,
// the precision bound that decides which accumulations may serve a window, kernel naming, launch
// geometry, problem key, the tables the kernel reads, input validation on the device and the
// launch; entropy.cu reads the same values as -D options.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem_key.hpp"
#include "core/space.hpp"
#include "generator/kernel.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/entropy/entropy_cpu.hpp"
#include "templates/op_info.hpp"

namespace tuned::entropy_op {

/// The input's element type: the op's variants, in this order.
enum class Input { kF32 = 0, kU8 = 1 };
const char* variant_name(Input input);  // "f32", "u8"
size_t input_bytes(Input input);        // 4, 1

/// Absolute error every GPU result must stay within (against the double reference).
constexpr double kTolerance = 1e-5;

/// A problem with ld_in = ld_out = rows.
Problem packed_problem(int64_t rows, int64_t cols, int radius, int levels);

/// Every parameter with the values it may take before constraints.
const std::vector<Param>& parameters();

/// Worst-case absolute error of a config's result on a problem of this radius: the table's
/// rounding (the same for any order of updates: the updates of a count telescope) plus the
/// rounding of the running sum over the updates one output sees, plus the final log n - S/n.
double error_bound(const Config& config, int radius);

/// Bits of the fixed-point scale (ACC = 3) for a radius: the largest sum, n log n, fits 31 bits.
int fixed_bits(int radius);

/// The space for this device and problem, with every constraint named.
Space make_space(const DeviceInfo& device, const Problem& problem, Input input);

/// A safe, reasonably fast config for any problem.
Config default_config(const DeviceInfo& device, const Problem& problem, Input input);
/// The default plus known-good configs, tried first by a search.
std::vector<Config> seed_configs(const DeviceInfo& device, const Problem& problem, Input input);
/// config checked against the problem's rules; throws Error(TUNED_STATUS_CONFIG_ERROR) naming the
/// broken one.
Config fit_config(const Config& config, const DeviceInfo& device, const Problem& problem,
                  Input input);

int threads_per_block(const Config& config);
/// Bytes of static shared memory a config's kernel declares for a problem.
size_t shared_bytes(const Config& config, const Problem& problem);
std::string kernel_name(const Config& config, const Problem& problem, Input input);
KernelSpec kernel_spec(const Config& config, const Problem& problem, Input input);
LaunchGeometry geometry(const Config& config, const Problem& problem);
ProblemKey problem_key(const DeviceInfo& device, const Problem& problem, Input input);
/// Device workspace a call needs: the validation's flag (its first kTableOffset bytes), then the f
/// table when it lives in global memory (LOG = 3).
constexpr size_t kTableOffset = 16;
size_t workspace_bytes(const Config& config, const Problem& problem);

/// Checks every input value on the device (validation kernel of config's image, then a wait on the
/// stream): throws Error(TUNED_STATUS_INVALID_ARGUMENT) naming the first element (row, column) and
/// its value when one is not an integer in [0, levels). `scratch`: 8 bytes of device memory (the
/// workspace's first bytes).
void validate_on_device(const LoadedKernel& kernel, const Problem& problem, Input input,
                        const void* in, unsigned long long* scratch, cudaStream_t stream);

/// Output columns [j_begin, j_end) of the problem, from a buffer whose first column is input column
/// in_col0 (it must hold columns [j_begin - r, j_end + r) within the matrix) into one whose first
/// column is output column out_col0; leading dimensions are the problem's.
struct Band {
  int64_t j_begin = 0, j_end = 0;
  int64_t in_col0 = 0, out_col0 = 0;
};

/// Launches the entropy kernel on the whole problem (inputs already validated). workspace: at least
/// workspace_bytes(config, problem) of device memory.
void launch(const LoadedKernel& kernel, const Config& config, const Problem& problem,
            const void* in, float* out, void* workspace, cudaStream_t stream);
/// Launches it on a band of columns (a host pipeline's chunk, one GPU's share).
void launch_columns(const LoadedKernel& kernel, const Config& config, const Problem& problem,
                    const Band& band, const void* in, float* out, void* workspace,
                    cudaStream_t stream);

/// What the op is (name, dims, variants, rate unit, parameters): its entry in the catalog.
OpInfo info();

}  // namespace tuned::entropy_op
