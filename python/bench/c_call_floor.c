/* The C floor of python/bench/call_overhead.py, measured in the Python process itself: the same
 * tuned_gemm calls (the library instance Python loaded, through the address ctypes gives), timed
 * the same way (bursts of calls with the GPU drained before each, outside the timed region), from
 * a C loop. No dependency: the caller passes tuned_gemm and a synchronize function.
 *   cc -O2 -shared -fPIC c_call_floor.c -o libc_call_floor.so */
#include <time.h>

typedef int (*GemmFunction)(int op_a, int op_b, int m, int n, int k, const float* alpha,
                            const void* A, int lda, const void* B, int ldb, const float* beta,
                            void* C, int ldc, void* stream);
typedef void (*SyncFunction)(void);

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* times[i] = host microseconds per call of burst i: `calls` calls of the column-major NN product
 * n x n x n of a, b into c (leading dimensions n) on stream. Returns the first failing status. */
int c_call_floor(GemmFunction gemm, SyncFunction sync, int bursts, int calls, int n,
                 const void* a, const void* b, void* c, void* stream, double* times) {
  const float one = 1.0f, zero = 0.0f;
  for (int burst = 0; burst < bursts; ++burst) {
    int status = 0;
    sync();
    const double start = now_us();
    for (int i = 0; i < calls; ++i) {
      status |= gemm(0, 0, n, n, n, &one, a, n, b, n, &zero, c, n, stream);
    }
    times[burst] = (now_us() - start) / calls;
    if (status) return status;
  }
  sync();
  return 0;
}
