"""tuned: autotuned GEMM for CUDA arrays from any producer (torch, CuPy, JAX, ...).

    import tuned
    c = tuned.gemm(a, b)          # a @ b, FP32, on the producer's current stream

Arrays are read through __cuda_array_interface__ (torch, CuPy and Numba CUDA tensors and arrays
have it); row-major, column-major and transposed views are used without copies (a row-major
product is the column-major product of the transposes).
"""
import ctypes
import warnings

from . import _library
from ._library import lib

__all__ = ["Error", "version", "gemm", "describe", "set_database", "set_tuning"]

version = lib.tuned_version().decode()


class Error(RuntimeError):
    """A failed libtuned call: status is its tuned_status_t, the message the library's."""

    def __init__(self, status, message):
        self.status = status
        name = lib.tuned_status_string(status).decode()
        super().__init__(f"{message} ({name})" if message else name)


def _check(status):
    if status != _library.STATUS_SUCCESS:
        raise Error(status, lib.tuned_last_error().decode(errors="replace"))


def set_database(path=None):
    """Uses the tuning database at path (None: $TUNED_DB, else the default). A database that
    cannot be used now is set with a warning (RuntimeWarning): calls use the shipped choices."""
    status = lib.tuned_set_database(None if path is None else str(path).encode())
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

class _Matrix:
    """A 2-D FP32 CUDA array as libtuned sees it: pointer, shape and leading dimension, stored
    column-major (transposed=False) or row-major (transposed=True)."""

    __slots__ = ("array", "rows", "cols", "pointer", "stream", "transposed", "ld")

    def __init__(self, array, name):
        self.array = array
        if _is_torch(array):
            # Read directly: faster than the interface, which torch refuses for a tensor that
            # requires grad (the operator's autograd hands those in).
            if not array.is_cuda:
                raise TypeError(f"{name} must be a CUDA tensor, got one on {array.device}")
            if array.dtype is not _torch().float32:
                raise TypeError(f"{name} must hold float32, got {array.dtype}")
            if array.dim() != 2:
                raise ValueError(f"{name} must be 2-D, got {array.dim()}-D (shape "
                                 f"{tuple(array.shape)})")
            self.rows, self.cols = array.shape
            self.pointer, self.stream = array.data_ptr(), None
            s_row, s_col = array.stride()
            self._layout(name, s_row, s_col, (4 * s_row, 4 * s_col))
            return
        interface = getattr(array, "__cuda_array_interface__", None)
        if interface is None:
            raise TypeError(f"{name} must be a CUDA array (with __cuda_array_interface__), got "
                            f"{type(array).__name__}")
        shape = tuple(interface["shape"])
        if len(shape) != 2:
            raise ValueError(f"{name} must be 2-D, got {len(shape)}-D (shape {shape})")
        if interface["typestr"] not in ("<f4", "=f4", "f4"):
            raise TypeError(f"{name} must hold float32, got typestr {interface['typestr']!r}")
        self.rows, self.cols = shape
        self.pointer = interface["data"][0] or 0
        self.stream = interface.get("stream")
        strides = interface.get("strides")
        if strides is None:  # C-contiguous
            strides = (4 * self.cols, 4)
        if any(s % 4 for s in strides):
            raise ValueError(f"{name}'s strides {strides} are not whole float32 elements")
        self._layout(name, strides[0] // 4, strides[1] // 4, strides)

    def _layout(self, name, s_row, s_col, strides):
        # A unit stride along one dimension; a dimension of size 1 takes any stride.
        rows, cols = self.rows, self.cols
        if (s_row == 1 or rows == 1) and (s_col >= max(1, rows) or cols == 1):
            self.transposed, self.ld = False, max(s_col, rows, 1)
        elif (s_col == 1 or cols == 1) and (s_row >= max(1, cols) or rows == 1):
            self.transposed, self.ld = True, max(s_row, cols, 1)
        else:
            raise ValueError(f"{name} needs a unit stride along one dimension (strides "
                             f"{strides} bytes, shape {(rows, cols)}): pass a contiguous copy")


_torch_module = None


def _torch():
    global _torch_module
    if _torch_module is None:
        import torch
        _torch_module = torch
    return _torch_module


def _is_torch(array):
    return type(array).__module__.startswith("torch")


def _stream_of(array, matrix):
    """The producer's current stream: torch's current stream for a torch tensor, else the
    interface's stream entry (None: the legacy default stream)."""
    if _is_torch(array):
        torch = _torch()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return raw(array.get_device())
        return torch.cuda.current_stream(array.device).cuda_stream
    return matrix.stream or 0


def _operands(a, b):
    """a and b as matrices whose product is defined."""
    ma, mb = _Matrix(a, "a"), _Matrix(b, "b")
    if ma.cols != mb.rows:
        raise ValueError(f"a @ b needs a.shape[1] == b.shape[0], got {ma.rows}x{ma.cols} and "
                         f"{mb.rows}x{mb.cols}")
    return ma, mb


def _gemm_arguments(a, b, c):
    """(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc) of the column-major call computing c = a @ b
    (or c^T = b^T a^T where c is row-major); a and b come from _operands."""
    if (c.rows, c.cols) != (a.rows, b.cols):
        raise ValueError(f"c must be {a.rows}x{b.cols}, got {c.rows}x{c.cols}")
    m, n, k = a.rows, b.cols, a.cols
    if not c.transposed:  # C column-major: C = op(A) op(B)
        return (int(a.transposed), int(b.transposed), m, n, k, a.pointer, a.ld, b.pointer, b.ld,
                c.pointer, c.ld)
    # C row-major: C^T (n x m, column-major) = B^T A^T; a row-major X is X^T column-major.
    return (int(not b.transposed), int(not a.transposed), n, m, k, b.pointer, b.ld, a.pointer,
            a.ld, c.pointer, c.ld)


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0):
    """c = alpha * a @ b + beta * c for 2-D float32 CUDA arrays; returns c. Without c, a new
    row-major array of a's library (torch or CuPy) is made (beta must then be 0)."""
    ma, mb = _operands(a, b)
    if c is None:
        if beta != 0:
            raise ValueError("beta must be 0 when c is not given")
        c = _empty_like(a, ma.rows, mb.cols)
    mc = _Matrix(c, "c")
    args = _gemm_arguments(ma, mb, mc)
    al, be = ctypes.c_float(alpha), ctypes.c_float(beta)
    op_a, op_b, m, n, k, pa, lda, pb, ldb, pc, ldc = args
    _check(lib.tuned_gemm(op_a, op_b, m, n, k, ctypes.byref(al), pa, lda, pb, ldb, ctypes.byref(be),
                          pc, ldc, _stream_of(a, ma)))
    return c


def describe(a, b, c=None):
    """"origin: config" of the kernel gemm(a, b, c) would use (origin: exact, first-use, shipped,
    model, nearest ..., default)."""
    ma, mb = _operands(a, b)
    mc = _Matrix(c, "c") if c is not None else None
    if mc is None:  # the layout gemm() would give its new row-major result
        mc = _Matrix(_RowMajorShape(ma.rows, mb.cols), "c")
    op_a, op_b, m, n, k, pa, lda, pb, ldb, pc, ldc = _gemm_arguments(ma, mb, mc)
    buffer = ctypes.create_string_buffer(1024)
    _check(lib.tuned_gemm_describe(op_a, op_b, m, n, k, pa, lda, pb, ldb, pc, ldc, buffer,
                                   len(buffer)))
    return buffer.value.decode()


class _RowMajorShape:
    """Stands for a row-major result that does not exist yet (describe): its layout only."""

    def __init__(self, rows, cols):
        self.__cuda_array_interface__ = {"shape": (rows, cols), "typestr": "<f4",
                                         "data": (256, False), "strides": None, "version": 3}


def _empty_like(array, rows, cols):
    module = type(array).__module__
    if module.startswith("torch"):
        torch = _torch()
        return torch.empty((rows, cols), dtype=torch.float32, device=array.device)
    if module.startswith("cupy"):
        import cupy
        return cupy.empty((rows, cols), dtype=cupy.float32)
    raise TypeError(f"pass c: cannot make a result array for {type(array).__name__}")
