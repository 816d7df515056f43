"""DLPack read with ctypes: arrays of producers without __cuda_array_interface__ (JAX, ...)
through their __dlpack__ and __dlpack_device__ methods.

The legacy capsule ("dltensor", a DLManagedTensor) is read, not consumed: it keeps its name, so
its destructor calls the producer's deleter once the capsule goes, and the capsule is kept for as
long as the memory is used.
"""
import ctypes

# DLDeviceType
CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13
# DLDataTypeCode
INT, UINT, FLOAT = 0, 1, 2

# __dlpack__(stream=LEGACY_STREAM): the producer makes the array safe to use on CUDA's legacy
# default stream, where the consumer then runs (stream 0).
LEGACY_STREAM = 1

_DEVICE_NAMES = {CPU: "the host (kDLCPU)", CUDA: "CUDA", CUDA_HOST: "pinned host memory "
                 "(kDLCUDAHost)", CUDA_MANAGED: "CUDA managed memory", 4: "OpenCL", 7: "Vulkan",
                 8: "Metal", 9: "VPI", 10: "ROCm", 11: "ROCm host memory", 12: "an extension "
                 "device", 14: "oneAPI", 15: "WebGPU", 16: "Hexagon", 17: "MAIA"}


def device_name(device_type):
    return _DEVICE_NAMES.get(device_type, f"DLPack device type {device_type}")


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


# Own prototypes rather than ctypes.pythonapi's shared function objects, whose restype other code
# may set differently.
_capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


class View:
    """What a DLPack capsule says of an array: device, pointer (data + byte_offset), shape, strides
    in elements (the compact row-major ones where the capsule has none) and dtype as (code, bits,
    lanes). Holds the capsule, which holds the array's memory."""

    __slots__ = ("capsule", "device_type", "device_id", "pointer", "shape", "strides", "dtype")

    def __init__(self, capsule, name):
        if type(capsule).__name__ != "PyCapsule":
            raise TypeError(f"{name}.__dlpack__() must return a PyCapsule, got "
                            f"{type(capsule).__name__}")
        label = _capsule_name(capsule)
        if label != b"dltensor":
            raise TypeError(f"{name}.__dlpack__() gave a capsule named {label!r}, not "
                            f"b'dltensor' (a consumed or versioned one)")
        self.capsule = capsule
        tensor = DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor")).dl_tensor
        self.device_type, self.device_id = tensor.device.device_type, tensor.device.device_id
        self.pointer = (tensor.data or 0) + tensor.byte_offset
        self.dtype = (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
        ndim = tensor.ndim
        self.shape = tuple(tensor.shape[i] for i in range(ndim))
        if tensor.strides:
            self.strides = tuple(tensor.strides[i] for i in range(ndim))
        else:  # compact row-major
            strides, step = [], 1
            for extent in reversed(self.shape):
                strides.append(step)
                step *= extent
            self.strides = tuple(reversed(strides))


def device(array):
    """(device_type, device_id) of array's __dlpack_device__()."""
    device_type, device_id = array.__dlpack_device__()
    return int(device_type), int(device_id)


def view(array, name, stream=None):
    """A View of array.__dlpack__(stream=stream) (no stream argument for None: host memory)."""
    capsule = array.__dlpack__() if stream is None else array.__dlpack__(stream=stream)
    return View(capsule, name)
