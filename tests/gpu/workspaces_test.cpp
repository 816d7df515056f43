// The runtime's workspaces (api/workspaces.hpp) under concurrent calls: threads calling tuned_gemm
// on streams of their own and on one stream they share, on shapes whose picks need a workspace
// (split-K partials, packed operands), with more streams than the runtime keeps buffers for and
// buffers that must grow; every result is checked against cuBLAS on the same inputs.
#include "api/workspaces.hpp"

#include <cublas_v2.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/cuda_check.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tuned/error.hpp"
#include "tuned/tuned.h"

namespace tuned {
namespace {

struct Shape {
  bool trans_a, trans_b;
  int m, n, k;
};

// Device operands of one shape and cuBLAS's product of them.
struct Operands {
  Shape s;
  float *a = nullptr, *b = nullptr, *ref = nullptr;
  size_t c_elements() const { return static_cast<size_t>(s.m) * s.n; }
};

std::vector<float> random_floats(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Uploads random operands of `s` into `o`, has cuBLAS multiply them into o->ref, and sets
// *needs_workspace to whether the library's pick for `s` uses a workspace.
void make_operands(const Shape& s, cublasHandle_t cublas, std::mt19937_64& rng, Operands* o,
                   bool* needs_workspace) {
  o->s = s;
  const size_t a_elements = static_cast<size_t>(s.m) * s.k, b_elements = size_t(s.k) * s.n;
  TUNED_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&o->a), a_elements * 4));
  TUNED_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&o->b), b_elements * 4));
  TUNED_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&o->ref), o->c_elements() * 4));
  TUNED_CUDA_CHECK(cudaMemcpy(o->a, random_floats(a_elements, rng).data(), a_elements * 4,
                              cudaMemcpyHostToDevice));
  TUNED_CUDA_CHECK(cudaMemcpy(o->b, random_floats(b_elements, rng).data(), b_elements * 4,
                              cudaMemcpyHostToDevice));
  const int lda = s.trans_a ? s.k : s.m, ldb = s.trans_b ? s.n : s.k;
  const float one = 1.0f, zero = 0.0f;
  ASSERT_EQ(cublasSgemm(cublas, s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                        s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, s.m, s.n, s.k, &one, o->a, lda, o->b,
                        ldb, &zero, o->ref, s.m),
            CUBLAS_STATUS_SUCCESS);
  // What the library picks here, and whether it needs a workspace.
  char text[512];
  ASSERT_EQ(
      tuned_gemm_describe(s.trans_a ? TUNED_OP_T : TUNED_OP_N, s.trans_b ? TUNED_OP_T : TUNED_OP_N,
                          s.m, s.n, s.k, o->a, lda, o->b, ldb, o->ref, s.m, text, sizeof(text)),
      TUNED_STATUS_SUCCESS);
  const std::string described(text);
  // "origin: config (math: ...)"
  const size_t at = described.find(": ") + 2;
  const Config config = Config::parse(described.substr(at, described.find(" (math: ") - at));
  const gemm_op::Problem p = gemm_op::packed_problem(
      std::string(s.trans_a ? "T" : "N") + (s.trans_b ? "T" : "N"), s.m, s.n, s.k);
  *needs_workspace = gemm_op::workspace_bytes(config, p) > 0;
}

constexpr int kThreads = 4, kOwnStreams = 3, kRounds = 3;
static_assert(kThreads * kOwnStreams + 1 > Workspaces::kKeptStreams);

// Thread t's rounds of tuned_gemm calls: every shape on every stream, into outputs[stream index *
// shapes + shape index]. Returns the errors of failed calls, "" when none failed.
std::string call_gemms(int t, const std::vector<Operands>& operands,
                       const std::vector<cudaStream_t>& streams,
                       const std::vector<float*>& outputs) {
  std::string failures;
  const float one = 1.0f, zero = 0.0f;
  for (int round = 0; round < kRounds; ++round) {
    for (size_t si = 0; si < streams.size(); ++si) {
      // Each thread walks the shapes in its own order, so buffers grow at different times.
      for (size_t j = 0; j < operands.size(); ++j) {
        const size_t oi = (j + t + round) % operands.size();
        const Operands& o = operands[oi];
        const Shape& s = o.s;
        TUNED_CUDA_CHECK(cudaMemsetAsync(outputs[si * operands.size() + oi], 0xff,
                                         o.c_elements() * 4, streams[si]));  // NaN
        const tuned_status_t status =
            tuned_gemm(s.trans_a ? TUNED_OP_T : TUNED_OP_N, s.trans_b ? TUNED_OP_T : TUNED_OP_N,
                       s.m, s.n, s.k, &one, o.a, s.trans_a ? s.k : s.m, o.b, s.trans_b ? s.n : s.k,
                       &zero, outputs[si * operands.size() + oi], s.m, streams[si]);
        if (status != TUNED_STATUS_SUCCESS) failures += tuned_last_error() + std::string("; ");
      }
    }
  }
  return failures;
}

// Checks each output (laid out as call_gemms writes them) against cuBLAS's and frees it.
// Returns the outputs that are off, "" when all match.
std::string check_and_free_outputs(const std::vector<Operands>& operands,
                                   const std::vector<float*>& outputs) {
  std::string failures;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Operands& o = operands[i % operands.size()];
    std::vector<float> out(o.c_elements()), ref(o.c_elements());
    TUNED_CUDA_CHECK(cudaMemcpy(out.data(), outputs[i], out.size() * 4, cudaMemcpyDeviceToHost));
    TUNED_CUDA_CHECK(cudaMemcpy(ref.data(), o.ref, ref.size() * 4, cudaMemcpyDeviceToHost));
    double diff2 = 0, ref2 = 0;
    for (size_t e = 0; e < out.size(); ++e) {
      diff2 += (double(out[e]) - ref[e]) * (double(out[e]) - ref[e]);
      ref2 += double(ref[e]) * ref[e];
    }
    const double rel = std::sqrt(diff2 / ref2);
    if (!(rel <= std::max(1e-5, 2e-7 * std::sqrt(double(o.s.k))))) {
      failures += std::to_string(o.s.m) + "x" + std::to_string(o.s.n) + "x" +
                  std::to_string(o.s.k) + " on stream " + std::to_string(i / operands.size()) +
                  ": rel error " + std::to_string(rel) + "; ";
    }
    TUNED_CUDA_CHECK(cudaFree(outputs[i]));
  }
  return failures;
}

// One thread's work: kOwnStreams streams of its own plus `shared`, one C per (stream, shape),
// written every round (a stream's calls are ordered), then each C against cuBLAS's.
std::string run_thread(int t, const std::vector<Operands>& operands, cudaStream_t shared) {
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  std::vector<cudaStream_t> streams(kOwnStreams);
  for (auto& st : streams) TUNED_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  streams.push_back(shared);
  std::vector<float*> outputs;
  for (size_t i = 0; i < streams.size() * operands.size(); ++i) {
    float* c;
    TUNED_CUDA_CHECK(
        cudaMalloc(reinterpret_cast<void**>(&c), operands[i % operands.size()].c_elements() * 4));
    outputs.push_back(c);
  }
  std::string failures = call_gemms(t, operands, streams, outputs);
  for (auto st : streams) TUNED_CUDA_CHECK(cudaStreamSynchronize(st));
  failures += check_and_free_outputs(operands, outputs);
  for (int i = 0; i < kOwnStreams; ++i) TUNED_CUDA_CHECK(cudaStreamDestroy(streams[i]));
  return failures;
}

TEST(Workspaces, ConcurrentCallsOnManyStreamsGetRightResults) {
  TUNED_REQUIRE_GPU();
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  const std::string db =
      ::testing::TempDir() + "workspaces_test_" + std::to_string(getpid()) + ".db";
  ASSERT_EQ(tuned_set_database(db.c_str()), TUNED_STATUS_SUCCESS) << tuned_last_error();
  // Few tiles and long k (split-K), unaligned and large (packed), each layout.
  const std::vector<Shape> shapes = {{false, false, 64, 64, 8191},
                                     {false, false, 3001, 2999, 515},
                                     {true, false, 40, 3000, 7001},
                                     {false, true, 1999, 2001, 301},
                                     {true, true, 96, 80, 20000}};
  std::mt19937_64 rng(29);
  cublasHandle_t cublas;
  ASSERT_EQ(cublasCreate(&cublas), CUBLAS_STATUS_SUCCESS);
  cublasSetMathMode(cublas, CUBLAS_DEFAULT_MATH);
  std::vector<Operands> operands;
  int with_workspace = 0;
  for (const Shape& s : shapes) {
    Operands o;
    bool needs_workspace = false;
    ASSERT_NO_FATAL_FAILURE(make_operands(s, cublas, rng, &o, &needs_workspace));
    with_workspace += needs_workspace;
    operands.push_back(o);
  }
  TUNED_CUDA_CHECK(cudaDeviceSynchronize());
  cublasDestroy(cublas);
  ASSERT_GE(with_workspace, 3) << "the shapes should make the library use workspaces";

  cudaStream_t shared;
  TUNED_CUDA_CHECK(cudaStreamCreateWithFlags(&shared, cudaStreamNonBlocking));
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { failures[t] = run_thread(t, operands, shared); });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  TUNED_CUDA_CHECK(cudaStreamDestroy(shared));
  for (const Operands& o : operands) {
    cudaFree(o.a);
    cudaFree(o.b);
    cudaFree(o.ref);
  }
  tuned_set_database(nullptr);
  std::remove(db.c_str());
}

// An op run inside another's launch (PRETB's transpose) may only enqueue: one asking for a
// workspace there is refused with an error naming the rule, not left to deadlock on the stream's
// lock; the outer call goes on, and the workspaces serve the next call.
TEST(Workspaces, ANestedWorkspaceIsRefusedNotADeadlock) {
  TUNED_REQUIRE_GPU();
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  TUNED_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    Workspaces workspaces;
    EXPECT_FALSE(Workspaces::in_use_on_this_thread());
    bool inside = false, inner_ran = false;
    std::string refusal;
    workspaces.with(0, stream, false, 4096, [&](void* outer) {
      EXPECT_NE(outer, nullptr);
      inside = Workspaces::in_use_on_this_thread();
      try {
        workspaces.with(0, stream, false, 4096, [&](void*) { inner_ran = true; });
      } catch (const Error& e) {
        refusal = e.what();
      }
    });
    EXPECT_TRUE(inside);
    EXPECT_FALSE(inner_ran);
    EXPECT_NE(refusal.find("must need none"), std::string::npos) << refusal;
    EXPECT_FALSE(Workspaces::in_use_on_this_thread());
    void* again = nullptr;
    workspaces.with(0, stream, false, 4096, [&](void* w) { again = w; });
    EXPECT_NE(again, nullptr);
    TUNED_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  TUNED_CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace tuned
