// Multiplies two random matrices with tuned_gemm and checks the result against cuBLAS.
// Usage: gemm_example [M N K [LAYOUT]]   (LAYOUT: NN, NT, TN or TT; default 1000 1000 1000 NN)
#include <cublas_v2.h>
#include <tuned/tuned.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const int m = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int n = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int k = argc > 3 ? std::atoi(argv[3]) : 1000;
  const std::string layout = argc > 4 ? argv[4] : "NN";
  const tuned_operation_t op_a = layout[0] == 'T' ? TUNED_OP_T : TUNED_OP_N;
  const tuned_operation_t op_b = layout.size() > 1 && layout[1] == 'T' ? TUNED_OP_T : TUNED_OP_N;
  const int lda = op_a == TUNED_OP_N ? m : k, ldb = op_b == TUNED_OP_N ? k : n, ldc = m;

  std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  float *da, *db, *dc, *dref;
  if (cudaMalloc(reinterpret_cast<void**>(&da), a.size() * 4) != cudaSuccess || cudaMalloc(reinterpret_cast<void**>(&db), b.size() * 4) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&dc), static_cast<size_t>(m) * n * 4) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&dref), static_cast<size_t>(m) * n * 4) != cudaSuccess) {
    std::fprintf(stderr, "gemm_example: no CUDA device or out of memory\n");
    return 1;
  }
  cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);

  char config[512];
  if (tuned_gemm_describe(op_a, op_b, m, n, k, da, lda, db, ldb, dc, ldc, config, sizeof(config)) !=
      TUNED_STATUS_SUCCESS) {
    std::fprintf(stderr, "gemm_example: %s\n", tuned_last_error());
    return 1;
  }
  const float alpha = 1.0f, beta = 0.0f;
  const tuned_status_t status =
      tuned_gemm(op_a, op_b, m, n, k, &alpha, da, lda, db, ldb, &beta, dc, ldc, nullptr);
  if (status != TUNED_STATUS_SUCCESS) {
    std::fprintf(stderr, "gemm_example: tuned_gemm: %s: %s\n", tuned_status_string(status),
                 tuned_last_error());
    return 1;
  }
  cublasHandle_t handle;
  cublasCreate(&handle);
  cublasSgemm(handle, op_a == TUNED_OP_T ? CUBLAS_OP_T : CUBLAS_OP_N,
              op_b == TUNED_OP_T ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, da, lda, db, ldb,
              &beta, dref, ldc);
  std::vector<float> c(static_cast<size_t>(m) * n), ref(c.size());
  cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(ref.data(), dref, ref.size() * 4, cudaMemcpyDeviceToHost);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    diff += (double(c[i]) - ref[i]) * (double(c[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  const double rel = std::sqrt(diff / (norm > 0 ? norm : 1));
  std::printf("%dx%dx%d %s: config %s\nrelative error vs cuBLAS: %.3g\n", m, n, k, layout.c_str(),
              config, rel);
  cublasDestroy(handle);
  return rel <= 1e-5 ? 0 : 1;
}
