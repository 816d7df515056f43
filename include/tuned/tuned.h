/// @file tuned.h
/// The C API of libtuned: autotuned, JIT-compiled kernels with cuBLAS-like arguments.
///
/// Every function returns a tuned_status_t; tuned_status_string() names the code and
/// tuned_last_error() gives the message of the last failure on the calling thread (which argument,
/// which rule, and for compile failures the NVRTC log).
#ifndef TUNED_TUNED_H_
#define TUNED_TUNED_H_

#include <cuda_runtime_api.h>

#include "tuned/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Result of every call.
typedef enum tuned_status_t {
  TUNED_STATUS_SUCCESS = 0,
  TUNED_STATUS_INVALID_ARGUMENT = 1,  ///< an argument breaks a rule (size, pointer, leading dim)
  TUNED_STATUS_NO_DEVICE = 2,         ///< no CUDA device or driver, or the device index is bad
  TUNED_STATUS_UNSUPPORTED_ARCH = 3,  ///< the device's architecture is older than sm_70
  TUNED_STATUS_COMPILE_ERROR = 4,     ///< NVRTC rejected a kernel (the message holds its log)
  TUNED_STATUS_LAUNCH_ERROR = 5,      ///< the kernel could not be loaded or launched
  TUNED_STATUS_CUDA_ERROR = 6,        ///< another CUDA runtime call failed
  TUNED_STATUS_DATABASE_ERROR = 7,    ///< the tuning database is unwritable, corrupt or too new
  TUNED_STATUS_CONFIG_ERROR = 8,      ///< a configuration (TOML, config string) is malformed
  TUNED_STATUS_INTERNAL_ERROR = 9,    ///< a bug in tuned
  TUNED_STATUS_DEVICE_BUSY = 10,      ///< another tuner holds the GPU (autotune --no-wait)
  /// A warning, from tuned_set_database only: the path is set, but the database cannot be used now
  /// (tuned_last_error says why); calls compute with the shipped choices and use it once it can be.
  TUNED_STATUS_DATABASE_NOT_USED = 11
} tuned_status_t;

/// Mirrors cublasOperation_t: TUNED_OP_N uses the matrix as stored, TUNED_OP_T its transpose.
typedef enum tuned_operation_t { TUNED_OP_N = 0, TUNED_OP_T = 1 } tuned_operation_t;

/// Version of the library in use, "MAJOR.MINOR.PATCH": TUNED_VERSION_STRING of the build that made
/// it (the headers' TUNED_VERSION_* macros name the version a program was compiled against).
const char* tuned_version(void);

/// Short name of a status code ("invalid argument", ...).
const char* tuned_status_string(tuned_status_t status);

/// Message of the last failed call on this thread ("" when none failed).
const char* tuned_last_error(void);

/// C = alpha * op(A) * op(B) + beta * C in FP32, column-major, with cublasSgemm's arguments
/// (alpha and beta by host pointer) plus a stream. op(A) is m x k, op(B) is k x n, C is m x n.
/// lda >= max(1, op_a == N ? m : k), ldb >= max(1, op_b == N ? k : n), ldc >= max(1, m).
/// k == 0 gives beta * C; beta == 0 never reads C. The kernel is the user's own tuning for this
/// exact problem if any, else the shipped defaults' entry for this GPU model and shape, else (with
/// TUNED_TUNING_FIRST_USE) the winner of a quick first-use tuning, else the selection model's pick
/// from a portfolio precompiled into the library (or the user's nearest tuned shape where that is
/// predicted to be better), else a built-in default. Loaded once per process. Asynchronous on the
/// stream; may be captured into a CUDA graph, also on its first call. TUNED_LOG_LEVEL=info (and
/// TUNED_LOG_FILE) log each choice. Inputs and output are FP32; the products and sums run in FP32
/// (FFMA kernels) or, on sm_90 and later where tuning picked one (MMA=1 in the config), in FP64 on
/// the tensor cores with one rounding to FP32 at the end: closer to the exact result than FP32
/// sums, so the last bits may differ from an FFMA kernel's or cuBLAS's; or in split TF32 on the
/// tensor cores (three TF32 products summed in FP32), within the same accuracy contract: every
/// kernel it may pick has a normwise error against an FP64 product within 2x cuBLAS SGEMM's.
/// tuned_gemm_ex takes a compute type (plain TF32, or FFMA only).
tuned_status_t tuned_gemm(tuned_operation_t op_a, tuned_operation_t op_b, int m, int n, int k,
                          const float* alpha, const float* A, int lda, const float* B, int ldb,
                          const float* beta, float* C, int ldc, cudaStream_t stream);

/// The arithmetic a GEMM may use, as cuBLAS users know compute types.
typedef enum tuned_compute_t {
  /// FP32-accurate (tuned_gemm's): FFMA, FP64 tensor cores or split TF32 (three TF32 products),
  /// whichever is fastest, every one with a normwise error against an FP64 product within 2x
  /// cuBLAS SGEMM's.
  TUNED_COMPUTE_DEFAULT = 0,
  /// TF32 rounding accepted, like CUBLAS_COMPUTE_32F_FAST_TF32: plain TF32 on the tensor cores
  /// (one product, 10 mantissa bits of each operand; sm_90) where it is fastest, else any of the
  /// default's kernels. Never chosen unless asked. Errors within 2x cuBLAS's in TF32.
  TUNED_COMPUTE_32F_FAST_TF32 = 1,
  /// FFMA only: FP32 products and sums on the CUDA cores, like CUBLAS_COMPUTE_32F_PEDANTIC.
  TUNED_COMPUTE_32F_PEDANTIC = 2
} tuned_compute_t;

/// tuned_gemm with a compute type (see tuned_compute_t). Each compute type is tuned and chosen on
/// its own (autotune --layout NN-tf32, NN-pedantic, ...); tuned_gemm is compute
/// TUNED_COMPUTE_DEFAULT.
tuned_status_t tuned_gemm_ex(tuned_operation_t op_a, tuned_operation_t op_b, int m, int n, int k,
                             const float* alpha, const float* A, int lda, const float* B, int ldb,
                             const float* beta, float* C, int ldc, tuned_compute_t compute,
                             cudaStream_t stream);

/// A bias vector the epilogue adds (tuned_epilogue_t): one value per row of C (m values, cuBLASLt's
/// bias epilogue; a row-major framework's per-output-feature bias in the column-major call) or
/// per column (n values).
typedef enum tuned_bias_t {
  TUNED_BIAS_NONE = 0,
  TUNED_BIAS_ROW = 1,
  TUNED_BIAS_COLUMN = 2
} tuned_bias_t;

/// The activation the epilogue applies last (tuned_epilogue_t): max(x, 0), or GELU as PyTorch
/// computes it, with the tanh approximation or the exact erf form.
typedef enum tuned_activation_t {
  TUNED_ACTIVATION_NONE = 0,
  TUNED_ACTIVATION_RELU = 1,
  TUNED_ACTIVATION_GELU_TANH = 2,
  TUNED_ACTIVATION_GELU_ERF = 3
} tuned_activation_t;

/// What the product's kernel does before it stores C (the cuBLASLt epilogue idea):
/// C = activation(alpha op(A) op(B) + beta C + bias), in the same kernel, so a layer's product,
/// bias and activation make one pass over C. A zero-initialised struct does nothing more.
typedef struct tuned_epilogue_t {
  tuned_bias_t bias_kind;
  const float* bias;            ///< device memory; must not be NULL where bias_kind asks for one
  long long bias_batch_stride;  ///< floats between the products' bias vectors (0: one for all)
  tuned_activation_t activation;
} tuned_epilogue_t;

/// batch_count products C_i = alpha op(A_i) op(B_i) + beta C_i, i = 0 .. batch_count - 1, with
/// cublasSgemmStridedBatched's arguments plus a stream: A_i = A + i stride_a (floats), B_i and C_i
/// likewise. A stride of 0 uses one matrix for every product (broadcast: stride_a = 0 multiplies
/// every B_i by the same A); strides must be >= 0 and C's products must not overlap (stride_c >=
/// ldc * n when batch_count > 1). The products run in one launch (the batch is the grid's third
/// dimension) with a kernel chosen for the whole batch like tuned_gemm's for one product (a batch
/// is a problem of its own: autotune --op gemm --batch N tunes it); batch_count 1 is tuned_gemm,
/// batch_count 0 does nothing.
tuned_status_t tuned_gemm_strided_batched(tuned_operation_t op_a, tuned_operation_t op_b, int m,
                                          int n, int k, const float* alpha, const float* A,
                                          int lda, long long stride_a, const float* B, int ldb,
                                          long long stride_b, const float* beta, float* C, int ldc,
                                          long long stride_c, int batch_count,
                                          cudaStream_t stream);

/// tuned_gemm_strided_batched with a compute type (see tuned_compute_t) and an epilogue (NULL:
/// none; see tuned_epilogue_t): C_i = activation(alpha op(A_i) op(B_i) + beta C_i + bias_i).
tuned_status_t tuned_gemm_strided_batched_ex(
    tuned_operation_t op_a, tuned_operation_t op_b, int m, int n, int k, const float* alpha,
    const float* A, int lda, long long stride_a, const float* B, int ldb, long long stride_b,
    const float* beta, float* C, int ldc, long long stride_c, int batch_count,
    tuned_compute_t compute, const tuned_epilogue_t* epilogue, cudaStream_t stream);

/// B = A^T, out of place, in FP32, column-major: A is rows x cols (lda >= max(1, rows)), B is
/// cols x rows (ldb >= max(1, cols)); A and B must not overlap. Exact (bits are moved, not
/// computed). The kernel is chosen like tuned_gemm's (the user's tuning for this exact shape, the
/// shipped entry, else a built-in default); asynchronous on the stream.
tuned_status_t tuned_transpose(int rows, int cols, const float* A, int lda, float* B, int ldb,
                               cudaStream_t stream);

/// Describes the configuration tuned_transpose would use, like tuned_gemm_describe.
tuned_status_t tuned_transpose_describe(int rows, int cols, const float* A, int lda,
                                        const float* B, int ldb, char* buf, unsigned long size);

/// Local entropy: out(i, j) = the Shannon entropy (natural log) of the values in the
/// (2 radius + 1)^2 window centred on element (i, j) of the rows x cols column-major matrix in,
/// the window clipped at the borders. Values are integers in [0, levels) (FP32 holding integers, or
/// bytes in the _u8 forms); radius 0..7, levels 2..256; ld_in, ld_out >= max(1, rows); in and out
/// must not overlap. A value outside [0, levels) or not an integer is an error naming the element,
/// and nothing is written. Results are within 1e-5 of a double-precision reference.
/// Device memory of the current GPU: the values are checked on the device first (the call waits
/// for that check), then the kernel, chosen like tuned_gemm's, runs asynchronously on the stream.
tuned_status_t tuned_entropy(int rows, int cols, int radius, int levels, const float* in,
                             int ld_in, float* out, int ld_out, cudaStream_t stream);
tuned_status_t tuned_entropy_u8(int rows, int cols, int radius, int levels,
                                const unsigned char* in, int ld_in, float* out, int ld_out,
                                cudaStream_t stream);

/// Where tuned_entropy_host computes.
typedef enum tuned_entropy_path_t {
  /// The CPU when no GPU is visible or the problem is below the CPU/GPU threshold measured by
  /// `autotune --op entropy` on this machine; else the GPUs.
  TUNED_ENTROPY_AUTO = 0,
  TUNED_ENTROPY_CPU = 1,  ///< the OpenMP path
  TUNED_ENTROPY_GPU = 2   ///< the GPUs (TUNED_STATUS_NO_DEVICE without one)
} tuned_entropy_path_t;

typedef struct tuned_entropy_options_t {
  tuned_entropy_path_t path;
  /// GPUs to split the columns over, devices 0..gpus-1, each with a halo of radius columns; 0:
  /// every visible GPU. The result is identical whatever the split.
  int gpus;
} tuned_entropy_options_t;

/// Local entropy from host memory to host memory (pageable or pinned; see tuned_entropy). On the
/// GPUs each GPU's band is handled by a host thread of its own: its values checked and packed into
/// pinned bytes chunk by chunk while earlier chunks upload, then (once every band's values passed)
/// computed and downloaded in chunks overlapped with the copy out. Every GPU of a model runs the
/// config chosen on GPU 0. options may be NULL (auto path, every GPU). Synchronous.
tuned_status_t tuned_entropy_host(int rows, int cols, int radius, int levels, const float* in,
                                  int ld_in, float* out, int ld_out,
                                  const tuned_entropy_options_t* options);
tuned_status_t tuned_entropy_host_u8(int rows, int cols, int radius, int levels,
                                     const unsigned char* in, int ld_in, float* out, int ld_out,
                                     const tuned_entropy_options_t* options);

/// Describes the configuration tuned_entropy would use on the current GPU for this problem
/// (input_u8: 0 for FP32 input, 1 for bytes), like tuned_gemm_describe.
tuned_status_t tuned_entropy_describe(int rows, int cols, int radius, int levels, int input_u8,
                                      char* buf, unsigned long size);

/// Uses the tuning database at path from now on (NULL: TUNED_DB, else the default under
/// $XDG_CACHE_HOME/tuned/); a missing file is created. Kernels already loaded stay loaded. No state
/// of the database ever fails a call: one that cannot be used now (older schema for recording,
/// another application's file, damaged, locked, a folder, a named pipe...) gives
/// TUNED_STATUS_DATABASE_NOT_USED, a warning with the reason in tuned_last_error(), and calls use
/// the shipped choices meanwhile.
tuned_status_t tuned_set_database(const char* path);

/// When tuned_gemm meets a problem nobody tuned (no exact entry in the user's database).
typedef enum tuned_tuning_t {
  /// Use the selection model's pick (a precompiled kernel): no timing, no compilation. Default.
  TUNED_TUNING_OFF = 0,
  /// Time the model's top candidates and the database's nearby bests (kernels at hand, never
  /// compiled) on scratch buffers, the whole pick planned within a second (a quarter of one for
  /// short products), check the winner against cuBLAS, record it in the user's database (origin
  /// "first-use") and use it from then on. Never inside a CUDA graph capture (the model's pick is
  /// used there). Also set by the environment variable TUNED_TUNING=first-use.
  TUNED_TUNING_FIRST_USE = 1
} tuned_tuning_t;

/// Sets the tuning policy for problems nobody tuned (see tuned_tuning_t).
tuned_status_t tuned_set_tuning(tuned_tuning_t policy);

/// Records, from now on, each problem this process calls (any op; one line per new (op, layout,
/// shape, alignment), e.g. "gemm NN 4096x1024x512 align 4"), appended to the file at path as it
/// is first met; lines the file holds already are not written again. `autotune --shapes-from
/// path` then tunes exactly those problems, and the calls that follow pick the results ("exact").
/// NULL stops recording. The environment variable TUNED_RECORD=path starts it at load. A path that
/// is no regular file that can be appended to is TUNED_STATUS_INVALID_ARGUMENT (recording is off).
tuned_status_t tuned_set_record(const char* path);

/// Describes the configuration tuned_gemm would use for this problem, where it came from
/// ("exact", "first-use", "twin <uuid>" (tuned on another GPU of this model), "shipped", "model",
/// "nearest MxNxK", "default") and its arithmetic ("origin: config (math: FFMA)"; the others:
/// "FFMA, matrix-vector", "FP64 tensor cores", "split TF32 on mma.sync", "split TF32 on wgmma",
/// "split TF32 on wgmma, TMA-fed"), into buf (NUL-terminated, truncated to size).
tuned_status_t tuned_gemm_describe(tuned_operation_t op_a, tuned_operation_t op_b, int m, int n,
                                   int k, const float* A, int lda, const float* B, int ldb,
                                   const float* C, int ldc, char* buf, unsigned long size);
/// The same for tuned_gemm_ex with a compute type (plain TF32 picks: "... (math: TF32 on wgmma,
/// TMA-fed (plain TF32))").
tuned_status_t tuned_gemm_describe_ex(tuned_operation_t op_a, tuned_operation_t op_b, int m, int n,
                                      int k, const float* A, int lda, const float* B, int ldb,
                                      const float* C, int ldc, tuned_compute_t compute, char* buf,
                                      unsigned long size);

/// The configuration tuned_gemm_strided_batched_ex would use for this batch (see
/// tuned_gemm_describe).
tuned_status_t tuned_gemm_strided_batched_describe(
    tuned_operation_t op_a, tuned_operation_t op_b, int m, int n, int k, const float* A, int lda,
    long long stride_a, const float* B, int ldb, long long stride_b, const float* C, int ldc,
    long long stride_c, int batch_count, tuned_compute_t compute, char* buf, unsigned long size);

// ----- What the tuning database holds -------------------------------------------------------
// For programs that show what is tuned (Python's tuned.results, a report): the bests, read as
// `tunedb best` reads them. Apart from the calls above: nothing here computes or needs a GPU.

/// The best configurations of the tuning database at path (NULL: the one calls use now, set by
/// tuned_set_database, else TUNED_DB, else the default), as one JSON document (UTF-8,
/// NUL-terminated) that the library allocates into *json: release it with tuned_free. op (NULL or
/// "": every op) keeps one op's rows; device (NULL or "": every GPU) those of a GPU named by its
/// uuid, by the only recorded uuid it begins (like `tunedb --device`), or by its model's name (all
/// of that model's GPUs); any other text is taken as a whole uuid (a GPU the devices table does
/// not list), so a device named by nothing lists no row. The document is
///   {"database": path, "schema_version": N (null for a missing file), "skipped": N,
///    "bests": [{"device_uuid", "device_name" (null where the GPU is not recorded), "op",
///               "variant" (a gemm layout), "shape": [sizes], "alignment", "config" (canonical
///               text), "params" ({name: integer}, null where config is no NAME=INTEGER list),
///               "kernel_name", "ms", "rate", "rate_unit" (null where unknown), "baseline_ms"
///               and "ratio" (null where no baseline was measured), "session_id" (null: none),
///               "updated_at" (ISO 8601 UTC), "origin" ("autotune" or "first-use"),
///               "template_hash" ("" in rows older than schema 4), "source" ("": measured in
///               this database, else the file it was merged from)}, ...]}
/// in tunedb's order (device, op, variant, shape, alignment); skipped counts the rows this build
/// cannot read (left out, with a warning in the log). A reader: not a byte of the file changes and
/// no file is made beside it (no -wal, no -shm); a missing file lists nothing; another process's
/// lock is waited for up to 10 seconds. Errors (*json is then NULL): TUNED_STATUS_DATABASE_ERROR
/// naming the path for a file that is no tuned database (another application's, damaged, empty, a
/// folder) or stays locked; TUNED_STATUS_INVALID_ARGUMENT for a NULL json, an empty path, an op
/// this build does not know or a device prefix of several uuids.
tuned_status_t tuned_results_json(const char* path, const char* op, const char* device,
                                  char** json);

/// Releases text the library allocated (tuned_results_json's); NULL is ignored.
void tuned_free(void* pointer);

// ----- end of what the tuning database holds ------------------------------------------------

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TUNED_TUNED_H_
