"""libtuned.so through ctypes: found, loaded once, its C API declared.

Every call can go through ctypes, so the package works on any Python version and without a
compiler; the optional extension tuned._native only shortens tuned.gemm's path for torch tensors,
calling tuned_gemm through the address it is given from here (it does not link libtuned).
"""
import ctypes
import ctypes.util
import glob
import os

_SEARCHED = []


def _candidates():
    env = os.environ.get("TUNED_LIBRARY")
    if env:
        yield env
    # Bundled by the build under its soname, which the bundled autotune links too.
    here = os.path.dirname(os.path.abspath(__file__))
    yield from sorted(glob.glob(os.path.join(here, "lib", "libtuned.so*")))
    found = ctypes.util.find_library("tuned")
    if found:
        yield found


def _load():
    errors = []
    for path in _candidates():
        _SEARCHED.append(path)
        try:
            return ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError(
        "tuned: cannot load libtuned.so (set TUNED_LIBRARY to its path, or build the package "
        "with the library); tried: " + ("; ".join(errors) or "nothing found"))


lib = _load()


class EntropyOptions(ctypes.Structure):
    """tuned_entropy_options_t."""
    _fields_ = [("path", ctypes.c_int), ("gpus", ctypes.c_int)]


ENTROPY_PATHS = {"auto": 0, "cpu": 1, "gpu": 2}  # tuned_entropy_path_t


class Epilogue(ctypes.Structure):
    """tuned_epilogue_t."""
    _fields_ = [("bias_kind", ctypes.c_int), ("bias", ctypes.c_void_p),
                ("bias_batch_stride", ctypes.c_longlong), ("activation", ctypes.c_int)]


COMPUTE_TYPES = {"default": 0, "tf32": 1, "pedantic": 2}  # tuned_compute_t
BIAS_KINDS = {None: 0, "row": 1, "column": 2}  # tuned_bias_t
ACTIVATIONS = {None: 0, "none": 0, "relu": 1, "gelu_tanh": 2, "gelu": 3}  # tuned_activation_t

_int, _float_p, _void_p = ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_void_p
_char_p, _ulong = ctypes.c_char_p, ctypes.c_ulong
_longlong = ctypes.c_longlong
_entropy = [_int, _int, _int, _int, _void_p, _int, _void_p, _int]  # rows .. ld_out
_signatures = {
    "tuned_version": (ctypes.c_char_p, []),
    "tuned_status_string": (ctypes.c_char_p, [_int]),
    "tuned_last_error": (ctypes.c_char_p, []),
    "tuned_set_database": (_int, [ctypes.c_char_p]),
    "tuned_set_tuning": (_int, [_int]),
    "tuned_set_record": (_int, [ctypes.c_char_p]),
    "tuned_gemm": (_int, [_int, _int, _int, _int, _int, _float_p, _void_p, _int, _void_p, _int,
                          _float_p, _void_p, _int, _void_p]),
    "tuned_gemm_describe": (_int, [_int, _int, _int, _int, _int, _void_p, _int, _void_p, _int,
                                   _void_p, _int, _char_p, _ulong]),
    # op_a, op_b, m, n, k, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c,
    # batch_count, compute, epilogue, stream
    "tuned_gemm_strided_batched_ex": (_int, [_int, _int, _int, _int, _int, _float_p, _void_p, _int,
                                             _longlong, _void_p, _int, _longlong, _float_p,
                                             _void_p, _int, _longlong, _int, _int,
                                             ctypes.POINTER(Epilogue), _void_p]),
    "tuned_gemm_strided_batched_describe": (_int, [_int, _int, _int, _int, _int, _void_p, _int,
                                                   _longlong, _void_p, _int, _longlong, _void_p,
                                                   _int, _longlong, _int, _int, _char_p,
                                                   _ulong]),
    "tuned_transpose": (_int, [_int, _int, _void_p, _int, _void_p, _int, _void_p]),
    "tuned_transpose_describe": (_int, [_int, _int, _void_p, _int, _void_p, _int, _char_p,
                                        _ulong]),
    "tuned_entropy": (_int, _entropy + [_void_p]),
    "tuned_entropy_u8": (_int, _entropy + [_void_p]),
    "tuned_entropy_host": (_int, _entropy + [ctypes.POINTER(EntropyOptions)]),
    "tuned_entropy_host_u8": (_int, _entropy + [ctypes.POINTER(EntropyOptions)]),
    "tuned_entropy_describe": (_int, [_int, _int, _int, _int, _int, _char_p, _ulong]),
    # The JSON text comes back as a pointer the library allocated (tuning.results frees it).
    "tuned_results_json": (_int, [_char_p, _char_p, _char_p, ctypes.POINTER(_void_p)]),
    "tuned_free": (None, [_void_p]),
}
for _name, (_restype, _argtypes) in _signatures.items():
    _function = getattr(lib, _name)
    _function.restype = _restype
    _function.argtypes = _argtypes

STATUS_SUCCESS = 0
STATUS_DATABASE_NOT_USED = 11
