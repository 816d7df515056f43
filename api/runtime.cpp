#include "api/runtime.hpp"

#include <cmath>
#include <cstdlib>

#include "cache/shipped_defaults.hpp"
#include "generator/cuda_check.hpp"

namespace tuned {

Runtime& Runtime::instance() {
  static Runtime runtime;
  return runtime;
}

Runtime::Runtime() {
  const char* env = std::getenv("TUNED_DB");
  db_explicit_ = env != nullptr && *env != '\0';
  db_path_ = cache::default_database_path();
}

void Runtime::set_database(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* env = std::getenv("TUNED_DB");
  db_explicit_ = !path.empty() || (env != nullptr && *env != '\0');
  db_path_ = path.empty() ? cache::default_database_path() : path;
  kernels_.set_store(nullptr);
  store_.reset();
  db_.reset();
  db_opened_ = false;
  choices_.clear();
  if (db_explicit_) database();  // report a bad explicit path now, not at the first gemm
}

cache::Database* Runtime::database() {
  if (!db_opened_) {
    db_opened_ = true;
    try {
      db_ = std::make_unique<cache::Database>(db_path_);
      store_ = std::make_unique<cache::DatabaseCubinStore>(*db_);
      kernels_.set_store(store_.get());
    } catch (const Error&) {
      if (db_explicit_) {
        db_opened_ = false;  // try again next call, and say why every time
        throw;
      }
    }
  }
  return db_.get();
}

const DeviceInfo& Runtime::current_device() {
  int index = 0;
  TUNED_CUDA_CHECK(cudaGetDevice(&index));
  if (auto it = devices_.find(index); it != devices_.end()) return it->second;
  return devices_.emplace(index, query_device(index)).first->second;
}

gemm_op::Problem Runtime::make_problem(int op_a, int op_b, int64_t m, int64_t n, int64_t k,
                                    const void* a, int64_t lda, const void* b, int64_t ldb,
                                    const void* c, int64_t ldc) {
  gemm_op::Problem p;
  p.trans_a = op_a == TUNED_OP_T;
  p.trans_b = op_b == TUNED_OP_T;
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = lda;
  p.ldb = ldb;
  p.ldc = ldc;
  p.alignment = gemm_op::alignment_class(a, b, c, lda, ldb, ldc);
  return p;
}

Runtime::MemoKey Runtime::memo_key(const DeviceInfo& device, const gemm_op::Problem& p) {
  return {device.index, p.trans_a, p.trans_b, p.m, p.n, p.k, p.alignment};
}

size_t Runtime::MemoKeyHash::operator()(const MemoKey& k) const {
  size_t h = std::hash<int64_t>()(k.m);
  for (int64_t v : {k.n, k.k, int64_t(k.alignment), int64_t(k.device), int64_t(k.trans_a),
                    int64_t(k.trans_b)}) {
    h = h * 1000003u ^ std::hash<int64_t>()(v);
  }
  return h;
}

Runtime::Choice Runtime::choose_gemm(const DeviceInfo& device, const gemm_op::Problem& problem) {
  // Repeat calls stop here: the memo key is plain numbers, built without allocating.
  const MemoKey memo = memo_key(device, problem);
  if (auto it = choices_.find(memo); it != choices_.end()) return it->second;
  const cache::ProblemKey key = gemm_op::problem_key(device, problem);

  Choice choice;
  // A stored config that no longer fits (older template, other alignment) is skipped.
  auto try_record = [&](const std::optional<cache::BestRecord>& best, const std::string& origin) {
    if (!best) return false;
    try {
      choice.config = gemm_op::fit_config(Config::parse(best->config), device, problem);
      const bool same_shape = best->key.shape == key.shape;
      choice.origin = origin == "shipped" && !same_shape ? "shipped nearest" : origin;
      if (!same_shape) choice.origin += " " + best->key.shape_string();
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  // The user's own tuning for this exact key first. Otherwise the user's nearest tuned shape,
  // unless the shipped table has a strictly nearer one (its exact key above all): a config tuned
  // on this very shape beats one tuned elsewhere, whoever tuned it.
  cache::Database* db = database();
  if (!(db && try_record(db->find_best(key), "exact"))) {
    auto& shipped = cache::ShippedDefaults::builtin();
    const int cc = device.compute_capability();
    std::optional<cache::BestRecord> from_shipped = shipped.find_best(key, device.name, cc);
    if (!from_shipped) from_shipped = shipped.find_nearest(key, device.name, cc);
    std::optional<cache::BestRecord> from_user = db ? db->find_nearest(key) : std::nullopt;
    const auto distance = [&](const std::optional<cache::BestRecord>& r) {
      return r ? cache::shape_distance(r->key.shape, key.shape) : HUGE_VAL;
    };
    if (distance(from_shipped) < distance(from_user)) {
      if (!try_record(from_shipped, "shipped")) try_record(from_user, "nearest");
    } else if (!try_record(from_user, "nearest")) {
      try_record(from_shipped, "shipped");
    }
  }
  if (choice.origin.empty()) {
    choice.config = gemm_op::default_config(device, problem);
    choice.origin = "default";
  }
  return choices_.emplace(memo, choice).first->second;
}

void Runtime::gemm(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const float* alpha,
                   const float* a, int64_t lda, const float* b, int64_t ldb, const float* beta,
                   float* c, int64_t ldc, cudaStream_t stream) {
  gemm_op::validate_arguments(op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (m == 0 || n == 0) return;
  gemm_op::Problem problem = make_problem(op_a, op_b, m, n, k, a, lda, b, ldb, c, ldc);
  // BLAS semantics: alpha == 0 reads neither A nor B (they may be NULL); with k = 0 the kernel
  // writes beta * C without touching them.
  if (*alpha == 0.0f) problem.k = 0;
  const DeviceInfo* device;
  Choice choice;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    device = &current_device();
    choice = choose_gemm(*device, problem);
  }
  if (!choice.kernel) {
    choice.kernel = kernels_.get(gemm_op::kernel_spec(choice.config, problem), *device);
    std::lock_guard<std::mutex> lock(mutex_);
    choices_[memo_key(*device, problem)].kernel = choice.kernel;
  }
  const size_t ws_bytes = gemm_op::workspace_bytes(choice.config, problem);
  if (ws_bytes == 0) {
    gemm_op::launch(*choice.kernel, choice.config, problem, *alpha, a, b, *beta, c, nullptr,
                    stream);
    return;
  }
  // Split-K: the workspace is allocated and freed in stream order from the library's own pool,
  // so concurrent calls on different streams never share one and repeated calls reuse memory.
  cudaMemPool_t pool;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pool = workspace_pool(device->index);
  }
  void* workspace = nullptr;
  TUNED_CUDA_CHECK(cudaMallocFromPoolAsync(&workspace, ws_bytes, pool, stream));
  try {
    gemm_op::launch(*choice.kernel, choice.config, problem, *alpha, a, b, *beta, c, workspace,
                    stream);
  } catch (...) {
    (void)cudaFreeAsync(workspace, stream);
    throw;
  }
  TUNED_CUDA_CHECK(cudaFreeAsync(workspace, stream));
}

cudaMemPool_t Runtime::workspace_pool(int device) {
  if (auto it = pools_.find(device); it != pools_.end()) return it->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  TUNED_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  // Keep freed workspace reserved for the next call instead of returning it at each sync.
  uint64_t keep = UINT64_MAX;
  TUNED_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  return pools_.emplace(device, pool).first->second;
}

std::string Runtime::describe_gemm(int op_a, int op_b, int64_t m, int64_t n, int64_t k,
                                   const float* a, int64_t lda, const float* b, int64_t ldb,
                                   const float* c, int64_t ldc) {
  const float one = 1.0f;
  gemm_op::validate_arguments(op_a, op_b, m, n, k, &one, a, lda, b, ldb, &one, c, ldc);
  const gemm_op::Problem problem = make_problem(op_a, op_b, m, n, k, a, lda, b, ldb, c, ldc);
  std::lock_guard<std::mutex> lock(mutex_);
  const DeviceInfo& device = current_device();
  const Choice choice = choose_gemm(device, problem);
  return choice.origin + ": " + choice.config.canonical();
}

}  // namespace tuned
