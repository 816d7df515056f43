// The runtime face of an op: what the generic runtime (api/runtime.*) needs to serve a call of any
// op — fit a stored config to the call's problem, name its kernel, size its workspace, build a
// scratch tuning task for first-use tuning — in the spirit of CUTLASS's device-level
// can_implement / get_workspace_size / run. The launch itself is handed to the runtime by the op's
// API entry (it alone knows the call's pointers and scalars).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/space.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/check/device_check.hpp"
#include "templates/op.hpp"

namespace tuned {

/// What a config is chosen by: the op's variant (index into OpRegistration::variants), its shape
/// and the alignment class of the call. Plain numbers, so the runtime memoizes without allocating.
struct ProblemId {
  static constexpr int kMaxRank = 4;
  int variant = 0;
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};
  int alignment = 1;
  // Op-defined bits of the operands that allow no widest vectors, by pointer or leading dimension
  // (the class cannot say which operand lowered it, and the id keeps no leading dimension): what
  // a launch copies aligned, and so its workspace, may depend on them. Not part of the database's
  // key: the class is.
  int unaligned_operands = 0;
  // Op-defined: which kernel of the chosen config the call needs (GEMM: 1, a fused epilogue).
  // Not part of the database's key: the config is chosen for the problem, whatever its form.
  int kernel_form = 0;

  std::vector<int64_t> shape() const { return {dims.begin(), dims.begin() + rank}; }
  bool operator==(const ProblemId&) const = default;
};

class OpFace {
 public:
  virtual ~OpFace() = default;
  /// config made valid for the problem (e.g. vector width lowered to its alignment); throws
  /// Error(TUNED_STATUS_CONFIG_ERROR) naming the broken rule when no fitting is enough.
  virtual Config fit(const Config& config, const DeviceInfo& device,
                     const ProblemId& problem) const = 0;
  /// A safe config for any problem, used when nothing better is known.
  virtual Config fallback_config(const DeviceInfo& device, const ProblemId& problem) const = 0;
  virtual KernelSpec kernel_spec(const Config& config, const ProblemId& problem) const = 0;
  /// Device workspace one launch needs (0: none).
  virtual size_t workspace_bytes(const Config& config, const ProblemId& problem) const = 0;
  /// Bytes of the operands a call reads and writes (the scale a workspace is judged against).
  virtual size_t operand_bytes(const ProblemId& problem) const = 0;
  /// Floating-point operations of one call (0 for an op whose rate counts bytes): with
  /// operand_bytes, where a problem sits on a roofline (tunedb report). 0 by default.
  virtual double flops(const ProblemId& /*problem*/) const { return 0; }
  /// A tuning task with its own (scratch) buffers of this problem's shape, variant and alignment
  /// class: what first-use tuning times candidates on, never the caller's data.
  virtual std::unique_ptr<TuningTask> scratch_task(const DeviceInfo& device,
                                                   const ProblemId& problem,
                                                   DeviceCheck& check) const = 0;
  /// Kernels its tuning tasks load besides the candidates (e.g. an exact reference for the
  /// accuracy contract): built into the library, so first-use tuning runs no NVRTC for them.
  virtual std::vector<KernelSpec> support_kernels() const { return {}; }

  /// Whether a config measured on other problems may be predicted for this one (the selection
  /// model's picks and first-use candidates; config as it was timed, before serve): false where
  /// it runs here but pays a cost its measurements never saw (e.g. copying operands that were
  /// aligned where it was timed), or where serve makes another kernel of it. A config tuned for
  /// this very problem is used regardless. True by default.
  virtual bool transfers_to(const Config& /*config*/, const ProblemId& /*problem*/) const {
    return true;
  }

  /// Variants served by another's data: the variant whose shipped bests and selection model answer
  /// for this one (e.g. a GEMM compute type takes its layout's), and a config of that data as
  /// this problem's variant runs it (e.g. GEMM's TF32 type takes split TF32 in its one-product
  /// form; GEMM bounds its slice sums on the problem's k); fit then refuses what the variant does
  /// not allow. A variant's own records (tuned for it) are served as they are. Itself and
  /// unchanged by default.
  virtual int data_variant(int variant) const { return variant; }
  virtual Config serve(const Config& config, const ProblemId& /*problem*/) const { return config; }

  /// What a config computes with, in words, for describe (e.g. the arithmetic of a GEMM kernel:
  /// "split TF32 on wgmma"); empty by default.
  virtual std::string describe_config(const Config& /*config*/) const { return {}; }

  /// Analytic features of a config on a shape, each a log-time inefficiency the selection model
  /// weighs against its measured neighbours (cache::SelectionModel::Features): e.g. work wasted
  /// on partial tiles, SMs idle in the last wave. Names in a fixed order; none by default.
  virtual std::vector<std::string> selection_feature_names() const { return {}; }
  /// selection_feature_names().size() values of config on shape (sizes in the op's dims order)
  /// on a GPU of sm_count SMs, appended to out.
  virtual void selection_features(const Config& /*config*/, int /*sm_count*/,
                                  const std::vector<int64_t>& /*shape*/,
                                  std::vector<double>& /*out*/) const {}
  /// The shape at which a problem's shape is looked up in the op's shipped selection data (and
  /// its features taken): where the data holds problems of another form (e.g. GEMM's sweeps hold
  /// single products, a batch is looked up as one product of as many tiles). Itself by default.
  virtual std::vector<int64_t> selection_shape(const std::vector<int64_t>& shape) const {
    return shape;
  }
};

}  // namespace tuned
