// The C edge: every exception becomes a status code and a per-thread message. Nothing escapes.
#include <algorithm>
#include <functional>
#include <new>
#include <string>

#include "api/c_edge.hpp"
#include "api/entropy_api.hpp"
#include "api/gemm_api.hpp"
#include "api/transpose_api.hpp"
#include "api/runtime.hpp"
#include "tuned/tuned.h"
#include "tuned/tuned.hpp"

namespace {

thread_local std::string last_error;

template <typename Body>
tuned_status_t guarded(Body&& body) {
  try {
    body();
    last_error.clear();
    return TUNED_STATUS_SUCCESS;
  } catch (const tuned::Error& e) {
    last_error = e.what();
    return e.status();
  } catch (const std::bad_alloc&) {
    last_error = "out of host memory";
    return TUNED_STATUS_INTERNAL_ERROR;
  } catch (const std::exception& e) {
    last_error = std::string("internal error: ") + e.what();
    return TUNED_STATUS_INTERNAL_ERROR;
  } catch (...) {
    last_error = "internal error: unknown exception";
    return TUNED_STATUS_INTERNAL_ERROR;
  }
}

// A describe call's text into the caller's buffer, cut to fit, always terminated.
void copy_text(const std::string& text, char* buf, unsigned long size) {
  const size_t copied = std::min<size_t>(text.size(), size - 1);
  text.copy(buf, copied);
  buf[copied] = '\0';
}

tuned::entropy_op::Problem entropy_problem(int rows, int cols, int radius, int levels, int ld_in,
                                           int ld_out) {
  tuned::entropy_op::Problem p;
  p.rows = rows;
  p.cols = cols;
  p.radius = radius;
  p.levels = levels;
  p.ld_in = ld_in;
  p.ld_out = ld_out;
  return p;
}

tuned::EntropyOptions entropy_options(const tuned_entropy_options_t* options) {
  tuned::EntropyOptions o;
  if (options) {
    tuned::require_argument(options->path >= TUNED_ENTROPY_AUTO && options->path <= TUNED_ENTROPY_GPU,
                            "options->path",
                            "must be TUNED_ENTROPY_AUTO, TUNED_ENTROPY_CPU or TUNED_ENTROPY_GPU");
    o.path = static_cast<tuned::EntropyPath>(options->path);
    o.gpus = options->gpus;
  }
  return o;
}

}  // namespace

extern "C" {

const char* tuned_status_string(tuned_status_t status) {
  switch (status) {
    case TUNED_STATUS_SUCCESS: return "success";
    case TUNED_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case TUNED_STATUS_NO_DEVICE: return "no CUDA device";
    case TUNED_STATUS_UNSUPPORTED_ARCH: return "unsupported architecture";
    case TUNED_STATUS_COMPILE_ERROR: return "compile error";
    case TUNED_STATUS_LAUNCH_ERROR: return "launch error";
    case TUNED_STATUS_CUDA_ERROR: return "CUDA error";
    case TUNED_STATUS_DATABASE_ERROR: return "database error";
    case TUNED_STATUS_CONFIG_ERROR: return "configuration error";
    case TUNED_STATUS_INTERNAL_ERROR: return "internal error";
    case TUNED_STATUS_DEVICE_BUSY: return "device busy";
    case TUNED_STATUS_DATABASE_NOT_USED: return "database not used";
  }
  return "unknown status";
}

const char* tuned_last_error(void) { return last_error.c_str(); }

tuned_status_t tuned_gemm(tuned_operation_t op_a, tuned_operation_t op_b, int m, int n, int k,
                          const float* alpha, const float* A, int lda, const float* B, int ldb,
                          const float* beta, float* C, int ldc, cudaStream_t stream) {
  return guarded([&] {
    tuned::api::gemm(op_a, op_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc,
                     TUNED_COMPUTE_DEFAULT, stream);
  });
}

tuned_status_t tuned_gemm_ex(tuned_operation_t op_a, tuned_operation_t op_b, int m, int n, int k,
                             const float* alpha, const float* A, int lda, const float* B, int ldb,
                             const float* beta, float* C, int ldc, tuned_compute_t compute,
                             cudaStream_t stream) {
  return guarded([&] {
    tuned::api::gemm(op_a, op_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, compute, stream);
  });
}

tuned_status_t tuned_gemm_strided_batched(tuned_operation_t op_a, tuned_operation_t op_b, int m,
                                          int n, int k, const float* alpha, const float* A,
                                          int lda, long long stride_a, const float* B, int ldb,
                                          long long stride_b, const float* beta, float* C, int ldc,
                                          long long stride_c, int batch_count,
                                          cudaStream_t stream) {
  return tuned_gemm_strided_batched_ex(op_a, op_b, m, n, k, alpha, A, lda, stride_a, B, ldb,
                                       stride_b, beta, C, ldc, stride_c, batch_count,
                                       TUNED_COMPUTE_DEFAULT, nullptr, stream);
}

tuned_status_t tuned_gemm_strided_batched_ex(
    tuned_operation_t op_a, tuned_operation_t op_b, int m, int n, int k, const float* alpha,
    const float* A, int lda, long long stride_a, const float* B, int ldb, long long stride_b,
    const float* beta, float* C, int ldc, long long stride_c, int batch_count,
    tuned_compute_t compute, const tuned_epilogue_t* epilogue, cudaStream_t stream) {
  return guarded([&] {
    tuned::gemm_op::Epilogue e;
    if (epilogue != nullptr) {
      e.bias_kind = static_cast<tuned::gemm_op::BiasKind>(epilogue->bias_kind);
      e.bias = epilogue->bias;
      e.bias_stride = epilogue->bias_batch_stride;
      e.activation = static_cast<tuned::gemm_op::Activation>(epilogue->activation);
    }
    tuned::api::gemm(op_a, op_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, compute, stream,
                     {stride_a, stride_b, stride_c, batch_count}, e);
  });
}

tuned_status_t tuned_gemm_strided_batched_describe(
    tuned_operation_t op_a, tuned_operation_t op_b, int m, int n, int k, const float* A, int lda,
    long long stride_a, const float* B, int ldb, long long stride_b, const float* C, int ldc,
    long long stride_c, int batch_count, tuned_compute_t compute, char* buf, unsigned long size) {
  return guarded([&] {
    tuned::require_argument(buf != nullptr && size > 0, "buf", "must hold at least one byte");
    copy_text(tuned::api::describe_gemm(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc, compute,
                                        {stride_a, stride_b, stride_c, batch_count}),
              buf, size);
  });
}

tuned_status_t tuned_transpose(int rows, int cols, const float* A, int lda, float* B, int ldb,
                               cudaStream_t stream) {
  return guarded([&] { tuned::api::transpose(rows, cols, A, lda, B, ldb, stream); });
}

tuned_status_t tuned_transpose_describe(int rows, int cols, const float* A, int lda,
                                        const float* B, int ldb, char* buf, unsigned long size) {
  return guarded([&] {
    tuned::require_argument(buf != nullptr && size > 0, "buf", "must hold at least one byte");
    copy_text(tuned::api::describe_transpose(rows, cols, A, lda, B, ldb), buf, size);
  });
}

tuned_status_t tuned_entropy(int rows, int cols, int radius, int levels, const float* in,
                             int ld_in, float* out, int ld_out, cudaStream_t stream) {
  return guarded([&] {
    tuned::api::entropy(entropy_problem(rows, cols, radius, levels, ld_in, ld_out),
                        tuned::entropy_op::Input::kF32, in, out, stream);
  });
}

tuned_status_t tuned_entropy_u8(int rows, int cols, int radius, int levels,
                                const unsigned char* in, int ld_in, float* out, int ld_out,
                                cudaStream_t stream) {
  return guarded([&] {
    tuned::api::entropy(entropy_problem(rows, cols, radius, levels, ld_in, ld_out),
                        tuned::entropy_op::Input::kU8, in, out, stream);
  });
}

tuned_status_t tuned_entropy_host(int rows, int cols, int radius, int levels, const float* in,
                                  int ld_in, float* out, int ld_out,
                                  const tuned_entropy_options_t* options) {
  return guarded([&] {
    tuned::api::entropy_host(entropy_problem(rows, cols, radius, levels, ld_in, ld_out),
                             tuned::entropy_op::Input::kF32, in, out, entropy_options(options),
                             nullptr);
  });
}

tuned_status_t tuned_entropy_host_u8(int rows, int cols, int radius, int levels,
                                     const unsigned char* in, int ld_in, float* out, int ld_out,
                                     const tuned_entropy_options_t* options) {
  return guarded([&] {
    tuned::api::entropy_host(entropy_problem(rows, cols, radius, levels, ld_in, ld_out),
                             tuned::entropy_op::Input::kU8, in, out, entropy_options(options),
                             nullptr);
  });
}

tuned_status_t tuned_entropy_describe(int rows, int cols, int radius, int levels, int input_u8,
                                      char* buf, unsigned long size) {
  return guarded([&] {
    tuned::require_argument(buf != nullptr && size > 0, "buf", "must hold at least one byte");
    copy_text(tuned::api::describe_entropy(
                  tuned::entropy_op::packed_problem(rows, cols, radius, levels),
                  input_u8 ? tuned::entropy_op::Input::kU8 : tuned::entropy_op::Input::kF32),
              buf, size);
  });
}

tuned_status_t tuned_set_database(const char* path) {
  std::string warning;
  const tuned_status_t status =
      guarded([&] { warning = tuned::Runtime::instance().set_database(path ? path : ""); });
  if (status != TUNED_STATUS_SUCCESS || warning.empty()) return status;
  last_error = warning;
  return TUNED_STATUS_DATABASE_NOT_USED;
}

tuned_status_t tuned_set_record(const char* path) {
  return guarded([&] { tuned::Runtime::instance().set_record(path ? path : ""); });
}

tuned_status_t tuned_gemm_describe(tuned_operation_t op_a, tuned_operation_t op_b, int m, int n,
                                   int k, const float* A, int lda, const float* B, int ldb,
                                   const float* C, int ldc, char* buf, unsigned long size) {
  return guarded([&] {
    tuned::require_argument(buf != nullptr && size > 0, "buf", "must hold at least one byte");
    copy_text(tuned::api::describe_gemm(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc,
                                        TUNED_COMPUTE_DEFAULT),
              buf, size);
  });
}

tuned_status_t tuned_gemm_describe_ex(tuned_operation_t op_a, tuned_operation_t op_b, int m, int n,
                                      int k, const float* A, int lda, const float* B, int ldb,
                                      const float* C, int ldc, tuned_compute_t compute, char* buf,
                                      unsigned long size) {
  return guarded([&] {
    tuned::require_argument(buf != nullptr && size > 0, "buf", "must hold at least one byte");
    copy_text(tuned::api::describe_gemm(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc, compute), buf,
              size);
  });
}

tuned_status_t tuned_set_tuning(tuned_tuning_t policy) {
  return guarded([&] {
    tuned::require_argument(policy == TUNED_TUNING_OFF || policy == TUNED_TUNING_FIRST_USE,
                            "policy", "must be TUNED_TUNING_OFF or TUNED_TUNING_FIRST_USE");
    tuned::Runtime::instance().set_tuning(policy == TUNED_TUNING_FIRST_USE
                                              ? tuned::TuningPolicy::kFirstUse
                                              : tuned::TuningPolicy::kOff);
  });
}

}  // extern "C"

namespace tuned {

void gemm(Op op_a, Op op_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc, cudaStream_t stream,
          Compute compute) {
  api::gemm(static_cast<int>(op_a), static_cast<int>(op_b), m, n, k, &alpha, a, lda, b, ldb, &beta,
            c, ldc, static_cast<int>(compute), stream);
}

std::string describe_gemm(Op op_a, Op op_b, int m, int n, int k, const float* a, int lda,
                          const float* b, int ldb, const float* c, int ldc, Compute compute) {
  return api::describe_gemm(static_cast<int>(op_a), static_cast<int>(op_b), m, n, k, a, lda, b, ldb,
                            c, ldc, static_cast<int>(compute));
}

void gemm_strided_batched(Op op_a, Op op_b, int m, int n, int k, float alpha, const float* a,
                          int lda, long long stride_a, const float* b, int ldb,
                          long long stride_b, float beta, float* c, int ldc, long long stride_c,
                          int batch_count, cudaStream_t stream, Compute compute,
                          const Epilogue& epilogue) {
  gemm_op::Epilogue e;
  e.bias_kind = static_cast<gemm_op::BiasKind>(epilogue.bias);
  e.bias = epilogue.vector;
  e.bias_stride = epilogue.batch_stride;
  e.activation = static_cast<gemm_op::Activation>(epilogue.activation);
  api::gemm(static_cast<int>(op_a), static_cast<int>(op_b), m, n, k, &alpha, a, lda, b, ldb, &beta,
            c, ldc, static_cast<int>(compute), stream,
            {stride_a, stride_b, stride_c, batch_count}, e);
}

void transpose(int rows, int cols, const float* a, int lda, float* b, int ldb,
               cudaStream_t stream) {
  api::transpose(rows, cols, a, lda, b, ldb, stream);
}

std::string describe_transpose(int rows, int cols, const float* a, int lda, const float* b,
                               int ldb) {
  return api::describe_transpose(rows, cols, a, lda, b, ldb);
}

void entropy(int rows, int cols, int radius, int levels, const float* in, int ld_in, float* out,
             int ld_out, cudaStream_t stream) {
  api::entropy(entropy_problem(rows, cols, radius, levels, ld_in, ld_out), entropy_op::Input::kF32,
               in, out, stream);
}

void entropy(int rows, int cols, int radius, int levels, const unsigned char* in, int ld_in,
             float* out, int ld_out, cudaStream_t stream) {
  api::entropy(entropy_problem(rows, cols, radius, levels, ld_in, ld_out), entropy_op::Input::kU8,
               in, out, stream);
}

void entropy_host(int rows, int cols, int radius, int levels, const float* in, int ld_in,
                  float* out, int ld_out, const EntropyOptions& options, EntropyReport* report) {
  api::entropy_host(entropy_problem(rows, cols, radius, levels, ld_in, ld_out),
                    entropy_op::Input::kF32, in, out, options, report);
}

void entropy_host(int rows, int cols, int radius, int levels, const unsigned char* in, int ld_in,
                  float* out, int ld_out, const EntropyOptions& options, EntropyReport* report) {
  api::entropy_host(entropy_problem(rows, cols, radius, levels, ld_in, ld_out),
                    entropy_op::Input::kU8, in, out, options, report);
}

std::string describe_entropy(int rows, int cols, int radius, int levels, bool input_u8) {
  return api::describe_entropy(entropy_op::packed_problem(rows, cols, radius, levels),
                               input_u8 ? entropy_op::Input::kU8 : entropy_op::Input::kF32);
}

std::string set_database(const std::string& path) { return Runtime::instance().set_database(path); }

void set_record(const std::string& path) { Runtime::instance().set_record(path); }

void set_tuning(Tuning policy) {
  Runtime::instance().set_tuning(policy == Tuning::kFirstUse ? TuningPolicy::kFirstUse
                                                             : TuningPolicy::kOff);
}

}  // namespace tuned

namespace tuned::api {

// The guard above, for the C entry points defined in other files (api/c_edge.hpp): one
// tuned_last_error() for all of them.
tuned_status_t c_edge(const std::function<void()>& body) { return guarded(body); }

}  // namespace tuned::api
