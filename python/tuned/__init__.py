"""tuned: autotuned CUDA kernels for arrays from any producer (torch, CuPy, JAX, NumPy, ...).

    import tuned
    c = tuned.gemm(a, b)              # a @ b, FP32, on the producer's current stream
    t = tuned.transpose(a)            # a.T as a new array, stored like a
    h = tuned.entropy(x, 3, 256)      # local entropy of a CUDA or host (NumPy) image

Arrays are torch tensors (read directly), or have __cuda_array_interface__ (CuPy, Numba), or
__dlpack__ (JAX, ...); tuned.entropy also takes host arrays (__array_interface__: NumPy).
Row-major, column-major and transposed views are used without copies (a row-major matrix is the
column-major matrix of its transpose). For torch CUDA tensors, tuned.gemm goes through a small C
extension (tuned._native) when it was built; everything else is Python over libtuned.so.
"""
import ctypes
import operator
import os
import re
import warnings

from . import _dlpack
from . import _library
from . import _products
from ._library import lib

try:
    from . import _native
except ImportError:  # not built (no compiler when installed): the Python path does everything
    _native = None

__all__ = ["Error", "version", "gemm", "describe", "transpose", "describe_transpose", "entropy",
           "describe_entropy", "set_database", "set_tuning", "set_record", "recording", "autotune",
           "results", "build_torch_reader"]

version = lib.tuned_version().decode()

# The C entry the Python path calls, and whose address the native path is given (a test may put a
# recording function with tuned_gemm's signature here, then call _use_native).
_tuned_gemm = lib.tuned_gemm


class Error(RuntimeError):
    """A failed libtuned call: status is its tuned_status_t, the message the library's."""

    def __init__(self, status, message):
        self.status = status
        name = lib.tuned_status_string(status).decode()
        # The status's name after the message, unless the message begins with it.
        super().__init__(message if message.startswith(name) else
                         f"{message} ({name})" if message else name)


def _raise(status):
    raise Error(status, lib.tuned_last_error().decode(errors="replace"))


def _check(status):
    if status != _library.STATUS_SUCCESS:
        _raise(status)


_database = None  # the path set_database gave the library (None: its default)


def _database_path():
    return _database


def set_database(path=None):
    """Uses the tuning database at path (None: $TUNED_DB, else the default). A database that
    cannot be used now is set with a warning (RuntimeWarning): calls use the shipped choices."""
    global _database
    status = lib.tuned_set_database(None if path is None else os.fsencode(path))
    if status in (_library.STATUS_SUCCESS, _library.STATUS_DATABASE_NOT_USED):
        _database = None if path is None else os.fspath(path)
    if status == _library.STATUS_DATABASE_NOT_USED:
        warnings.warn(lib.tuned_last_error().decode(errors="replace"), RuntimeWarning, stacklevel=2)
        return
    _check(status)


def set_tuning(policy):
    """"off" (the default) or "first-use": quick tuning of shapes nobody tuned, recorded."""
    policies = {"off": 0, "first-use": 1}
    if policy not in policies:
        raise ValueError(f"tuning policy must be one of {sorted(policies)}, got {policy!r}")
    _check(lib.tuned_set_tuning(policies[policy]))


# ----- arrays -------------------------------------------------------------------------------------

_FLOAT32, _UINT8 = "float32", "uint8"
_ITEMSIZE = {_FLOAT32: 4, _UINT8: 1}
_TYPESTRS = {"<f4": _FLOAT32, "=f4": _FLOAT32, "f4": _FLOAT32,
             "|u1": _UINT8, "<u1": _UINT8, ">u1": _UINT8, "=u1": _UINT8, "u1": _UINT8}
_DLPACK_DTYPES = {(_dlpack.FLOAT, 32, 1): _FLOAT32, (_dlpack.UINT, 8, 1): _UINT8}
_HOST = -1  # _Matrix.device of an array in host memory
_INT_MAX = 2**31 - 1  # libtuned's sizes and leading dimensions are C ints


class _Matrix:
    """A 2-D array as libtuned sees it: pointer, shape, element type, where it is (device: a CUDA
    device index, _HOST, or None where the producer does not say) and how it is stored:
    column-major with leading dimension col_ld, row-major with row_ld (None where the strides do
    not allow it; a vector may be both). transposed and ld are the storage gemm uses: column-major
    where possible, else row-major (transposed=True)."""

    __slots__ = ("array", "name", "rows", "cols", "pointer", "stream", "device", "dtype",
                 "col_ld", "row_ld", "transposed", "ld", "capsule")

    def __init__(self, array, name, dtypes=(_FLOAT32,), host=False, writable=False):
        """Reads array (named name in messages), which must hold one of dtypes; host: host memory
        is accepted too; writable: an array its producer marks read-only is refused."""
        self.array, self.name, self.stream, self.capsule = array, name, None, None
        if _is_torch(array):
            self._read_torch(array, dtypes, host)
            return
        interface = getattr(array, "__cuda_array_interface__", None)
        if interface is not None:
            self.device = array.device.id if _is_cupy(array) else None
            self.stream = interface.get("stream")
            self._read_interface(interface, dtypes, writable)
            return
        interface = getattr(array, "__array_interface__", None) if host else None
        if interface is not None:
            self.device = _HOST
            self._read_interface(interface, dtypes, writable)
            return
        if hasattr(array, "__dlpack__") and hasattr(array, "__dlpack_device__"):
            self._read_dlpack(array, dtypes, host)
            return
        where = "a CUDA or host array (with __cuda_array_interface__, __dlpack__ or " \
                "__array_interface__)" if host else \
                "a CUDA array (with __cuda_array_interface__ or __dlpack__)"
        raise TypeError(f"{name} must be {where}, got {type(array).__name__}")

    def _read_torch(self, array, dtypes, host):
        # Read directly: faster than the interface, which torch refuses for a tensor that requires
        # grad (the operator's autograd hands those in).
        name, torch = self.name, _torch()
        if array.is_cuda:
            self.device = array.get_device()
        elif host and array.device.type == "cpu":
            self.device = _HOST
        else:
            where = "a CUDA or CPU tensor" if host else "a CUDA tensor"
            raise TypeError(f"{name} must be {where}, got one on {array.device}")
        dtype = _FLOAT32 if array.dtype is torch.float32 else \
            _UINT8 if array.dtype is torch.uint8 else None
        if dtype not in dtypes:
            raise TypeError(f"{name} must hold {_names(dtypes)}, got {array.dtype}")
        if array.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got {array.dim()}-D (shape "
                             f"{tuple(array.shape)})")
        self.dtype = dtype
        self.rows, self.cols = array.shape
        self.pointer = array.data_ptr()
        s_row, s_col = array.stride()
        self._layout(s_row, s_col, _ITEMSIZE[dtype])

    def _read_interface(self, interface, dtypes, writable):
        """__cuda_array_interface__ or __array_interface__ (the same fields)."""
        name = self.name
        shape = tuple(interface["shape"])
        if len(shape) != 2:
            raise ValueError(f"{name} must be 2-D, got {len(shape)}-D (shape {shape})")
        dtype = _TYPESTRS.get(interface["typestr"])
        if dtype not in dtypes:
            raise TypeError(f"{name} must hold {_names(dtypes)}, got typestr "
                            f"{interface['typestr']!r}")
        pointer, readonly = interface["data"]
        if writable and readonly:
            raise ValueError(f"{name} is read-only")
        self.dtype, self.pointer = dtype, pointer or 0
        self.rows, self.cols = shape
        size = _ITEMSIZE[dtype]
        strides = interface.get("strides")
        if strides is None:  # C-contiguous
            strides = (size * self.cols, size)
        if any(s % size for s in strides):
            raise ValueError(f"{name}'s strides {tuple(strides)} are not whole {dtype} elements")
        self._layout(strides[0] // size, strides[1] // size, size)

    def _read_dlpack(self, array, dtypes, host):
        name = self.name
        device_type, device_id = _dlpack.device(array)
        if device_type in (_dlpack.CUDA, _dlpack.CUDA_MANAGED):
            view = _dlpack.view(array, name, stream=_dlpack.LEGACY_STREAM)
            self.device, self.stream = device_id, 0  # the legacy default stream, as asked
        elif host and device_type in (_dlpack.CPU, _dlpack.CUDA_HOST):
            view = _dlpack.view(array, name)
            self.device = _HOST
        else:
            where = "a CUDA or host array" if host else "a CUDA array"
            raise TypeError(f"{name} must be {where}, got one on "
                            f"{_dlpack.device_name(device_type)} (DLPack)")
        self.capsule = view.capsule  # holds the memory while the call runs
        if len(view.shape) != 2:
            raise ValueError(f"{name} must be 2-D, got {len(view.shape)}-D (shape {view.shape})")
        dtype = _DLPACK_DTYPES.get(view.dtype)
        if dtype not in dtypes:
            code, bits, lanes = view.dtype
            raise TypeError(f"{name} must hold {_names(dtypes)}, got DLPack dtype code {code}, "
                            f"{bits} bits, {lanes} lanes")
        self.dtype, self.pointer = dtype, view.pointer
        self.rows, self.cols = view.shape
        self._layout(view.strides[0], view.strides[1], _ITEMSIZE[dtype])

    def _layout(self, s_row, s_col, itemsize):
        """Storage from strides in elements. A unit stride along one dimension; a dimension of
        size 1 takes any stride. tuned._native's read_matrix mirrors this: keep them equal."""
        rows, cols = self.rows, self.cols
        self.col_ld = max(s_col, rows, 1) \
            if (s_row == 1 or rows == 1) and (s_col >= max(1, rows) or cols == 1) else None
        self.row_ld = max(s_row, cols, 1) \
            if (s_col == 1 or cols == 1) and (s_row >= max(1, cols) or rows == 1) else None
        if self.col_ld is None and self.row_ld is None:
            raise _NoUnitStride(f"{self.name} needs a unit stride along one dimension (strides "
                             f"{(s_row * itemsize, s_col * itemsize)} bytes, shape "
                             f"{(rows, cols)}): pass a contiguous copy")
        self.transposed = self.col_ld is None
        self.ld = self.row_ld if self.transposed else self.col_ld
        if max(rows, cols, self.ld) > _INT_MAX:
            raise ValueError(f"{self.name} is too large for libtuned: shape {(rows, cols)} with "
                             f"leading dimension {self.ld}; sizes and leading dimensions must be "
                             f"below 2**31")


class _NoUnitStride(ValueError):
    """An array with no unit stride: torch and CuPy arrays are then copied (_strided_copy)."""


def _matrix_or_copy(array, name, **options):
    """(_Matrix, array) of array, or of a contiguous copy where array has no unit stride and its
    producer (torch, CuPy) can make one: a strided view is computed on, not refused."""
    try:
        return _Matrix(array, name, **options), array
    except _NoUnitStride:
        if _is_torch(array):
            array = array.contiguous()
        elif _is_cupy(array):
            import cupy
            array = cupy.ascontiguousarray(array)
        else:
            raise
    return _Matrix(array, name, **options), array


def _names(dtypes):
    return " or ".join(dtypes)


_torch_module = None


def _torch():
    global _torch_module
    if _torch_module is None:
        import torch
        _torch_module = torch
    return _torch_module


def _is_torch(array):
    return type(array).__module__.startswith("torch")


def _is_cupy(array):
    return type(array).__module__.startswith("cupy")


def _stream_of(array, matrix):
    """The producer's current stream: torch's current stream for a torch tensor, else the
    interface's stream entry (None: the legacy default stream; 0 for DLPack, as asked)."""
    if _is_torch(array):
        torch = _torch()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return raw(array.get_device())
        return torch.cuda.current_stream(array.device).cuda_stream
    return matrix.stream or 0


def _device_name(device):
    return "host memory" if device == _HOST else f"cuda:{device}"


def _common_device(*matrices):
    """The one device of the operands (None where no producer says), else ValueError."""
    known = [m for m in matrices if m.device is not None]
    if any(m.device != known[0].device for m in known):
        places = ", ".join(f"{m.name} in {_device_name(m.device)}" for m in known)
        names = [m.name for m in known]
        raise ValueError(f"{', '.join(names[:-1])} and {names[-1]} must be on one device, got "
                         f"{places}")
    return known[0].device if known else None


def _on_device(device, array, function, *args):
    """function(*args) with device current: libtuned runs on the current CUDA device, so a call
    on arrays of another device of torch or CuPy switches there for its duration."""
    if device is not None and device >= 0:
        if _is_torch(array):
            torch = _torch()
            if torch.cuda.current_device() != device:
                with torch.cuda.device(device):
                    return function(*args)
        elif _is_cupy(array):
            with array.device:
                return function(*args)
    return function(*args)


def _same_order(first, second):
    """(column_major, first's ld, second's ld) of a storage order both arrays have, first's own
    order tried first (a vector has both); None when they are stored in opposite orders."""
    for column_major in (not first.transposed, first.transposed):
        ld_first = first.col_ld if column_major else first.row_ld
        ld_second = second.col_ld if column_major else second.row_ld
        if ld_first is not None and ld_second is not None:
            return column_major, ld_first, ld_second
    return None


def _order_name(matrix):
    return "row-major" if matrix.transposed else "column-major"


def _integer(value, name):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None


class _Placeholder:
    """Stands for a result that does not exist yet (the describe functions): its layout only."""

    def __init__(self, rows, cols, column_major=False):
        strides = (4, 4 * rows) if column_major else None
        self.__cuda_array_interface__ = {"shape": (rows, cols), "typestr": "<f4",
                                         "data": (256, False), "strides": strides, "version": 3}


def _empty_like(array, rows, cols, name, column_major=False, dtype=_FLOAT32):
    """A new rows x cols float32 array of array's library (torch, CuPy or NumPy) on its device,
    row-major or column-major."""
    shape, order = ((cols, rows), "F") if column_major else ((rows, cols), "C")
    if _is_torch(array):
        torch = _torch()
        result = torch.empty(shape, dtype=torch.float32, device=array.device)
        return result.t() if column_major else result
    if _is_cupy(array):
        import cupy
        with array.device:
            return cupy.empty((rows, cols), dtype=cupy.float32, order=order)
    if type(array).__module__.startswith("numpy"):
        import numpy
        return numpy.empty((rows, cols), dtype=numpy.float32, order=order)
    raise TypeError(f"pass {name}: cannot make a result array for {type(array).__name__}")


# ----- gemm ---------------------------------------------------------------------------------------

def _operands(a, b):
    """a and b as matrices whose product is defined (contiguous copies of strided views)."""
    (ma, a), (mb, b) = _matrix_or_copy(a, "a"), _matrix_or_copy(b, "b")
    if ma.cols != mb.rows:
        raise ValueError(f"a @ b needs a.shape[1] == b.shape[0], got {ma.rows}x{ma.cols} and "
                         f"{mb.rows}x{mb.cols}")
    return ma, mb


def _gemm_arguments(a, b, c):
    """(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc) of the column-major call computing c = a @ b
    (or c^T = b^T a^T where c is row-major); a and b come from _operands. tuned._native's
    gemm_arguments mirrors this: keep them equal."""
    if (c.rows, c.cols) != (a.rows, b.cols):
        raise ValueError(f"c must be {a.rows}x{b.cols}, got {c.rows}x{c.cols}")
    m, n, k = a.rows, b.cols, a.cols
    if not c.transposed:  # C column-major: C = op(A) op(B)
        return (int(a.transposed), int(b.transposed), m, n, k, a.pointer, a.ld, b.pointer, b.ld,
                c.pointer, c.ld)
    # C row-major: C^T (n x m, column-major) = B^T A^T; a row-major X is X^T column-major.
    return (int(not b.transposed), int(not a.transposed), n, m, k, b.pointer, b.ld, a.pointer,
            a.ld, c.pointer, c.ld)


def _gemm_entry(a, b, c=None, *, alpha=1.0, beta=0.0, compute="default", bias=None,
                activation=None):
    """c = activation(alpha * a @ b + beta * c + bias) for float32 CUDA arrays; returns c.

    a and b are 2-D, or 3-D for a batch of products (a[z] @ b[z]; a 2-D operand, or one with a
    batch of 1, is shared by every product: tuned_gemm_strided_batched). Without c, a new
    row-major array of a's library (torch or CuPy) is made (beta must then be 0); arrays of other
    producers (DLPack) need c. compute: "default" (FP32-accurate), "tf32" (TF32 rounding
    accepted) or "pedantic" (FFMA only; tuned_compute_t). bias: a 1-D float32 array of c's
    columns, added to every row (F.linear's); activation: None, "relu", "gelu" (erf) or
    "gelu_tanh", applied last, in the product's kernel. On a's producer's stream (DLPack: the
    legacy default stream)."""
    if compute != "default" or bias is not None or activation is not None or \
            _rank(a) not in (2, None) or _rank(b) not in (2, None):  # (its rank errors too)
        return _gemm_general(a, b, c, alpha, beta, compute, bias, activation)
    # The hot path: torch CUDA tensors through tuned._native; None from it hands the call (and
    # every error message) to the Python path. (tuned.gemm is tuned._native.Gemm where the
    # extension is built: its calls run the fast path without this frame, with a new c made
    # there; those it declines come here.)
    if c is None:
        c = _new_torch_result(a, b, beta)
        if c is None:
            return _gemm(a, b, None, alpha, beta)
    status = _fast_gemm(a, b, c, alpha, beta)
    if status is None:
        return _gemm(a, b, c, alpha, beta)
    if status:
        _raise(status)
    return c


def _gemm(a, b, c, alpha, beta):
    """gemm in Python: any producer, every check with its message, any device."""
    ma, mb = _operands(a, b)
    if c is None:
        if beta != 0:
            raise ValueError("beta must be 0 when c is not given")
        c = _empty_like(a, ma.rows, mb.cols, "c")
    mc, result = _matrix_or_copy(c, "c", writable=True)
    op_a, op_b, m, n, k, pa, lda, pb, ldb, pc, ldc = _gemm_arguments(ma, mb, mc)
    device = _common_device(ma, mb, mc)
    al, be = ctypes.c_float(alpha), ctypes.c_float(beta)
    _check(_on_device(device, a, _tuned_gemm, op_a, op_b, m, n, k, ctypes.byref(al), pa, lda, pb,
                      ldb, ctypes.byref(be), pc, ldc, _stream_of(a, ma)))
    if result is not c:  # a strided c was computed in a contiguous copy (beta read it)
        c[...] = result
    return c


def _rank(array):
    """The number of dimensions of an array of any producer (None where it does not say)."""
    shape = getattr(array, "shape", None)
    if shape is None:
        interface = getattr(array, "__cuda_array_interface__", None)
        shape = interface.get("shape") if interface else None
    return len(shape) if shape is not None else None


def _operand(array, name, required=False):
    """(Operand, device, stream) of a 2-D or 3-D float32 CUDA array (a 2-D one is a batch of 1);
    a torch tensor or CuPy array with no unit stride is copied (the copy is computed on)."""
    try:
        return _read_operand(array, name)
    except _products.NoUnitStride:
        if _is_torch(array):
            return _read_operand(array.contiguous(), name)
        if _is_cupy(array):
            import cupy
            return _read_operand(cupy.ascontiguousarray(array), name)
        raise


def _read_operand(array, name):
    if _is_torch(array):
        torch = _torch()
        if not array.is_cuda:
            raise TypeError(f"{name} must be a CUDA tensor, got one on {array.device}")
        if array.dtype is not torch.float32:
            raise TypeError(f"{name} must hold float32, got {array.dtype}")
        shape, strides, pointer = tuple(array.shape), array.stride(), array.data_ptr()
        device, stream = array.get_device(), None
    else:
        interface = getattr(array, "__cuda_array_interface__", None)
        if interface is None:
            raise TypeError(f"{name} must be a CUDA array (torch, or with "
                            f"__cuda_array_interface__) for a batch, a compute type, a bias or "
                            f"an activation, got {type(array).__name__}")
        if _TYPESTRS.get(interface["typestr"]) != _FLOAT32:
            raise TypeError(f"{name} must hold float32, got typestr {interface['typestr']!r}")
        shape = tuple(interface["shape"])
        strides = interface.get("strides")
        if strides is None:  # C-contiguous
            strides, step = [], 4
            for size in reversed(shape):
                strides.insert(0, step)
                step *= max(size, 1)
        if any(s % 4 for s in strides):
            raise ValueError(f"{name}'s strides {tuple(strides)} are not whole float32 elements")
        strides = tuple(s // 4 for s in strides)
        pointer = interface["data"][0] or 0
        device = array.device.id if _is_cupy(array) else None
        stream = interface.get("stream")
    if len(shape) not in (2, 3):
        raise ValueError(f"{name} must be 2-D or 3-D (a batch), got {len(shape)}-D (shape "
                         f"{shape})")
    if len(shape) == 2:
        shape, strides = (1,) + shape, (0,) + tuple(strides)
    operand = _products.Operand(name, pointer, shape, strides)
    operand.storage()  # NoUnitStride now, where a copy helps
    return operand, device, stream


def _gemm_general(a, b, c, alpha, beta, compute, bias, activation):
    """gemm with a batch, a compute type, a bias or an activation: tuned_gemm_strided_batched_ex."""
    if compute not in _library.COMPUTE_TYPES:
        raise ValueError(f"compute must be one of {list(_library.COMPUTE_TYPES)}, got "
                         f"{compute!r}")
    if activation not in _library.ACTIVATIONS:
        raise ValueError(f"activation must be one of "
                         f"{[x for x in _library.ACTIVATIONS if x]}, got {activation!r}")
    oa, device_a, stream = _operand(a, "a")
    ob, device_b, _ = _operand(b, "b")
    batched = _rank(a) == 3 or _rank(b) == 3
    if c is None:
        if beta != 0:
            raise ValueError("beta must be 0 when c is not given")
        c = _empty_batch(a, max(oa.batch, ob.batch) if batched else None, oa.rows, ob.cols)
    oc, device_c, _ = _read_operand(c, "c")
    devices = {d for d in (device_a, device_b, device_c) if d is not None}
    epilogue = _library.Epilogue(0, None, 0, _library.ACTIVATIONS[activation])
    call = _products.plan(oa, ob, oc)
    if bias is not None:
        ov, device_v, _ = _read_operand(bias.reshape(1, -1) if hasattr(bias, "reshape") else bias,
                                        "bias")
        if (ov.rows, ov.cols) != (1, oc.cols):
            raise ValueError(f"bias must hold c's {oc.cols} columns, got shape "
                             f"{tuple(getattr(bias, 'shape', ()))}")
        if device_v is not None:
            devices.add(device_v)
        epilogue.bias_kind, epilogue.bias = call.bias_kind, ov.pointer
    if len(devices) > 1:
        raise ValueError(f"a, b, c and bias must be on one device, got {sorted(devices)}")
    device = devices.pop() if devices else None
    if stream is None and _is_torch(a):
        stream = _stream_of(a, None)
    al, be = ctypes.c_float(alpha), ctypes.c_float(beta)
    _check(_on_device(device, a, lib.tuned_gemm_strided_batched_ex, call.op_a, call.op_b, call.m,
                      call.n, call.k, ctypes.byref(al), call.a, call.lda, call.stride_a, call.b,
                      call.ldb, call.stride_b, ctypes.byref(be), call.c, call.ldc, call.stride_c,
                      call.batch, _library.COMPUTE_TYPES[compute], ctypes.byref(epilogue),
                      stream or 0))
    return c


def _empty_batch(array, batch, rows, cols):
    """A new row-major float32 array of array's library: batch x rows x cols, or rows x cols."""
    shape = (rows, cols) if batch is None else (batch, rows, cols)
    if _is_torch(array):
        torch = _torch()
        return torch.empty(shape, dtype=torch.float32, device=array.device)
    if _is_cupy(array):
        import cupy
        with array.device:
            return cupy.empty(shape, dtype=cupy.float32)
    raise TypeError(f"pass c: cannot make a result array for {type(array).__name__}")


def _no_fast_gemm(a, b, c, alpha, beta):
    return None


def _probe_gemm(a, b, c, alpha, beta):
    """_fast_gemm until a torch tensor comes: binds the native path to torch then (importing
    tuned never imports torch); other arrays go to the Python path."""
    if _is_torch(a) and _bind_native():
        return _fast_gemm(a, b, c, alpha, beta)
    return None


def _bind_native():
    """Gives tuned._native tuned_gemm's address and torch's objects; False (and the Python path
    from then on) for a torch without CUDA."""
    global _fast_gemm
    torch = _torch()
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    current_device = getattr(torch._C, "_cuda_getDevice", None)
    if raw_stream is None or current_device is None:
        _fast_gemm = _no_fast_gemm
        return False
    fast = _native.FastPath(ctypes.cast(_tuned_gemm, ctypes.c_void_p).value, torch.Tensor,
                            torch.float32, raw_stream, current_device, torch.empty,
                            _torch_reader())
    _fast_gemm = fast.gemm
    if gemm is not _gemm_entry:
        gemm.set_fast(fast)
    return True


_TORCH_READER = "tuned_torch_reader"


def _torch_reader():
    """The torch reader's capsule (torch_reader.cpp: tensors read through torch's C++ API) where
    build_torch_reader() built it for this torch (torch caches the build), else None: the native
    path then reads tensors through torch's Python API."""
    try:
        from torch.utils import cpp_extension
        folder = cpp_extension._get_build_directory(_TORCH_READER, False)
        if not os.path.exists(os.path.join(folder, _TORCH_READER + ".so")):
            return None
        return _load_torch_reader(verbose=False).reader
    except Exception:  # noqa: BLE001  (an unusable build only costs speed)
        return None


def _load_torch_reader(verbose):
    """The torch reader's module: torch's cached build, or compiled now."""
    from torch.utils import cpp_extension
    here = os.path.dirname(os.path.abspath(__file__))
    return cpp_extension.load(_TORCH_READER, [os.path.join(here, "torch_reader.cpp")],
                              extra_cflags=["-O2"], extra_include_paths=[here], with_cuda=True,
                              verbose=verbose)


def build_torch_reader(verbose=True):
    """Compiles the torch reader against the installed torch (a C++ compiler and the CUDA
    toolkit are needed; about a minute, once: torch caches it under TORCH_EXTENSIONS_DIR), so
    tuned.gemm reads torch tensors through torch's C++ API: about 2 us less per call. Returns
    its module; the next torch call binds it."""
    module = _load_torch_reader(verbose)
    if _fast_gemm is not _no_fast_gemm:
        _use_native(True)  # bound again, with the reader, at the next torch tensor
    return module


def _new_torch_result(a, b, beta):
    """gemm's new c for two 2-D torch tensors on the native path (the native call checks the
    rest); None otherwise: the Python path checks a and b before making c."""
    if beta != 0 or _fast_gemm is _no_fast_gemm or not (_is_torch(a) and _is_torch(b)):
        return None
    shape_a, shape_b = a.shape, b.shape
    if len(shape_a) != 2 or len(shape_b) != 2:
        return None
    torch = _torch()
    return torch.empty((shape_a[0], shape_b[1]), dtype=torch.float32, device=a.device)


def _use_native(enabled=True):
    """Turns the native path on (bound again to torch at the next torch tensor) or off; for
    benchmarks and tests. TUNED_NATIVE=0 in the environment turns it off at import."""
    global _fast_gemm, _torch_module
    _torch_module = None
    _fast_gemm = _probe_gemm if enabled and _native is not None else _no_fast_gemm
    if gemm is not _gemm_entry:
        gemm.set_fast(None)  # bound again by _probe_gemm at the next torch tensor


gemm = _gemm_entry if _native is None else _native.Gemm(_gemm_entry, _raise)
_fast_gemm = _no_fast_gemm
_use_native(os.environ.get("TUNED_NATIVE", "1") != "0")


def describe(a, b, c=None):
    """"origin: config" of the kernel gemm(a, b, c) would use (origin: exact, first-use, shipped,
    model, nearest ..., default)."""
    ma, mb = _operands(a, b)
    mc = _Matrix(c if c is not None else _Placeholder(ma.rows, mb.cols), "c")
    op_a, op_b, m, n, k, pa, lda, pb, ldb, pc, ldc = _gemm_arguments(ma, mb, mc)
    buffer = ctypes.create_string_buffer(1024)
    _check(_on_device(_common_device(ma, mb, mc), a, lib.tuned_gemm_describe, op_a, op_b, m, n, k,
                      pa, lda, pb, ldb, pc, ldc, buffer, len(buffer)))
    return buffer.value.decode()


# ----- transpose ----------------------------------------------------------------------------------

def _transpose_arguments(ma, out):
    """(rows, cols, A, lda, B, ldb) of tuned_transpose computing out = a.T (ma: a's _Matrix;
    out None: a result stored like a): a row-major a (R x C) is the column-major C x R matrix
    a^T, whose transpose is the row-major out."""
    if out is None:
        out = _Placeholder(ma.cols, ma.rows, column_major=not ma.transposed)
    mo = _Matrix(out, "out", writable=True)
    if (mo.rows, mo.cols) != (ma.cols, ma.rows):
        raise ValueError(f"out must be {ma.cols}x{ma.rows} (a transposed), got "
                         f"{mo.rows}x{mo.cols}")
    order = _same_order(ma, mo)
    if order is None:
        raise ValueError(f"a is {_order_name(ma)} and out {_order_name(mo)}: a.T stored in the "
                         f"opposite order to a is a plain copy of memory, not a transpose; give "
                         f"out a's storage order")
    column_major, lda, ldb = order
    rows, cols = (ma.rows, ma.cols) if column_major else (ma.cols, ma.rows)
    return mo, (rows, cols, ma.pointer, lda, mo.pointer, ldb)


def transpose(a, out=None):
    """out = a.T for a 2-D float32 CUDA array; returns out. Without out, a new array of a's
    library (torch or CuPy) stored in a's order is made; out, given, must be stored in a's order
    too (row-major a, row-major out) and must not overlap a. On a's producer's stream."""
    ma, a = _matrix_or_copy(a, "a")
    if out is None:
        out = _empty_like(a, ma.cols, ma.rows, "out", column_major=not ma.transposed)
    mo, arguments = _transpose_arguments(ma, out)
    _check(_on_device(_common_device(ma, mo), a, lib.tuned_transpose, *arguments,
                      _stream_of(a, ma)))
    return out


def describe_transpose(a, out=None):
    """"origin: config" of the kernel transpose(a, out) would use."""
    ma = _Matrix(a, "a")
    mo, arguments = _transpose_arguments(ma, out)
    buffer = ctypes.create_string_buffer(1024)
    _check(_on_device(_common_device(ma, mo), a, lib.tuned_transpose_describe, *arguments, buffer,
                      len(buffer)))
    return buffer.value.decode()


# ----- entropy ------------------------------------------------------------------------------------

def entropy(x, radius, levels, out=None, *, path="auto", gpus=0):
    """Local entropy: out[i, j] = the Shannon entropy (natural log) of x's values in the
    (2 radius + 1)^2 window centred on x[i, j], clipped at the borders; returns out.

    x is a 2-D array of float32 holding integers, or of uint8, with values in [0, levels);
    radius 0..7, levels 2..256. A CUDA array computes on its device, on the producer's stream; a
    host array (NumPy, a CPU tensor) computes from host memory to host memory where path says
    ("auto": the CPU for small problems or without a GPU, else the GPUs; "cpu"; "gpu"), over gpus
    GPUs (0: every visible one). out is float32, x's shape, stored in x's order; without it a new
    array of x's library (torch, CuPy or NumPy) is made."""
    radius, levels = _integer(radius, "radius"), _integer(levels, "levels")
    gpus = _integer(gpus, "gpus")
    if path not in _library.ENTROPY_PATHS:
        raise ValueError(f"path must be one of {list(_library.ENTROPY_PATHS)}, got {path!r}")
    mx, x = _matrix_or_copy(x, "x", dtypes=(_FLOAT32, _UINT8), host=True)
    if out is None:
        out = _empty_like(x, mx.rows, mx.cols, "out", column_major=not mx.transposed)
    mo = _Matrix(out, "out", (_FLOAT32,), host=True, writable=True)
    if (mo.rows, mo.cols) != (mx.rows, mx.cols):
        raise ValueError(f"out must be {mx.rows}x{mx.cols} like x, got {mo.rows}x{mo.cols}")
    device = _common_device(mx, mo)
    column_major, rows, cols, ld_in, ld_out = _entropy_layout(mx, mo)
    u8 = mx.dtype == _UINT8
    if device == _HOST:
        options = _library.EntropyOptions(_library.ENTROPY_PATHS[path], gpus)
        function = lib.tuned_entropy_host_u8 if u8 else lib.tuned_entropy_host
        status = function(rows, cols, radius, levels, mx.pointer, ld_in, mo.pointer, ld_out,
                          ctypes.byref(options))
    else:
        if path != "auto" or gpus != 0:
            raise ValueError(f"path={path!r} and gpus={gpus} choose where a host array is "
                             f"computed; x is a CUDA array, computed on its own device")
        function = lib.tuned_entropy_u8 if u8 else lib.tuned_entropy
        status = _on_device(device, x, function, rows, cols, radius, levels, mx.pointer, ld_in,
                            mo.pointer, ld_out, _stream_of(x, mx))
    if status != _library.STATUS_SUCCESS:
        # libtuned names a bad element by its (row, column) in the column-major call, which is
        # x^T for a row-major x: say x[i, j].
        message = re.sub(r"^input \((\d+), (\d+)\)",
                         lambda m: f"x[{m[1]}, {m[2]}]" if column_major else f"x[{m[2]}, {m[1]}]",
                         lib.tuned_last_error().decode(errors="replace"))
        raise Error(status, message)
    return out


def _entropy_layout(mx, mo):
    """(column_major, rows, cols, ld_in, ld_out) of the column-major call: the window is square
    and clipped symmetrically, so a row-major R x C x is computed as the column-major C x R matrix
    x^T."""
    order = _same_order(mx, mo)
    if order is None:
        raise ValueError(f"x is {_order_name(mx)} and out {_order_name(mo)}: out must be stored "
                         f"in x's order")
    column_major, ld_in, ld_out = order
    rows, cols = (mx.rows, mx.cols) if column_major else (mx.cols, mx.rows)
    return column_major, rows, cols, ld_in, ld_out


def describe_entropy(x, radius, levels):
    """"origin: config" of the kernel entropy(x, radius, levels) would use on the current GPU (on
    x's device for a CUDA tensor)."""
    radius, levels = _integer(radius, "radius"), _integer(levels, "levels")
    mx = _Matrix(x, "x", (_FLOAT32, _UINT8), host=True)
    rows, cols = (mx.cols, mx.rows) if mx.transposed else (mx.rows, mx.cols)
    buffer = ctypes.create_string_buffer(1024)
    _check(_on_device(mx.device, x, lib.tuned_entropy_describe, rows, cols, radius, levels,
                      int(mx.dtype == _UINT8), buffer, len(buffer)))
    return buffer.value.decode()


from .tuning import autotune, recording, results, set_record  # noqa: E402  (they use what is above)


def _enable_torch_from_environment():
    """TUNED_TORCH=1: every eligible torch product of this process (its importing thread) through
    tuned (tuned.torch_op.enable()); where that cannot be (no torch, a torch older than 2.4), a
    warning and torch as it is, never an error in the program."""
    if os.environ.get("TUNED_TORCH", "0") in ("", "0"):
        return
    try:
        from . import torch_op
        torch_op.enable()
    except Exception as e:  # noqa: BLE001  (the program runs on, with torch's products)
        warnings.warn(f"TUNED_TORCH is set but tuned cannot route torch's products: {e}",
                      RuntimeWarning, stacklevel=2)


_enable_torch_from_environment()
