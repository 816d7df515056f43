// tuned_gemm through the public C API against cuBLAS (FP32) and an FP64 reference, on fresh random
// inputs, with C poisoned first: random shapes from 1 to 1100, all four layouts, alpha/beta, padded
// leading dimensions; and the error paths.
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "cache/database.hpp"
#include "cache/records.hpp"
#include "generator/device.hpp"
#include "gpu_test_util.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "tuned/tuned.h"
#include "tuned/tuned.hpp"

namespace {

struct Case {
  tuned_operation_t op_a, op_b;
  int m, n, k, lda, ldb, ldc;
  float alpha, beta;
};

std::string describe(const Case& c) {
  char s[200];
  std::snprintf(s, sizeof(s), "%c%c m=%d n=%d k=%d lda=%d ldb=%d ldc=%d alpha=%g beta=%g",
                c.op_a ? 'T' : 'N', c.op_b ? 'T' : 'N', c.m, c.n, c.k, c.lda, c.ldb, c.ldc,
                c.alpha, c.beta);
  return s;
}

// A case's host inputs: random A, B and C (c0), and the C handed to tuned_gemm (c_in: c0, with
// the m x n part poisoned with NaN when beta == 0, which must never read C).
struct HostInputs {
  std::vector<float> a, b, c0, c_in;
};

HostInputs random_inputs(const Case& c, std::mt19937_64& rng) {
  const int a_cols = c.op_a ? c.m : c.k, b_cols = c.op_b ? c.k : c.n;
  HostInputs h;
  h.a.resize(static_cast<size_t>(c.lda) * std::max(a_cols, 1));
  h.b.resize(static_cast<size_t>(c.ldb) * std::max(b_cols, 1));
  h.c0.resize(static_cast<size_t>(c.ldc) * c.n);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : h.a) x = u(rng);
  for (auto& x : h.b) x = u(rng);
  for (auto& x : h.c0) x = u(rng);
  h.c_in = h.c0;
  if (c.beta == 0.0f) {
    // beta == 0 must never read C: poison the part it would read with NaN.
    for (int j = 0; j < c.n; ++j)
      for (int i = 0; i < c.m; ++i) h.c_in[static_cast<size_t>(j) * c.ldc + i] = NAN;
  }
  return h;
}

// How tuned_gemm's C (`out`) differs from cuBLAS's (`ref`) and from FP64.
struct CaseErrors {
  size_t bad = 0, untouched_padding_changed = 0;
  double rel = 0;    // normwise vs cuBLAS
  double rel64 = 0;  // normwise vs FP64, sampled
};

CaseErrors errors_of(const Case& c, const HostInputs& h, const std::vector<float>& out,
                     const std::vector<float>& ref) {
  double diff2 = 0, ref2 = 0, diff64 = 0, ref64 = 0;
  CaseErrors e;
  for (int j = 0; j < c.n; ++j) {
    for (int i = 0; i < c.ldc; ++i) {
      const size_t idx = static_cast<size_t>(j) * c.ldc + i;
      if (i >= c.m) {
        // Rows between m and ldc belong to the caller: they must come back bit for bit.
        if (std::memcmp(&out[idx], &h.c_in[idx], 4) != 0) ++e.untouched_padding_changed;
        continue;
      }
      if (!std::isfinite(out[idx])) {
        ++e.bad;
        continue;
      }
      diff2 += (double(out[idx]) - ref[idx]) * (double(out[idx]) - ref[idx]);
      ref2 += double(ref[idx]) * ref[idx];
      // FP64 reference of the same element (sampled: every 7th element keeps it fast).
      if (idx % 7 == 0) {
        double acc = 0;
        for (int p = 0; p < c.k; ++p) {
          const double av = c.op_a ? h.a[static_cast<size_t>(i) * c.lda + p]
                                   : h.a[static_cast<size_t>(p) * c.lda + i];
          const double bv = c.op_b ? h.b[static_cast<size_t>(p) * c.ldb + j]
                                   : h.b[static_cast<size_t>(j) * c.ldb + p];
          acc += av * bv;
        }
        const double exact = c.alpha * acc + (c.beta != 0.0f ? c.beta * double(h.c0[idx]) : 0.0);
        diff64 += (out[idx] - exact) * (out[idx] - exact);
        ref64 += exact * exact;
      }
    }
  }
  e.rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  e.rel64 = ref64 > 0 ? std::sqrt(diff64 / ref64) : std::sqrt(diff64);
  return e;
}

// One shape of ComputeTypesKeepTheirContracts: its A and B on the host and the device, and C.
struct ComputeShape {
  tuned_operation_t op_a, op_b;
  int m, n, k, lda, ldb, ldc;
  std::vector<float> a, b;
  float *da = nullptr, *db = nullptr, *dc = nullptr;
};

// Fills s's A and B with random values and uploads them; allocates C.
void upload_random_operands(std::mt19937_64& rng, ComputeShape* s) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  s->a.resize(static_cast<size_t>(s->lda) * (s->op_a ? s->m : s->k));
  s->b.resize(static_cast<size_t>(s->ldb) * (s->op_b ? s->k : s->n));
  for (auto& x : s->a) x = u(rng);
  for (auto& x : s->b) x = u(rng);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&s->da), s->a.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&s->db), s->b.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&s->dc), size_t{4} * s->ldc * s->n), cudaSuccess);
  cudaMemcpy(s->da, s->a.data(), s->a.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(s->db, s->b.data(), s->b.size() * 4, cudaMemcpyHostToDevice);
}

// Normwise error of s's C against FP64 over every 13th row and 11th column.
double error_vs_fp64(const ComputeShape& s) {
  std::vector<float> c(static_cast<size_t>(s.ldc) * s.n);
  cudaMemcpy(c.data(), s.dc, c.size() * 4, cudaMemcpyDeviceToHost);
  double diff = 0, norm = 0;
  for (int j = 0; j < s.n; j += 11) {
    for (int i = 0; i < s.m; i += 13) {
      double exact = 0;
      for (int p = 0; p < s.k; ++p) {
        exact += double(s.op_a ? s.a[size_t(i) * s.lda + p] : s.a[size_t(p) * s.lda + i]) *
                 double(s.op_b ? s.b[size_t(p) * s.ldb + j] : s.b[size_t(j) * s.ldb + p]);
      }
      const double got = c[size_t(j) * s.ldc + i];
      diff += (got - exact) * (got - exact);
      norm += exact * exact;
    }
  }
  return std::sqrt(diff / norm);
}

// The error of cuBLAS's C (with this handle's math mode) against FP64.
double cublas_error(cublasHandle_t handle, const ComputeShape& s) {
  const float one = 1.0f, zero = 0.0f;
  EXPECT_EQ(
      cublasSgemm(handle, s.op_a ? CUBLAS_OP_T : CUBLAS_OP_N, s.op_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                  s.m, s.n, s.k, &one, s.da, s.lda, s.db, s.ldb, &zero, s.dc, s.ldc),
      CUBLAS_STATUS_SUCCESS);
  return error_vs_fp64(s);
}

// tuned_gemm_ex with `compute` on s keeps that type's contract, given cuBLAS's SGEMM and TF32
// errors on the same shape (see ComputeTypesKeepTheirContracts).
void check_compute_type(const ComputeShape& s, tuned_compute_t compute, double sgemm, double tf32,
                        const tuned::DeviceInfo& device) {
  char text[512];
  ASSERT_EQ(tuned_gemm_describe_ex(s.op_a, s.op_b, s.m, s.n, s.k, s.da, s.lda, s.db, s.ldb, s.dc,
                                   s.ldc, compute, text, sizeof(text)),
            TUNED_STATUS_SUCCESS)
      << tuned_last_error();
  SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
               " compute " + std::to_string(compute) + ": " + text);
  cudaMemset(s.dc, 0xFF, size_t{4} * s.ldc * s.n);  // NaN: beta = 0 must overwrite it
  const float one = 1.0f, zero = 0.0f;
  ASSERT_EQ(tuned_gemm_ex(s.op_a, s.op_b, s.m, s.n, s.k, &one, s.da, s.lda, s.db, s.ldb, &zero,
                          s.dc, s.ldc, compute, nullptr),
            TUNED_STATUS_SUCCESS)
      << tuned_last_error();
  const double err = error_vs_fp64(s);
  const bool plain = std::string(text).find("plain TF32") != std::string::npos;
  if (compute == TUNED_COMPUTE_32F_FAST_TF32) {
    EXPECT_LE(err, 2 * tf32) << "cuBLAS TF32 " << tf32;
    if (device.compute_capability() == 90) {
      EXPECT_TRUE(plain);
      EXPECT_GT(err, 10 * sgemm) << "cuBLAS SGEMM " << sgemm;
    }
  } else {
    EXPECT_FALSE(plain);
    EXPECT_LE(err, 2 * sgemm) << "cuBLAS SGEMM " << sgemm;
  }
  if (compute == TUNED_COMPUTE_32F_PEDANTIC) {
    EXPECT_NE(std::string(text).find("(math: FFMA"), std::string::npos);
  }
}

class TunedGemm : public ::testing::Test {
 protected:
  void SetUp() override {
    TUNED_REQUIRE_GPU();
    // A private, empty database: these tests check the built-in path, not somebody's tuning.
    db_ = ::testing::TempDir() + "tuned_gemm_test_" + std::to_string(getpid()) + ".db";
    ASSERT_EQ(tuned_set_database(db_.c_str()), TUNED_STATUS_SUCCESS) << tuned_last_error();
    ASSERT_EQ(cublasCreate(&cublas_), CUBLAS_STATUS_SUCCESS);
    cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH);
  }
  void TearDown() override {
    if (cublas_) cublasDestroy(cublas_);
    std::remove(db_.c_str());
  }

  // Runs one case; checks tuned's C against cuBLAS and FP64 (and keeps the worst error).
  void run_case(const Case& c, std::mt19937_64& rng) {
    SCOPED_TRACE(describe(c));
    const HostInputs h = random_inputs(c, rng);
    float *da, *db, *dc, *dref;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&da), h.a.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&db), h.b.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dc), h.c0.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dref), h.c0.size() * 4), cudaSuccess);
    cudaMemcpy(da, h.a.data(), h.a.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(db, h.b.data(), h.b.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dc, h.c_in.data(), h.c0.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dref, h.c0.data(), h.c0.size() * 4, cudaMemcpyHostToDevice);

    ASSERT_EQ(tuned_gemm(c.op_a, c.op_b, c.m, c.n, c.k, &c.alpha, da, c.lda, db, c.ldb, &c.beta, dc,
                         c.ldc, nullptr),
              TUNED_STATUS_SUCCESS)
        << tuned_last_error();
    ASSERT_EQ(cublasSgemm(cublas_, c.op_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                          c.op_b ? CUBLAS_OP_T : CUBLAS_OP_N, c.m, c.n, c.k, &c.alpha, da, c.lda,
                          db, c.ldb, &c.beta, dref, c.ldc),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> out(h.c0.size()), ref(h.c0.size());
    cudaMemcpy(out.data(), dc, out.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(ref.data(), dref, ref.size() * 4, cudaMemcpyDeviceToHost);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    cudaFree(dref);

    const CaseErrors e = errors_of(c, h, out, ref);
    EXPECT_EQ(e.bad, 0u) << "NaN/Inf or unwritten elements";
    EXPECT_EQ(e.untouched_padding_changed, 0u) << "wrote outside the m x n part of C";
    EXPECT_LE(e.rel, 1e-5) << "vs cuBLAS";
    EXPECT_LE(e.rel64, 1e-5) << "vs FP64";
    worst_ = std::max(worst_, e.rel);
  }

  std::string db_;
  cublasHandle_t cublas_ = nullptr;
  double worst_ = 0;
};

TEST_F(TunedGemm, MatchesCublasOnRandomShapesLayoutsAndLeadingDims) {
  std::mt19937_64 rng(std::random_device{}());
  const int odd[] = {1, 7, 127, 1000, 1023, 1100};
  std::uniform_int_distribution<int> size(1, 1100), pad(0, 9), pick(0, 9);
  const float alphas[] = {1.0f, -0.5f, 2.25f};
  const float betas[] = {0.0f, 1.0f, -0.75f};
  int cases = 0;
  for (int t = 0; t < 220; ++t) {
    Case c;
    c.op_a = (t & 1) ? TUNED_OP_T : TUNED_OP_N;
    c.op_b = (t & 2) ? TUNED_OP_T : TUNED_OP_N;
    auto dim = [&] { return pick(rng) < 3 ? odd[rng() % 6] : size(rng); };
    c.m = dim();
    c.n = dim();
    c.k = dim();
    if (t % 5 == 0) c.k = std::min(c.k, 40);  // keep the FP64 reference cheap on some cases
    // Half the cases with the minimal leading dims, half padded (odd pads break alignment).
    const bool padded = (t / 4) % 2 == 1;
    c.lda = (c.op_a ? c.k : c.m) + (padded ? pad(rng) : 0);
    c.ldb = (c.op_b ? c.n : c.k) + (padded ? pad(rng) : 0);
    c.ldc = c.m + (padded ? pad(rng) : 0);
    c.alpha = alphas[t % 3];
    c.beta = betas[(t / 3) % 3];
    run_case(c, rng);
    ++cases;
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(cases, 220);
  std::printf("worst relative error vs cuBLAS over %d cases: %.3g\n", cases, worst_);
}

TEST_F(TunedGemm, TinyAndDegenerateShapes) {
  std::mt19937_64 rng(42);
  for (int m : {1, 2, 3, 7}) {
    for (int n : {1, 5, 17}) {
      for (int k : {1, 3, 9}) {
        run_case({TUNED_OP_N, TUNED_OP_T, m, n, k, m, n, m, 1.0f, 0.5f}, rng);
        run_case({TUNED_OP_T, TUNED_OP_N, m, n, k, k, k, m + 1, -1.0f, 0.0f}, rng);
      }
    }
  }
}

TEST_F(TunedGemm, KZeroGivesBetaTimesC) {
  const int m = 33, n = 17;
  std::vector<float> c(m * n);
  for (int i = 0; i < m * n; ++i) c[i] = 0.25f * i;
  float* dc;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dc), c.size() * 4), cudaSuccess);
  cudaMemcpy(dc, c.data(), c.size() * 4, cudaMemcpyHostToDevice);
  const float alpha = 1.0f, beta = 2.0f;
  ASSERT_EQ(tuned_gemm(TUNED_OP_N, TUNED_OP_N, m, n, 0, &alpha, nullptr, m, nullptr, 1, &beta, dc,
                       m, nullptr),
            TUNED_STATUS_SUCCESS)
      << tuned_last_error();
  std::vector<float> out(c.size());
  cudaMemcpy(out.data(), dc, out.size() * 4, cudaMemcpyDeviceToHost);
  for (int i = 0; i < m * n; ++i) ASSERT_EQ(out[i], 2.0f * c[i]) << i;
  // beta = 0 with k = 0 writes zeros over NaN.
  std::vector<float> nan(c.size(), NAN);
  cudaMemcpy(dc, nan.data(), nan.size() * 4, cudaMemcpyHostToDevice);
  const float zero = 0.0f;
  ASSERT_EQ(tuned_gemm(TUNED_OP_N, TUNED_OP_N, m, n, 0, &alpha, nullptr, m, nullptr, 1, &zero, dc,
                       m, nullptr),
            TUNED_STATUS_SUCCESS);
  cudaMemcpy(out.data(), dc, out.size() * 4, cudaMemcpyDeviceToHost);
  for (float x : out) ASSERT_EQ(x, 0.0f);
  cudaFree(dc);
}

TEST_F(TunedGemm, BadArgumentsGiveClearErrors) {
  float* d;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 1 << 20), cudaSuccess);
  const float one = 1.0f;
  struct Bad {
    int m, n, k, lda, ldb, ldc;
    bool null_a, null_c;
    const char* expect;
  } cases[] = {
      {-1, 4, 4, 4, 4, 4, false, false, "m: must be >= 0"},
      {4, -2, 4, 4, 4, 4, false, false, "n: must be >= 0"},
      {4, 4, -3, 4, 4, 4, false, false, "k: must be >= 0"},
      {8, 4, 4, 7, 4, 8, false, false, "lda: must be >= max(1, m) = 8"},
      {8, 4, 6, 8, 5, 8, false, false, "ldb: must be >= max(1, k) = 6"},
      {8, 4, 4, 8, 4, 3, false, false, "ldc: must be >= max(1, m) = 8"},
      {8, 4, 4, 8, 4, 8, true, false, "A: must not be NULL"},
      {8, 4, 4, 8, 4, 8, false, true, "C: must not be NULL"},
  };
  for (const auto& b : cases) {
    const tuned_status_t s = tuned_gemm(TUNED_OP_N, TUNED_OP_N, b.m, b.n, b.k, &one,
                                        b.null_a ? nullptr : d, b.lda, d, b.ldb, &one,
                                        b.null_c ? nullptr : d, b.ldc, nullptr);
    EXPECT_EQ(s, TUNED_STATUS_INVALID_ARGUMENT) << b.expect;
    EXPECT_NE(std::string(tuned_last_error()).find(b.expect), std::string::npos)
        << tuned_last_error();
  }
  EXPECT_EQ(tuned_gemm(TUNED_OP_N, TUNED_OP_N, 4, 4, 4, nullptr, d, 4, d, 4, &one, d, 4, nullptr),
            TUNED_STATUS_INVALID_ARGUMENT);
  // The C++ API throws the same error.
  try {
    tuned::gemm(tuned::Op::kN, tuned::Op::kN, 4, 4, 4, 1.0f, d, 3, d, 4, 0.0f, d, 4);
    FAIL();
  } catch (const tuned::Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("lda"), std::string::npos);
  }
  cudaFree(d);
}

// Compute types (tuned_gemm_ex): the default and the pedantic type keep the accuracy contract
// (normwise error against FP64 within 2x cuBLAS SGEMM's; pedantic in FFMA); the TF32 type, asked
// for, runs plain TF32 on an sm_90 GPU (its error is TF32's: many times SGEMM's, within 2x cuBLAS
// TF32's). A compute type that does not exist is a clear error.
TEST_F(TunedGemm, ComputeTypesKeepTheirContracts) {
  const tuned::DeviceInfo device = tuned::query_device(0);
  std::mt19937_64 rng(2031);
  cublasHandle_t tf32_cublas = nullptr;
  ASSERT_EQ(cublasCreate(&tf32_cublas), CUBLAS_STATUS_SUCCESS);
  cublasSetMathMode(tf32_cublas, CUBLAS_TF32_TENSOR_OP_MATH);
  for (const auto& [op_a, op_b, m, n, k] : {std::tuple{TUNED_OP_N, TUNED_OP_N, 2048, 1536, 1024},
                                            std::tuple{TUNED_OP_T, TUNED_OP_T, 1000, 999, 1001}}) {
    ComputeShape s{op_a, op_b, m, n, k, op_a ? k : m, op_b ? n : k, m, {}, {}};
    ASSERT_NO_FATAL_FAILURE(upload_random_operands(rng, &s));
    const double sgemm = cublas_error(cublas_, s), tf32 = cublas_error(tf32_cublas, s);
    for (tuned_compute_t compute :
         {TUNED_COMPUTE_DEFAULT, TUNED_COMPUTE_32F_FAST_TF32, TUNED_COMPUTE_32F_PEDANTIC}) {
      ASSERT_NO_FATAL_FAILURE(check_compute_type(s, compute, sgemm, tf32, device));
    }
    cudaFree(s.da);
    cudaFree(s.db);
    cudaFree(s.dc);
  }
  cublasDestroy(tf32_cublas);
  const float one = 1.0f;
  float* d;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 64), cudaSuccess);
  EXPECT_EQ(tuned_gemm_ex(TUNED_OP_N, TUNED_OP_N, 4, 4, 4, &one, d, 4, d, 4, &one, d, 4,
                          static_cast<tuned_compute_t>(7), nullptr),
            TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tuned_last_error()).find("compute: must be TUNED_COMPUTE_DEFAULT"),
            std::string::npos)
      << tuned_last_error();
  cudaFree(d);
}

// A database tuned on another GPU of this model (the devices table lists another uuid with this
// GPU's name, compute capability and SM count) answers for its exact shape on this GPU: the call
// reports the twin's entry and its kernel, compiled here, gives correct results.
TEST_F(TunedGemm, TwinGpusEntryIsUsedAndCorrectHere) {
  const tuned::DeviceInfo device = tuned::query_device(0);
  const auto problem = tuned::gemm_op::packed_problem("NN", 1001, 999, 777);  // odd everything
  const std::string twin_uuid = "GPU-twin-of-" + device.uuid;
  const std::string twin_config =
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=1,LM=8,VEC=1,PAD=4,AKM=1,BKM=0,UNROLL=16,"
      "PIPE=4,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,"
      "AHEAD=0";
  {
    tuned::cache::Database db(db_);
    tuned::cache::DeviceRecord twin = tuned::cache::device_record(device);
    twin.uuid = twin_uuid;
    db.upsert_device(twin);
    tuned::cache::BestRecord best;
    best.key = tuned::gemm_op::problem_key(device, problem);
    best.key.device_uuid = twin_uuid;
    best.config = twin_config;
    best.ms = 1;
    ASSERT_TRUE(db.offer_best(best));
  }
  const int m = static_cast<int>(problem.m), n = static_cast<int>(problem.n);
  const int k = static_cast<int>(problem.k);
  float* d;  // only its alignment matters to describe: one buffer serves as A, B and C
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), static_cast<size_t>(m) * m * 4), cudaSuccess);
  char buf[512];
  ASSERT_EQ(tuned_gemm_describe(TUNED_OP_N, TUNED_OP_N, m, n, k, d, m, d, k, d, m, buf, sizeof(buf)),
            TUNED_STATUS_SUCCESS)
      << tuned_last_error();
  cudaFree(d);
  EXPECT_EQ(std::string(buf), "twin " + twin_uuid + ": " + twin_config + " (math: " +
                                  tuned::gemm_op::math_family(tuned::Config::parse(twin_config)) + ")");
  std::mt19937_64 rng(201);
  run_case({TUNED_OP_N, TUNED_OP_N, m, n, k, m, k, m, 1.0f, 0.0f}, rng);
  run_case({TUNED_OP_N, TUNED_OP_N, m, n, k, m, k, m, -0.5f, 0.75f}, rng);
}

// A cache can only help: a path that cannot hold a database is set with a warning naming it, and
// calls go on with the shipped choices.
TEST_F(TunedGemm, UnwritableDatabasePathIsAWarningAndCallsGoOn) {
  const tuned_status_t s = tuned_set_database("/proc/tuned-cannot-be-here/tuned.db");
  EXPECT_EQ(s, TUNED_STATUS_DATABASE_NOT_USED);
  EXPECT_NE(std::string(tuned_last_error()).find("/proc/tuned-cannot-be-here"), std::string::npos)
      << tuned_last_error();
  std::mt19937_64 rng(202);
  run_case({TUNED_OP_N, TUNED_OP_T, 127, 33, 1000, 127, 33, 127, 1.0f, 0.0f}, rng);
}

TEST_F(TunedGemm, BadDeviceInAutotuneIsAClearError) {
  std::string out;
  const int rc = tuned::testing::run_command(
      tuned::testing::tool_path("autotune") + " --device 97 --op gemm --shape 64x64x64 --db " +
          db_ + ".bad-device",
      &out);
  EXPECT_EQ(rc, 2) << out;  // an index the machine lacks: a usage error (tools/exit_codes.hpp)
  EXPECT_NE(out.find("--device 97"), std::string::npos) << out;
  EXPECT_NE(out.find("no such CUDA device"), std::string::npos) << out;
}

}  // namespace
