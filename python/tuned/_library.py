"""libtuned.so through ctypes: found, loaded once, its C API declared.

ctypes, not a compiled extension: one package works with every Python version and every array
library, and libtuned.so (cmake -DBUILD_SHARED_LIBS=ON) is the only compiled part.
"""
import ctypes
import ctypes.util
import os

_SEARCHED = []


def _candidates():
    env = os.environ.get("TUNED_LIBRARY")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libtuned.so")  # bundled by the build
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

_int, _float_p, _void_p = ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_void_p
_signatures = {
    "tuned_version": (ctypes.c_char_p, []),
    "tuned_status_string": (ctypes.c_char_p, [_int]),
    "tuned_last_error": (ctypes.c_char_p, []),
    "tuned_set_database": (_int, [ctypes.c_char_p]),
    "tuned_set_tuning": (_int, [_int]),
    "tuned_gemm": (_int, [_int, _int, _int, _int, _int, _float_p, _void_p, _int, _void_p, _int,
                          _float_p, _void_p, _int, _void_p]),
    "tuned_gemm_describe": (_int, [_int, _int, _int, _int, _int, _void_p, _int, _void_p, _int,
                                   _void_p, _int, ctypes.c_char_p, ctypes.c_ulong]),
}
for _name, (_restype, _argtypes) in _signatures.items():
    _function = getattr(lib, _name)
    _function.restype = _restype
    _function.argtypes = _argtypes

STATUS_SUCCESS = 0
STATUS_DATABASE_NOT_USED = 11
