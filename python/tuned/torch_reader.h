/* What tuned._native needs of torch, read through torch's own C++ API (a few nanoseconds a
 * tensor) instead of its Python API (about half a microsecond a tensor): the torch reader
 * (torch_reader.cpp, compiled against the user's torch) fills this table and hands it over in a
 * capsule named TUNED_TORCH_READER. Plain C: _native.c is built without torch. */
#ifndef TUNED_TORCH_READER_H_
#define TUNED_TORCH_READER_H_

#include <Python.h>
#include <stdint.h>

#define TUNED_TORCH_READER "tuned.torch_reader"

typedef struct {
  /* 1: obj is a strided 2-D float32 CUDA tensor, its sizes, strides (elements), data pointer and
   * device index written; 0: anything else (no exception set). */
  int (*read)(PyObject* obj, long long* rows, long long* cols, long long* s_row,
              long long* s_col, uintptr_t* pointer, long* device);
  /* torch's current device index (-1 on failure). */
  long (*current_device)(void);
  /* torch's current stream of the device (cudaStream_t). */
  void* (*current_stream)(long device);
  /* A new row-major rows x cols float32 tensor on the device (a new reference), or NULL with no
   * exception set. */
  PyObject* (*empty)(long long rows, long long cols, long device);
} TunedTorchReader;

#endif /* TUNED_TORCH_READER_H_ */
