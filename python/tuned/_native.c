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

#include "torch_reader.h"

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
  PyObject* empty;          /* torch.empty, or NULL: a new result is made in Python */
  /* torch's C++ API where the torch reader is built (torch_reader.h), else NULL: the Python API
   * above is used. */
  const TunedTorchReader* reader;
  PyObject* reader_capsule; /* keeps the reader's module alive */
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

/* m's storage from its sizes and strides (elements), as tuned._Matrix._layout: a unit stride
 * along one dimension; a dimension of size 1 takes any stride; column-major first. 0 where
 * neither order applies or a size is out of libtuned's range. */
static int layout(long long s_row, long long s_col, Matrix* m) {
  const long long rows = m->rows, cols = m->cols;
  if ((s_row == 1 || rows == 1) && (s_col >= (rows > 1 ? rows : 1) || cols == 1)) {
    m->transposed = 0;
    m->ld = max3(s_col, rows, 1);
  } else if ((s_col == 1 || cols == 1) && (s_row >= (cols > 1 ? cols : 1) || rows == 1)) {
    m->transposed = 1;
    m->ld = max3(s_row, cols, 1);
  } else {
    return 0;
  }
  return rows >= 0 && cols >= 0 && rows <= INT_MAX && cols <= INT_MAX && m->ld <= INT_MAX;
}

/* 1: obj is a CUDA float32 2-D tensor with a unit stride along one dimension, read into m;
 * 0: anything else (the Python path decides). Exceptions raised by the reads are cleared. */
static int read_matrix(FastPath* self, PyObject* obj, Matrix* m) {
  PyObject *value = NULL, *shape = NULL, *strides = NULL;
  long long s_row, s_col;
  int ok = 0;
  if (self->reader != NULL) {
    return self->reader->read(obj, &m->rows, &m->cols, &s_row, &s_col, &m->pointer,
                              &m->device) &&
           layout(s_row, s_col, m);
  }
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
  if (!read_pair(strides, &s_row, &s_col) || !layout(s_row, s_col, m)) goto done;

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

/* The arguments of c = a @ b (tuned._gemm_arguments); 0 where the shapes do not match or the
 * matrices are on different devices (the Python path words the error). */
static int map_gemm(const Matrix* ma, const Matrix* mb, const Matrix* mc, GemmArguments* g) {
  if (ma->cols != mb->rows || mc->rows != ma->rows || mc->cols != mb->cols) return 0;
  if (ma->device != mb->device || ma->device != mc->device) return 0;
  g->k = (int)ma->cols;
  g->ldc = (int)mc->ld;
  g->C = mc->pointer;
  if (!mc->transposed) { /* C column-major: C = op(A) op(B) */
    g->op_a = ma->transposed;
    g->op_b = mb->transposed;
    g->m = (int)ma->rows;
    g->n = (int)mb->cols;
    g->A = ma->pointer;
    g->lda = (int)ma->ld;
    g->B = mb->pointer;
    g->ldb = (int)mb->ld;
  } else { /* C row-major: C^T (n x m, column-major) = B^T A^T */
    g->op_a = !mb->transposed;
    g->op_b = !ma->transposed;
    g->m = (int)mb->cols;
    g->n = (int)ma->rows;
    g->A = mb->pointer;
    g->lda = (int)mb->ld;
    g->B = ma->pointer;
    g->ldb = (int)ma->ld;
  }
  return 1;
}

/* 1: a, b and c are fast-path matrices with a defined product; 0: not (the Python path). */
static int gemm_arguments(FastPath* self, PyObject* a, PyObject* b, PyObject* c,
                          GemmArguments* g, long* device) {
  Matrix ma, mb, mc;
  if (!read_matrix(self, a, &ma) || !read_matrix(self, b, &mb) || !read_matrix(self, c, &mc)) {
    return 0;
  }
  *device = ma.device;
  return map_gemm(&ma, &mb, &mc, g);
}

/* c for a @ b made here (torch.empty, row-major, on a's device) where a and b are fast-path
 * matrices with a defined product and neither size is 0; NULL (no exception set) otherwise. */
static PyObject* new_result(FastPath* self, PyObject* a, PyObject* b, GemmArguments* g,
                            long* device) {
  Matrix ma, mb, mc;
  PyObject *shape = NULL, *kwargs = NULL, *args = NULL, *c = NULL, *pointer = NULL;
  if ((self->empty == NULL && self->reader == NULL) || !read_matrix(self, a, &ma) ||
      !read_matrix(self, b, &mb) || ma.cols != mb.rows || ma.device != mb.device ||
      ma.rows == 0 || mb.cols == 0) {
    return NULL;
  }
  if (self->reader != NULL) {
    c = self->reader->empty(ma.rows, mb.cols, ma.device);
    if (c == NULL || !read_matrix(self, c, &mc) || !map_gemm(&ma, &mb, &mc, g)) goto fail;
    *device = ma.device;
    return c;
  }
  shape = Py_BuildValue("(LL)", ma.rows, mb.cols);
  kwargs = Py_BuildValue("{sOsl}", "dtype", self->float32, "device", ma.device);
  args = shape == NULL ? NULL : PyTuple_Pack(1, shape);
  if (args != NULL && kwargs != NULL) c = PyObject_Call(self->empty, args, kwargs);
  if (c != NULL) pointer = PyObject_CallMethodObjArgs(c, name_data_ptr, NULL);
  Py_XDECREF(shape);
  Py_XDECREF(kwargs);
  Py_XDECREF(args);
  if (pointer == NULL) goto fail;
  /* Row-major and contiguous, as made: no need to read it back. */
  mc.rows = ma.rows;
  mc.cols = mb.cols;
  mc.ld = mb.cols;
  mc.transposed = 1;
  mc.device = ma.device;
  mc.pointer = (uintptr_t)PyLong_AsUnsignedLongLong(pointer);
  Py_DECREF(pointer);
  if (PyErr_Occurred()) goto fail;
  *device = ma.device;
  if (!map_gemm(&ma, &mb, &mc, g)) goto fail;
  return c;

fail:
  Py_XDECREF(c);
  PyErr_Clear();
  return NULL;
}

/* tuned_gemm's status for the mapped call on the current stream of the tensors' device, or -1
 * (no exception set) where the Python path must handle the call (another device is current, an
 * alpha or beta that is no number). */
static int call_gemm(FastPath* self, const GemmArguments* gp, long device, PyObject* alpha_obj,
                     PyObject* beta_obj) {
  const GemmArguments g = *gp;
  long current;
  float alpha, beta;
  void* stream;
  int status;
  PyObject* value;
  alpha = alpha_obj == NULL ? 1.0f : (float)PyFloat_AsDouble(alpha_obj);
  if (alpha == -1.0f && PyErr_Occurred()) goto python_path;
  beta = beta_obj == NULL ? 0.0f : (float)PyFloat_AsDouble(beta_obj);
  if (beta == -1.0f && PyErr_Occurred()) goto python_path;

  /* libtuned runs on the current device: a tensor elsewhere takes the Python path, which switches
   * devices for the call. */
  if (self->reader != NULL) {
    if (self->reader->current_device() != device) return -1;
    stream = self->reader->current_stream(device);
    goto call;
  }
  value = PyObject_CallNoArgs(self->current_device);
  if (value == NULL) goto python_path;
  current = PyLong_AsLong(value);
  Py_DECREF(value);
  if (PyErr_Occurred() || current != device) goto python_path;
  {
    PyObject* index = PyLong_FromLong(device);
    if (index == NULL) goto python_path;
    value = PyObject_CallFunctionObjArgs(self->current_stream, index, NULL);
    Py_DECREF(index);
  }
  if (value == NULL) goto python_path;
  stream = PyLong_AsVoidPtr(value);
  Py_DECREF(value);
  if (PyErr_Occurred()) goto python_path;

call:
  /* ctypes releases the GIL around a foreign call too: a first-use tuning may take a while. */
  Py_BEGIN_ALLOW_THREADS
  status = self->gemm(g.op_a, g.op_b, g.m, g.n, g.k, &alpha, (const void*)g.A, g.lda,
                      (const void*)g.B, g.ldb, &beta, (void*)g.C, g.ldc, stream);
  Py_END_ALLOW_THREADS
  return status;

python_path:
  PyErr_Clear();
  return -1;
}

static int fast_gemm(FastPath* self, PyObject* a, PyObject* b, PyObject* c, PyObject* alpha_obj,
                     PyObject* beta_obj) {
  GemmArguments g;
  long device;
  if (!gemm_arguments(self, a, b, c, &g, &device)) return -1;
  return call_gemm(self, &g, device, alpha_obj, beta_obj);
}

/* FastPath.gemm(a, b, c, alpha, beta): tuned_gemm's status (int), or None where the Python path
 * must handle the call. */
static PyObject* FastPath_gemm(PyObject* op, PyObject* const* args, Py_ssize_t nargs) {
  int status;
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "gemm(a, b, c, alpha, beta) takes 5 arguments");
    return NULL;
  }
  status = fast_gemm((FastPath*)op, args[0], args[1], args[2], args[3], args[4]);
  if (status < 0) Py_RETURN_NONE;
  return PyLong_FromLong(status);
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
  PyObject *address, *tensor_type, *float32, *current_stream, *current_device, *empty = Py_None,
           *reader = Py_None;
  const TunedTorchReader* table = NULL;
  void* gemm;
  FastPath* self;
  allocfunc alloc;
  static char* keywords[] = {"gemm_address", "tensor_type", "float32", "current_stream",
                             "current_device", "empty", "reader", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO|OO:FastPath", keywords, &address,
                                   &tensor_type, &float32, &current_stream, &current_device,
                                   &empty, &reader)) {
    return NULL;
  }
  if (reader != Py_None) {
    table = (const TunedTorchReader*)PyCapsule_GetPointer(reader, TUNED_TORCH_READER);
    if (table == NULL) return NULL; /* not the torch reader's capsule: its error */
  }
  if (empty != Py_None && !PyCallable_Check(empty)) {
    PyErr_SetString(PyExc_TypeError, "empty must be callable (torch.empty) or None");
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
  if (empty != Py_None) {
    Py_INCREF(empty);
    self->empty = empty;
  } else {
    self->empty = NULL;
  }
  self->reader = table;
  if (reader != Py_None) {
    Py_INCREF(reader);
    self->reader_capsule = reader;
  } else {
    self->reader_capsule = NULL;
  }
  return (PyObject*)self;
}

static int FastPath_traverse(PyObject* op, visitproc visit, void* arg) {
  FastPath* self = (FastPath*)op;
  Py_VISIT(Py_TYPE(op)); /* a heap type: its instances own a reference to it */
  Py_VISIT(self->tensor_type);
  Py_VISIT(self->float32);
  Py_VISIT(self->current_stream);
  Py_VISIT(self->current_device);
  Py_VISIT(self->empty);
  Py_VISIT(self->reader_capsule);
  return 0;
}

static int FastPath_clear(PyObject* op) {
  FastPath* self = (FastPath*)op;
  Py_CLEAR(self->tensor_type);
  Py_CLEAR(self->float32);
  Py_CLEAR(self->current_stream);
  Py_CLEAR(self->current_device);
  Py_CLEAR(self->empty);
  self->reader = NULL;
  Py_CLEAR(self->reader_capsule);
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
     "FastPath(gemm_address, tensor_type, float32, current_stream, current_device, empty=None, "
     "reader=None): tuned.gemm's fast path for CUDA float32 tensors of tensor_type (empty: "
     "torch.empty, to make a new result; reader: the torch reader's capsule, which replaces "
     "the Python reads)."},
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

/* tuned.gemm itself where the extension is built: a call with c given, on a bound FastPath,
 * runs from here without a Python frame in between (the host time of a tiny product is what
 * this saves); every other call, and every call the fast path declines, goes to the Python
 * function it was made with, and a failed status to the Python function that raises
 * tuned.Error. */
typedef struct {
  PyObject_HEAD
  PyObject* fast;         /* a FastPath, or NULL: the Python function does everything */
  PyObject* python;       /* gemm(a, b, c=None, *, alpha=1.0, beta=0.0) in Python */
  PyObject* raise_status; /* raise_status(status) raises tuned.Error */
} Gemm;

static PyTypeObject* fast_path_type;

/* alpha and beta of the keywords (borrowed; NULL where absent); 0 where kwargs holds others. */
static int gemm_keywords(PyObject* kwargs, PyObject** alpha, PyObject** beta) {
  Py_ssize_t found;
  *alpha = *beta = NULL;
  if (kwargs == NULL) return 1;
  *alpha = PyDict_GetItemString(kwargs, "alpha");
  *beta = PyDict_GetItemString(kwargs, "beta");
  found = (*alpha != NULL) + (*beta != NULL);
  return PyDict_Size(kwargs) == found;
}

/* NULL, with tuned.Error raised for a failed status. */
static PyObject* raise_status(Gemm* self, int status) {
  PyObject* result = PyObject_CallFunction(self->raise_status, "i", status);
  if (result != NULL) {
    Py_DECREF(result);
    PyErr_Format(PyExc_RuntimeError, "tuned_gemm failed with status %d", status);
  }
  return NULL;
}

static int is_zero(PyObject* number) {
  const double value = PyFloat_AsDouble(number);
  if (value == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  return value == 0.0;
}

static PyObject* Gemm_call(PyObject* op, PyObject* args, PyObject* kwargs) {
  Gemm* self = (Gemm*)op;
  const Py_ssize_t nargs = PyTuple_Size(args);
  PyObject *alpha, *beta, *c = Py_None;
  if (self->fast != NULL && (nargs == 2 || nargs == 3) && gemm_keywords(kwargs, &alpha, &beta)) {
    FastPath* fast = (FastPath*)self->fast;
    PyObject *a = PyTuple_GetItem(args, 0), *b = PyTuple_GetItem(args, 1);
    int status;
    if (nargs == 3) c = PyTuple_GetItem(args, 2);
    if (c != Py_None) {
      status = fast_gemm(fast, a, b, c, alpha, beta);
      if (status == 0) {
        Py_INCREF(c);
        return c;
      }
      if (status > 0) return raise_status(self, status);
    } else if (beta == NULL || is_zero(beta)) { /* a new c (beta != 0: Python's error) */
      GemmArguments g;
      long device;
      PyObject* made = new_result(fast, a, b, &g, &device);
      if (made != NULL) {
        status = call_gemm(fast, &g, device, alpha, NULL);
        if (status == 0) return made;
        Py_DECREF(made);
        if (status > 0) return raise_status(self, status);
      }
    }
  }
  return PyObject_Call(self->python, args, kwargs);
}

/* Gemm.set_fast(fast_path or None). */
static PyObject* Gemm_set_fast(PyObject* op, PyObject* fast) {
  Gemm* self = (Gemm*)op;
  if (fast != Py_None && !PyObject_TypeCheck(fast, fast_path_type)) {
    PyErr_SetString(PyExc_TypeError, "set_fast takes a FastPath or None");
    return NULL;
  }
  Py_CLEAR(self->fast);
  if (fast != Py_None) {
    Py_INCREF(fast);
    self->fast = fast;
  }
  Py_RETURN_NONE;
}

static PyObject* Gemm_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *python, *raise_status;
  Gemm* self;
  static char* keywords[] = {"python", "raise_status", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:Gemm", keywords, &python, &raise_status)) {
    return NULL;
  }
  if (!PyCallable_Check(python) || !PyCallable_Check(raise_status)) {
    PyErr_SetString(PyExc_TypeError, "python and raise_status must be callable");
    return NULL;
  }
  self = (Gemm*)((allocfunc)PyType_GetSlot(type, Py_tp_alloc))(type, 0);
  if (self == NULL) return NULL;
  Py_INCREF(python);
  self->python = python;
  Py_INCREF(raise_status);
  self->raise_status = raise_status;
  self->fast = NULL;
  return (PyObject*)self;
}

static int Gemm_traverse(PyObject* op, visitproc visit, void* arg) {
  Gemm* self = (Gemm*)op;
  Py_VISIT(Py_TYPE(op));
  Py_VISIT(self->fast);
  Py_VISIT(self->python);
  Py_VISIT(self->raise_status);
  return 0;
}

static int Gemm_clear(PyObject* op) {
  Gemm* self = (Gemm*)op;
  Py_CLEAR(self->fast);
  Py_CLEAR(self->python);
  Py_CLEAR(self->raise_status);
  return 0;
}

static void Gemm_dealloc(PyObject* op) {
  PyTypeObject* type = Py_TYPE(op);
  PyObject_GC_UnTrack(op);
  Gemm_clear(op);
  ((freefunc)PyType_GetSlot(type, Py_tp_free))(op);
  Py_DECREF(type);
}

static PyMethodDef Gemm_methods[] = {
    {"set_fast", Gemm_set_fast, METH_O,
     "set_fast(fast_path): calls with c given run through this FastPath (None: none do)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Gemm_slots[] = {
    {Py_tp_doc,
     "gemm(a, b, c=None, *, alpha=1.0, beta=0.0)\n"
     "c = alpha * a @ b + beta * c for 2-D float32 CUDA arrays; returns c. Without c, a new "
     "row-major array of a's library (torch or CuPy) is made (beta must then be 0); arrays of "
     "other producers (DLPack) need c. On a's producer's stream (DLPack: the legacy default "
     "stream)."},
    {Py_tp_new, Gemm_new},
    {Py_tp_call, Gemm_call},
    {Py_tp_dealloc, Gemm_dealloc},
    {Py_tp_traverse, Gemm_traverse},
    {Py_tp_clear, Gemm_clear},
    {Py_tp_methods, Gemm_methods},
    {0, NULL},
};

static PyType_Spec Gemm_spec = {
    .name = "tuned._native.Gemm",
    .basicsize = sizeof(Gemm),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = Gemm_slots,
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
  fast_path_type = (PyTypeObject*)type; /* the module holds it */
  type = PyType_FromSpec(&Gemm_spec);
  if (type == NULL || PyModule_AddObject(module, "Gemm", type) < 0) {
    Py_XDECREF(type);
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
