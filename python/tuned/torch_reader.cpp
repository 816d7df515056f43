// The torch reader of tuned._native (torch_reader.h): tensor metadata, torch's current device
// and stream, and new results, through torch's C++ API. Compiled against the user's torch, at
// install where torch is importable or later with tuned.build_torch_reader(); without it
// tuned.gemm reads tensors through torch's Python API, about 2 us slower a call.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/extension.h>

#include "torch_reader.h"

namespace {

int read(PyObject* obj, long long* rows, long long* cols, long long* s_row, long long* s_col,
         uintptr_t* pointer, long* device) {
  if (!THPVariable_Check(obj)) return 0;
  try {
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (t.dim() != 2 || t.scalar_type() != at::kFloat || !t.is_cuda() ||
        t.layout() != at::kStrided || !t.has_storage()) {
      return 0;
    }
    *rows = t.size(0);
    *cols = t.size(1);
    *s_row = t.stride(0);
    *s_col = t.stride(1);
    *pointer = reinterpret_cast<uintptr_t>(t.data_ptr());
    *device = t.get_device();
    return 1;
  } catch (...) {  // a tensor torch itself cannot describe: the Python path decides
    return 0;
  }
}

long current_device() {
  try {
    return c10::cuda::current_device();
  } catch (...) {
    return -1;
  }
}

void* current_stream(long device) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
}

PyObject* empty(long long rows, long long cols, long device) {
  try {
    return THPVariable_Wrap(at::empty(
        {rows, cols}, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, device)));
  } catch (...) {
    return nullptr;
  }
}

const TunedTorchReader kReader = {read, current_device, current_stream, empty};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "tuned's torch reader: a capsule of C functions for tuned._native";
  m.attr("reader") = pybind11::capsule(&kReader, TUNED_TORCH_READER);
}
