/* tuned._native: the fast path of tuned.gemm(a, b, c) for torch CUDA float32 matrices.
 *
 * It reads the tensors (data_ptr(), stride(), shape, dtype, get_device()), maps them to
 * libtuned's column-major call exactly as tuned._Matrix._layout and tuned._gemm_arguments do,
 * takes torch's current raw stream and calls tuned_gemm through a pointer. Anything unusual
 * returns None: the Python path then handles the call and raises the proper error, so every
 * message lives in Python.
 *
 * It links neither libtuned nor torch: a FastPath object is given the address of tuned_gemm and
 * the torch objects it needs (the tensor type, the float32 dtype,
 * torch._C._cuda_getCurrentRawStream and torch._C._cuda_getDevice), so one abi3 build serves
 * every Python from 3.11 on. The reader is duck-typed beyond the type check, so a test can hand
 * it fake tensors, its own dtype sentinel and a recording function in place of tuned_gemm.
 */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#include <Python.h>

#include <limits.h>
#include <stdint.h>

/* tuned_gemm of include/tuned/tuned.h (its enums are ints; cudaStream_t is a pointer). */
typedef int (*GemmFunction)(int op_a, int op_b, int m, int n, int k, const float* alpha,
                            const void* A, int lda, const void* B, int ldb, const float* beta,
                            void* C, int ldc, void* stream);

/* Attribute and method names, interned once. */
static PyObject* name_data_ptr;
static PyObject* name_stride;
static PyObject* name_shape;
static PyObject* name_dtype;
static PyObject* name_get_device;

typedef struct {
  PyObject_HEAD
  GemmFunction gemm;
  PyObject* tensor_type;
  PyObject* float32;
  PyObject* current_stream; /* device index -> raw stream (int) */
  PyObject* current_device; /* () -> device index */
} FastPath;

/* A matrix as libtuned sees it (tuned._Matrix): column-major, or row-major (transposed). */
typedef struct {
  long long rows, cols, ld;
  int transposed;
  uintptr_t pointer;
  long device;
} Matrix;

/* Reads an int of a tuple; 0 (with an exception set) when it is not one. */
static int tuple_int(PyObject* tuple, Py_ssize_t i, long long* value) {
  PyObject* item = PyTuple_GetItem(tuple, i); /* borrowed */
  if (item == NULL) return 0;
  *value = PyLong_AsLongLong(item);
  return !(*value == -1 && PyErr_Occurred());
}

/* Reads a 2-D pair (shape or strides): 1 when it is a tuple of two ints. */
static int read_pair(PyObject* pair, long long* first, long long* second) {
  return pair != NULL && PyTuple_Check(pair) && PyTuple_Size(pair) == 2 &&
         tuple_int(pair, 0, first) && tuple_int(pair, 1, second);
}

static long long max3(long long a, long long b, long long c) {
  long long m = a > b ? a : b;
  return m > c ? m : c;
}

/* 1: obj is a CUDA float32 2-D tensor with a unit stride along one dimension, read into m;
 * 0: anything else (the Python path decides). Exceptions raised by the reads are cleared. */
static int read_matrix(FastPath* self, PyObject* obj, Matrix* m) {
  PyObject *value = NULL, *shape = NULL, *strides = NULL;
  long long s_row, s_col;
  int ok = 0;
  if (!PyObject_TypeCheck(obj, (PyTypeObject*)self->tensor_type)) return 0;

  /* Not is_cuda: get_device() below is -1 for a CPU tensor, and every read costs (torch's
   * methods parse their arguments: 18 reads of three tensors took 2.9 us on an H100 host). */
  value = PyObject_GetAttr(obj, name_dtype);
  if (value != self->float32) goto done;
  Py_DECREF(value);
  value = NULL;

  shape = PyObject_GetAttr(obj, name_shape); /* torch.Size is a tuple */
  if (!read_pair(shape, &m->rows, &m->cols)) goto done;
  strides = PyObject_CallMethodObjArgs(obj, name_stride, NULL);
  if (!read_pair(strides, &s_row, &s_col)) goto done;

  /* tuned._Matrix._layout: a unit stride along one dimension; a dimension of size 1 takes any
   * stride. Column-major first, as there. */
  {
    const long long rows = m->rows, cols = m->cols;
    if ((s_row == 1 || rows == 1) && (s_col >= (rows > 1 ? rows : 1) || cols == 1)) {
      m->transposed = 0;
      m->ld = max3(s_col, rows, 1);
    } else if ((s_col == 1 || cols == 1) && (s_row >= (cols > 1 ? cols : 1) || rows == 1)) {
      m->transposed = 1;
      m->ld = max3(s_row, cols, 1);
    } else {
      goto done;
    }
    if (rows < 0 || cols < 0 || rows > INT_MAX || cols > INT_MAX || m->ld > INT_MAX) goto done;
  }

  value = PyObject_CallMethodObjArgs(obj, name_data_ptr, NULL);
  if (value == NULL) goto done;
  m->pointer = (uintptr_t)PyLong_AsUnsignedLongLong(value);
  if (PyErr_Occurred()) goto done;
  Py_DECREF(value);
  value = PyObject_CallMethodObjArgs(obj, name_get_device, NULL);
  if (value == NULL) goto done;
  m->device = PyLong_AsLong(value);
  if (m->device < 0) goto done; /* not a CUDA tensor (or not an int) */
  ok = 1;

done:
  Py_XDECREF(value);
  Py_XDECREF(shape);
  Py_XDECREF(strides);
  if (!ok) PyErr_Clear();
  return ok;
}

/* The arguments of tuned_gemm computing c = a @ b (tuned._gemm_arguments). */
typedef struct {
  int op_a, op_b, m, n, k, lda, ldb, ldc;
  uintptr_t A, B, C;
} GemmArguments;

/* 1: a, b and c are fast-path matrices with a defined product; 0: not (the Python path). */
static int gemm_arguments(FastPath* self, PyObject* a, PyObject* b, PyObject* c,
                          GemmArguments* g, long* device) {
  Matrix ma, mb, mc;
  if (!read_matrix(self, a, &ma) || !read_matrix(self, b, &mb) || !read_matrix(self, c, &mc)) {
    return 0;
  }
  if (ma.cols != mb.rows || mc.rows != ma.rows || mc.cols != mb.cols) return 0;
  if (ma.device != mb.device || ma.device != mc.device) return 0;
  *device = ma.device;
  g->k = (int)ma.cols;
  g->ldc = (int)mc.ld;
  g->C = mc.pointer;
  if (!mc.transposed) { /* C column-major: C = op(A) op(B) */
    g->op_a = ma.transposed;
    g->op_b = mb.transposed;
    g->m = (int)ma.rows;
    g->n = (int)mb.cols;
    g->A = ma.pointer;
    g->lda = (int)ma.ld;
    g->B = mb.pointer;
    g->ldb = (int)mb.ld;
  } else { /* C row-major: C^T (n x m, column-major) = B^T A^T */
    g->op_a = !mb.transposed;
    g->op_b = !ma.transposed;
    g->m = (int)mb.cols;
    g->n = (int)ma.rows;
    g->A = mb.pointer;
    g->lda = (int)mb.ld;
    g->B = ma.pointer;
    g->ldb = (int)ma.ld;
  }
  return 1;
}

/* FastPath.gemm(a, b, c, alpha, beta): tuned_gemm's status (int), or None where the Python path
 * must handle the call. */
static PyObject* FastPath_gemm(PyObject* op, PyObject* const* args, Py_ssize_t nargs) {
  FastPath* self = (FastPath*)op;
  GemmArguments g;
  long device, current;
  float alpha, beta;
  void* stream;
  int status;
  PyObject* value;
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "gemm(a, b, c, alpha, beta) takes 5 arguments");
    return NULL;
  }
  if (!gemm_arguments(self, args[0], args[1], args[2], &g, &device)) Py_RETURN_NONE;
  alpha = (float)PyFloat_AsDouble(args[3]);
  if (alpha == -1.0f && PyErr_Occurred()) goto python_path;
  beta = (float)PyFloat_AsDouble(args[4]);
  if (beta == -1.0f && PyErr_Occurred()) goto python_path;

  /* libtuned runs on the current device: a tensor elsewhere takes the Python path, which switches
   * devices for the call. */
  value = PyObject_CallNoArgs(self->current_device);
  if (value == NULL) goto python_path;
  current = PyLong_AsLong(value);
  Py_DECREF(value);
  if (PyErr_Occurred() || current != device) goto python_path;
  {
    PyObject* index = PyLong_FromLong(device);
    if (index == NULL) return NULL;
    value = PyObject_CallFunctionObjArgs(self->current_stream, index, NULL);
    Py_DECREF(index);
  }
  if (value == NULL) goto python_path;
  stream = PyLong_AsVoidPtr(value);
  Py_DECREF(value);
  if (PyErr_Occurred()) goto python_path;

  /* ctypes releases the GIL around a foreign call too: a first-use tuning may take a while. */
  Py_BEGIN_ALLOW_THREADS
  status = self->gemm(g.op_a, g.op_b, g.m, g.n, g.k, &alpha, (const void*)g.A, g.lda,
                      (const void*)g.B, g.ldb, &beta, (void*)g.C, g.ldc, stream);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(status);

python_path:
  PyErr_Clear();
  Py_RETURN_NONE;
}

/* FastPath.gemm_arguments(a, b, c): (op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc) as
 * tuned._gemm_arguments gives them, or None; for tests of the mapping. */
static PyObject* FastPath_gemm_arguments(PyObject* op, PyObject* const* args, Py_ssize_t nargs) {
  GemmArguments g;
  long device;
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "gemm_arguments(a, b, c) takes 3 arguments");
    return NULL;
  }
  if (!gemm_arguments((FastPath*)op, args[0], args[1], args[2], &g, &device)) Py_RETURN_NONE;
  return Py_BuildValue("(iiiiiKiKiKi)", g.op_a, g.op_b, g.m, g.n, g.k,
                       (unsigned long long)g.A, g.lda, (unsigned long long)g.B, g.ldb,
                       (unsigned long long)g.C, g.ldc);
}

static PyObject* FastPath_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *address, *tensor_type, *float32, *current_stream, *current_device;
  void* gemm;
  FastPath* self;
  allocfunc alloc;
  static char* keywords[] = {"gemm_address", "tensor_type", "float32", "current_stream",
                             "current_device", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO:FastPath", keywords, &address,
                                   &tensor_type, &float32, &current_stream, &current_device)) {
    return NULL;
  }
  gemm = PyLong_AsVoidPtr(address);
  if (gemm == NULL) {
    if (!PyErr_Occurred()) {
      PyErr_SetString(PyExc_ValueError, "gemm_address must be the address of tuned_gemm, got 0");
    }
    return NULL;
  }
  if (!PyType_Check(tensor_type)) {
    PyErr_SetString(PyExc_TypeError, "tensor_type must be a type");
    return NULL;
  }
  if (!PyCallable_Check(current_stream) || !PyCallable_Check(current_device)) {
    PyErr_SetString(PyExc_TypeError, "current_stream and current_device must be callable");
    return NULL;
  }
  alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
  self = (FastPath*)alloc(type, 0);
  if (self == NULL) return NULL;
  self->gemm = (GemmFunction)gemm;
  Py_INCREF(tensor_type);
  self->tensor_type = tensor_type;
  Py_INCREF(float32);
  self->float32 = float32;
  Py_INCREF(current_stream);
  self->current_stream = current_stream;
  Py_INCREF(current_device);
  self->current_device = current_device;
  return (PyObject*)self;
}

static int FastPath_traverse(PyObject* op, visitproc visit, void* arg) {
  FastPath* self = (FastPath*)op;
  Py_VISIT(Py_TYPE(op)); /* a heap type: its instances own a reference to it */
  Py_VISIT(self->tensor_type);
  Py_VISIT(self->float32);
  Py_VISIT(self->current_stream);
  Py_VISIT(self->current_device);
  return 0;
}

static int FastPath_clear(PyObject* op) {
  FastPath* self = (FastPath*)op;
  Py_CLEAR(self->tensor_type);
  Py_CLEAR(self->float32);
  Py_CLEAR(self->current_stream);
  Py_CLEAR(self->current_device);
  return 0;
}

static void FastPath_dealloc(PyObject* op) {
  PyTypeObject* type = Py_TYPE(op);
  freefunc free_object = (freefunc)PyType_GetSlot(type, Py_tp_free);
  PyObject_GC_UnTrack(op);
  FastPath_clear(op);
  free_object(op);
  Py_DECREF(type);
}

static PyMethodDef FastPath_methods[] = {
    {"gemm", (PyCFunction)(void (*)(void))FastPath_gemm, METH_FASTCALL,
     "gemm(a, b, c, alpha, beta): tuned_gemm's status computing c = alpha a @ b + beta c, or "
     "None where the Python path must handle the call."},
    {"gemm_arguments", (PyCFunction)(void (*)(void))FastPath_gemm_arguments, METH_FASTCALL,
     "gemm_arguments(a, b, c): (op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc) of the column-major "
     "call, or None."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot FastPath_slots[] = {
    {Py_tp_doc,
     "FastPath(gemm_address, tensor_type, float32, current_stream, current_device): "
     "tuned.gemm's fast path for CUDA float32 tensors of tensor_type."},
    {Py_tp_new, FastPath_new},
    {Py_tp_dealloc, FastPath_dealloc},
    {Py_tp_traverse, FastPath_traverse},
    {Py_tp_clear, FastPath_clear},
    {Py_tp_methods, FastPath_methods},
    {0, NULL},
};

static PyType_Spec FastPath_spec = {
    .name = "tuned._native.FastPath",
    .basicsize = sizeof(FastPath),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = FastPath_slots,
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_native",
    .m_doc = "The fast path of tuned.gemm for torch CUDA tensors (see FastPath).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__native(void) {
  PyObject *module, *type;
  if (!(name_data_ptr = PyUnicode_InternFromString("data_ptr")) ||
      !(name_stride = PyUnicode_InternFromString("stride")) ||
      !(name_shape = PyUnicode_InternFromString("shape")) ||
      !(name_dtype = PyUnicode_InternFromString("dtype")) ||
      !(name_get_device = PyUnicode_InternFromString("get_device"))) {
    return NULL;
  }
  module = PyModule_Create(&native_module);
  if (module == NULL) return NULL;
  type = PyType_FromSpec(&FastPath_spec);
  if (type == NULL || PyModule_AddObject(module, "FastPath", type) < 0) {
    Py_XDECREF(type);
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
