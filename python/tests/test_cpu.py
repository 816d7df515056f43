"""The Python package without a GPU: import, version, every argument error, the layout mappings
(the native path's against the Python path's, on fake torch tensors), DLPack on hand-made
capsules, the host entropy against a reference, and a clear tuned.Error where the library needs a
device. Run: TUNED_LIBRARY=.../libtuned.so python3 -m unittest discover -s python/tests
(the native path's tests need tuned/_native*.so: in python/, python3 setup.py build_ext
--inplace)."""
import collections
import contextlib
import ctypes
import glob
import itertools
import math
import os
import random
import json
import re
import shutil
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

PACKAGE_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
if os.environ.get("TUNED_TEST_INSTALLED") != "1":  # else the installed package is tested
    sys.path.insert(0, PACKAGE_ROOT)
import tuned  # noqa: E402
from tuned import _dlpack, tuning  # noqa: E402

try:
    import numpy
except ImportError:
    numpy = None


class FakeCudaArray:
    """Only __cuda_array_interface__: what the package reads of CuPy or Numba arrays."""

    def __init__(self, shape, strides=None, typestr="<f4", pointer=1 << 20, readonly=False):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (pointer, readonly), "strides": strides,
                                         "version": 3}


def has_gpu():
    return subprocess.run(["nvidia-smi"], capture_output=True).returncode == 0 \
        if os.path.exists("/usr/bin/nvidia-smi") else False


class Package(unittest.TestCase):
    def test_version_matches_the_library_and_the_project(self):
        self.assertRegex(tuned.version, r"^\d+\.\d+\.\d+$")
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "CMakeLists.txt")) as f:
            cmake = f.read()
        self.assertEqual(tuned.version, re.search(r"project\(tuned VERSION ([0-9.]+)", cmake)[1])

    def test_a_wrong_library_path_is_a_clear_import_error(self):
        env = dict(os.environ, TUNED_LIBRARY="/nonexistent/libtuned.so")
        code = "import sys; sys.path.insert(0, %r); import tuned" % os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..")
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if run.returncode == 0:
            self.skipTest("a libtuned.so was found beside the package or on the system")
        self.assertIn("ImportError: tuned: cannot load libtuned.so", run.stderr)
        self.assertIn("/nonexistent/libtuned.so", run.stderr)

    def test_set_tuning_names_the_policies(self):
        with self.assertRaisesRegex(ValueError, "first-use"):
            tuned.set_tuning("sometimes")


INSTALLED = os.environ.get("TUNED_TEST_INSTALLED") == "1"
PACKAGE = os.path.dirname(os.path.abspath(tuned.__file__))  # the tuned tested


class Installed(unittest.TestCase):
    """The package as pip installed it (TUNED_TEST_INSTALLED=1): outside the source tree, with
    its libtuned and an autotune that links it, both working from wherever they were installed."""

    def setUp(self):
        if not INSTALLED:
            self.skipTest("tests python/tuned, not an installed package")

    def test_the_package_tested_is_not_the_source_tree(self):
        source = os.path.realpath(os.path.join(PACKAGE_ROOT, "tuned"))
        self.assertNotEqual(os.path.realpath(PACKAGE), source)
        self.assertNotIn(os.path.realpath(PACKAGE_ROOT), os.path.realpath(PACKAGE))

    def test_the_bundled_library_is_the_one_loaded(self):
        if os.environ.get("TUNED_LIBRARY"):
            self.skipTest("TUNED_LIBRARY overrides the bundled library")
        bundled = glob.glob(os.path.join(PACKAGE, "lib", "libtuned.so*"))
        self.assertEqual(len(bundled), 1, bundled)
        self.assertEqual(tuned._library._SEARCHED[-1], bundled[0])

    def test_bundled_autotune_runs_with_the_bundled_library(self):
        autotune = os.path.join(PACKAGE, "bin", "autotune")
        self.assertTrue(os.access(autotune, os.X_OK), autotune)
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        run = subprocess.run([autotune, "--version"], capture_output=True, text=True, env=env)
        self.assertEqual((run.returncode, run.stdout, run.stderr),
                         (0, f"autotune (tuned) {tuned.version}\n", ""))
        readelf = shutil.which("readelf")
        if readelf is None:
            self.skipTest("no readelf to read the run paths with")
        library = glob.glob(os.path.join(PACKAGE, "lib", "libtuned.so*"))[0]
        for binary, run_path in ((autotune, "$ORIGIN/../lib"), (library, None)):
            dynamic = subprocess.run([readelf, "-d", binary], capture_output=True, text=True,
                                     check=True).stdout
            paths = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]", dynamic)
            self.assertEqual(paths, [run_path] if run_path else [], binary)
        self.assertIn(f"Shared library: [{os.path.basename(library)}]",
                      subprocess.run([readelf, "-d", autotune], capture_output=True, text=True,
                                     check=True).stdout)


@unittest.skipUnless(INSTALLED, "the start-up hook is installed by the wheel (tuned-torch.pth)")
class StartupHook(unittest.TestCase):
    """TUNED_TORCH=1 alone, no change to the program: tuned comes with the program's import of
    torch, and only then (a program without torch pays nothing)."""

    def run_python(self, code, **env):
        environment = {k: v for k, v in os.environ.items() if k != "TUNED_TORCH"}
        environment.update(env)
        with tempfile.TemporaryDirectory() as folder:
            return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  cwd=folder, env=environment)

    def test_nothing_is_imported_without_torch_or_without_the_switch(self):
        run = self.run_python("import sys; print('tuned' in sys.modules)", TUNED_TORCH="1")
        self.assertEqual((run.returncode, run.stdout.strip(), run.stderr), (0, "False", ""))
        run = self.run_python("import sys\ntry:\n import torch\nexcept ImportError:\n pass\n"
                              "print('tuned' in sys.modules)", TUNED_TORCH="0")
        self.assertEqual((run.returncode, run.stdout.strip(), run.stderr), (0, "False", ""))

    def test_importing_torch_switches_routing_on(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        run = self.run_python("import sys, torch\nt = sys.modules.get('tuned')\n"
                              "print(t is not None and t.__file__)\n"
                              "print(t is not None and t.torch_op.enabled() if hasattr(t, "
                              "'torch_op') else 'no torch_op')", TUNED_TORCH="1")
        self.assertEqual(run.returncode, 0, run.stderr)
        lines = run.stdout.split("\n")
        self.assertEqual(os.path.realpath(lines[0]), os.path.realpath(tuned.__file__))
        if hasattr(torch.library, "custom_op"):  # torch 2.4 and later: routed
            self.assertEqual((lines[1], run.stderr), ("True", ""))
        else:  # an older torch: one warning, and the program runs on with torch's products
            self.assertEqual(lines[1], "no torch_op")
            self.assertIn("RuntimeWarning: TUNED_TORCH is set but tuned cannot route torch's "
                          "products", run.stderr)


class NameClash(unittest.TestCase):
    """tuned_gpu: our tuned where `import tuned` finds it, else an ImportError naming both."""

    def run_python(self, code, fake=None):
        """code in a fresh interpreter that sees the tuned tested (and, first, a folder holding
        another package named tuned, where fake is given: "path" puts it on sys.path, "imported"
        imports it too); returns the finished process."""
        with tempfile.TemporaryDirectory() as folder:
            other = os.path.join(folder, "elsewhere")
            os.makedirs(os.path.join(other, "tuned"))
            with open(os.path.join(other, "tuned", "__init__.py"), "w") as f:
                f.write("DAEMON = True\n")
            prologue = "import sys\n"
            if not INSTALLED:
                prologue += f"sys.path.insert(0, {PACKAGE_ROOT!r})\n"
            if fake:
                prologue += f"sys.path.insert(0, {other!r})\n"
            if fake == "imported":
                prologue += "import tuned\nassert tuned.DAEMON\n"
            run = subprocess.run([sys.executable, "-c", prologue + code], capture_output=True,
                                 text=True, cwd=folder)
            return run, os.path.join(other, "tuned")

    def test_tuned_gpu_is_this_tuned(self):
        run, _ = self.run_python("import tuned_gpu, tuned\n"
                                 "import os\n"
                                 "print(tuned_gpu is tuned, os.path.realpath(tuned.__file__),"
                                 " tuned_gpu.version)")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.split(), ["True", os.path.realpath(tuned.__file__),
                                              tuned.version])

    def check_refused(self, run, other):
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("ImportError: tuned_gpu: `import tuned` finds " + other, run.stderr)
        self.assertIn(f"not the GPU kernel package tuned installed beside this module ({PACKAGE})",
                      run.stderr)
        self.assertIn("python3 -m venv", run.stderr)

    def test_another_tuned_first_on_the_path_is_named(self):
        self.check_refused(*self.run_python("import tuned_gpu", fake="path"))

    def test_another_tuned_imported_already_is_named(self):
        self.check_refused(*self.run_python("import tuned_gpu", fake="imported"))


class Arguments(unittest.TestCase):
    def test_not_a_cuda_array_is_a_type_error(self):
        with self.assertRaisesRegex(TypeError, "a must be a CUDA array"):
            tuned.gemm([[1.0]], FakeCudaArray((1, 1)))
        with self.assertRaisesRegex(TypeError, "b must be a CUDA array"):
            tuned.gemm(FakeCudaArray((1, 1)), object())

    def test_wrong_dtype_is_a_type_error(self):
        with self.assertRaisesRegex(TypeError, "float32"):
            tuned.gemm(FakeCudaArray((2, 2), typestr="<f8"), FakeCudaArray((2, 2)))

    def test_wrong_rank_is_a_value_error(self):
        # 3-D is a batch of products (tuned_gemm_strided_batched); 4-D is no product tuned runs.
        with self.assertRaisesRegex(ValueError, r"a must be 2-D or 3-D \(a batch\), got 4-D"):
            tuned.gemm(FakeCudaArray((2, 2, 2, 2)), FakeCudaArray((2, 2)))
        with self.assertRaisesRegex(ValueError, r"c must be 2-D or 3-D \(a batch\), got 1-D"):
            tuned.gemm(FakeCudaArray((2, 2, 2)), FakeCudaArray((2, 2)), FakeCudaArray((2,)))

    def test_a_batch_of_an_array_library_tuned_cannot_allocate_in_needs_c(self):
        with self.assertRaisesRegex(TypeError, "pass c: cannot make a result array for "
                                               "FakeCudaArray"):
            tuned.gemm(FakeCudaArray((2, 2, 2)), FakeCudaArray((2, 2)))

    def test_mismatched_shapes_are_value_errors(self):
        with self.assertRaisesRegex(ValueError, r"a.shape\[1\] == b.shape\[0\]"):
            tuned.gemm(FakeCudaArray((3, 4)), FakeCudaArray((5, 6)))
        with self.assertRaisesRegex(ValueError, "c must be 3x6"):
            tuned.gemm(FakeCudaArray((3, 4)), FakeCudaArray((4, 6)), FakeCudaArray((6, 3)))

    def test_strides_without_a_unit_dimension_are_a_value_error(self):
        with self.assertRaisesRegex(ValueError, "unit stride"):
            tuned.gemm(FakeCudaArray((4, 4), strides=(32, 8)), FakeCudaArray((4, 4)))

    def test_beta_needs_c(self):
        with self.assertRaisesRegex(ValueError, "beta must be 0"):
            tuned.gemm(FakeCudaArray((2, 2)), FakeCudaArray((2, 2)), beta=1.0)


class Layouts(unittest.TestCase):
    """Which column-major call a product of row-major, column-major and transposed views becomes."""

    def arguments(self, a, b, c):
        return tuned._gemm_arguments(tuned._Matrix(a, "a"), tuned._Matrix(b, "b"),
                                     tuned._Matrix(c, "c"))

    def test_row_major_product_is_the_transposed_column_major_one(self):
        a, b, c = FakeCudaArray((3, 4), pointer=16), FakeCudaArray((4, 5), pointer=32), \
            FakeCudaArray((3, 5), pointer=48)  # C-contiguous
        # C^T (5x3) = B^T A^T: B^T and A^T are column-major with ld 5 and 4.
        self.assertEqual(self.arguments(a, b, c), (0, 0, 5, 3, 4, 32, 5, 16, 4, 48, 5))

    def test_column_major_operands(self):
        a = FakeCudaArray((3, 4), strides=(4, 12), pointer=16)  # Fortran order, ld 3
        b = FakeCudaArray((4, 5), strides=(4, 16), pointer=32)  # ld 4
        c = FakeCudaArray((3, 5), strides=(4, 12), pointer=48)  # ld 3
        self.assertEqual(self.arguments(a, b, c), (0, 0, 3, 5, 4, 16, 3, 32, 4, 48, 3))

    def test_transposed_view_is_used_without_a_copy(self):
        a = FakeCudaArray((3, 4), strides=(4, 12), pointer=16)  # column-major a
        b = FakeCudaArray((4, 5), pointer=32)  # row-major b
        c = FakeCudaArray((3, 5), strides=(4, 12), pointer=48)
        self.assertEqual(self.arguments(a, b, c), (0, 1, 3, 5, 4, 16, 3, 32, 5, 48, 3))

    def test_padded_leading_dimension(self):
        a = FakeCudaArray((3, 4), strides=(4 * 8, 4), pointer=16)  # rows 8 floats apart
        b = FakeCudaArray((4, 5), pointer=32)
        c = FakeCudaArray((3, 5), pointer=48)
        self.assertEqual(self.arguments(a, b, c), (0, 0, 5, 3, 4, 32, 5, 16, 8, 48, 5))


# ----- fake torch ---------------------------------------------------------------------------------

class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


FLOAT32, UINT8, FLOAT64 = FakeDtype("float32"), FakeDtype("uint8"), FakeDtype("float64")


class FakeDevice:
    def __init__(self, index):
        self.type, self.index = ("cpu", None) if index is None else ("cuda", index)

    def __repr__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


class FakeTensor:
    """What tuned reads of a torch tensor (its module says torch): shape, stride() in elements,
    dtype, data_ptr(), is_cuda, get_device(), device, dim()."""

    __module__ = "torch"

    def __init__(self, shape, strides=None, pointer=1 << 20, dtype=FLOAT32, device=0):
        if strides is None:  # row-major
            strides = tuple(int(math.prod(shape[i + 1:])) for i in range(len(shape)))
        self.shape, self._strides, self._pointer = tuple(shape), tuple(strides), pointer
        self.dtype, self.device = dtype, FakeDevice(device)
        self.is_cuda = device is not None
        self.requires_grad = True  # torch refuses __cuda_array_interface__ then: not read

    def data_ptr(self):
        return self._pointer

    def stride(self):
        return self._strides

    def get_device(self):
        return -1 if self.device.index is None else self.device.index

    def dim(self):
        return len(self.shape)

    def t(self):
        rows, cols = self.shape
        return FakeTensor((cols, rows), self._strides[::-1], self._pointer, self.dtype,
                          self.device.index)

    def contiguous(self):
        """A row-major copy at a new address (its source noted), as torch's contiguous()."""
        copy = FakeTensor(self.shape, None, self._pointer + (1 << 40), self.dtype,
                          self.device.index)
        copy.copied_from = self
        return copy

    def __setitem__(self, index, value):  # c[...] = result: noted, as a copy back
        self.assigned = (index, value)


def fake_torch_module():
    """A module standing for torch: the dtypes, Tensor, empty(), the raw stream and device
    getters of torch._C (device 0's current stream is 0x100, device 1's 0x200) and
    torch.cuda.device (which switches torch.current)."""
    torch = types.ModuleType("torch")
    torch.Tensor, torch.float32, torch.uint8, torch.float64 = FakeTensor, FLOAT32, UINT8, FLOAT64
    torch.current = 0
    pointers = itertools.count(1 << 30, 1 << 20)

    def empty(shape, dtype, device):  # device: a FakeDevice or an index, as torch takes
        index = device.index if isinstance(device, FakeDevice) else device
        return FakeTensor(shape, None, next(pointers), dtype, index)

    @contextlib.contextmanager
    def device(place):
        saved, torch.current = torch.current, place.index if isinstance(place, FakeDevice) \
            else place
        try:
            yield
        finally:
            torch.current = saved

    torch.empty = empty
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0x100 * (index + 1),
                                     _cuda_getDevice=lambda: torch.current)
    torch.cuda = types.SimpleNamespace(current_device=lambda: torch.current, device=device)
    return torch


GEMM_PROTOTYPE = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
    ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
    ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)


class GemmRecorder:
    """A C function with tuned_gemm's signature (a ctypes callback) that records its arguments,
    the fake torch's current device, and returns status."""

    def __init__(self, torch, status=0):
        self.calls, self.status, self.torch = [], status, torch
        self.function = GEMM_PROTOTYPE(self._record)
        self.address = ctypes.cast(self.function, ctypes.c_void_p).value

    def _record(self, op_a, op_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, stream):
        self.calls.append((op_a, op_b, m, n, k, alpha[0], A or 0, lda, B or 0, ldb, beta[0],
                           C or 0, ldc, stream or 0, self.torch.current))
        return self.status


class WithFakeTorch(unittest.TestCase):
    """Runs with the fake torch as sys.modules["torch"] and a GemmRecorder as libtuned's
    tuned_gemm (both paths call it); the package's torch binding is reset around each test."""

    native = True

    def setUp(self):
        self.torch = fake_torch_module()
        self.recorder = GemmRecorder(self.torch)
        patches = [mock.patch.dict(sys.modules, {"torch": self.torch}),
                   mock.patch.object(tuned, "_tuned_gemm", self.recorder.function)]
        for patch in patches:
            patch.start()
            self.addCleanup(patch.stop)
        self.addCleanup(tuned._use_native, os.environ.get("TUNED_NATIVE", "1") != "0")
        tuned._use_native(self.native)


def needs_native(test):
    return unittest.skipIf(tuned._native is None, "tuned._native is not built (python3 setup.py "
                           "build_ext --inplace in python/)")(test)


def python_mapping(a, b, c):
    """tuned._gemm_arguments of fake tensors, or None where the Python path cannot map them as
    they are (it copies strided torch tensors; the native path leaves those to it)."""
    try:
        ma, mb, mc = tuned._Matrix(a, "a"), tuned._Matrix(b, "b"), tuned._Matrix(c, "c")
        if ma.cols != mb.rows:
            return None
        return tuned._gemm_arguments(ma, mb, mc)
    except ValueError:
        return None


def stride_patterns(rows, cols):
    """Strides (in elements) of a rows x cols matrix: row-major, column-major, padded both ways,
    no unit stride, odd strides of size-1 dimensions (0, 7, 5), unit both ways."""
    return sorted({(cols, 1), (1, rows), (cols + 3, 1), (1, rows + 2), (2 * cols, 2), (0, 1),
                   (1, 0), (7, 1), (1, 7), (cols, 5), (1, 1)})


_LL = ctypes.POINTER(ctypes.c_longlong)


class FakeTorchReader:
    """A torch reader (tuned/torch_reader.h) made with ctypes: it reads FakeTensors, says device
    0 is current and that its stream is 0x777, and makes no new results; its capsule is what
    build_torch_reader()'s module hands over."""

    READ = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, _LL, _LL, _LL, _LL,
                            ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_long))
    DEVICE = ctypes.CFUNCTYPE(ctypes.c_long)
    STREAM = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_long)
    EMPTY = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_longlong, ctypes.c_longlong,
                             ctypes.c_long)

    class Table(ctypes.Structure):
        _fields_ = [("read", ctypes.c_void_p), ("current_device", ctypes.c_void_p),
                    ("current_stream", ctypes.c_void_p), ("empty", ctypes.c_void_p)]

    def __init__(self):
        self.reads = 0
        self.functions = [self.READ(self._read), self.DEVICE(lambda: 0),
                          self.STREAM(lambda device: 0x777), self.EMPTY(lambda r, c, d: None)]
        self.table = self.Table(*(ctypes.cast(f, ctypes.c_void_p) for f in self.functions))
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                       ctypes.c_void_p]
        self.capsule = new(ctypes.addressof(self.table), b"tuned.torch_reader", None)

    def _read(self, obj, rows, cols, s_row, s_col, pointer, device):
        self.reads += 1
        if not isinstance(obj, FakeTensor) or obj.dtype is not FLOAT32 or not obj.is_cuda \
                or len(obj.shape) != 2:
            return 0
        rows[0], cols[0] = obj.shape
        s_row[0], s_col[0] = obj.stride()
        pointer[0], device[0] = obj.data_ptr(), obj.get_device()
        return 1


@needs_native
class NativeMapping(WithFakeTorch):
    """tuned._native's reading and mapping against the Python path's, on fake tensors."""

    def fast_path(self, current_device=lambda: 0):
        return tuned._native.FastPath(self.recorder.address, FakeTensor, FLOAT32,
                                      lambda index: 0x100 * (index + 1), current_device)

    def test_every_stride_pattern_maps_as_in_python(self):
        fast, compared, refused = self.fast_path(), 0, 0
        pa, pb, pc = 0x7F00_0000_0010, 0x7F00_1000_0020, 0x10_0000
        for m, n, k in [(3, 5, 4), (1, 5, 4), (3, 1, 4), (3, 5, 1), (1, 1, 1), (0, 5, 4),
                        (3, 5, 0)]:
            for sa, sb, sc in itertools.product(stride_patterns(m, k), stride_patterns(k, n),
                                                stride_patterns(m, n)):
                a, b, c = FakeTensor((m, k), sa, pa), FakeTensor((k, n), sb, pb), \
                    FakeTensor((m, n), sc, pc)
                expected = python_mapping(a, b, c)
                self.assertEqual(fast.gemm_arguments(a, b, c), expected,
                                 f"{m}x{n}x{k}, strides a {sa} b {sb} c {sc}")
                compared += 1
                refused += expected is None
        self.assertGreater(refused, 0)
        self.assertGreater(compared - refused, 1000)

    def test_a_torch_reader_replaces_the_python_reads(self):
        reader = FakeTorchReader()
        fast = tuned._native.FastPath(self.recorder.address, FakeTensor, FLOAT32,
                                      lambda index: 0x100, lambda: 0, None, reader.capsule)
        pa, pb, pc = 0x7F00_0000_0010, 0x7F00_1000_0020, 0x10_0000
        for sa, sb, sc in itertools.product(stride_patterns(3, 4), stride_patterns(4, 5),
                                            stride_patterns(3, 5)):
            a, b, c = FakeTensor((3, 4), sa, pa), FakeTensor((4, 5), sb, pb), \
                FakeTensor((3, 5), sc, pc)
            self.assertEqual(fast.gemm_arguments(a, b, c), python_mapping(a, b, c), (sa, sb, sc))
        self.assertGreater(reader.reads, 1000)
        a, b, c = FakeTensor((3, 4)), FakeTensor((4, 5)), FakeTensor((3, 5))
        self.assertEqual(fast.gemm(a, b, c, 1.0, 0.0), 0)
        self.assertEqual(self.recorder.calls[-1][13], 0x777)  # the reader's stream
        self.assertIsNone(fast.gemm(a, b, FakeTensor((3, 5), dtype=FLOAT64), 1.0, 0.0))
        with self.assertRaises(ValueError):  # another capsule is refused by name
            tuned._native.FastPath(self.recorder.address, FakeTensor, FLOAT32, lambda i: 0,
                                   lambda: 0, None, ctypes.pythonapi.PyCapsule_New(
                                       ctypes.addressof(reader.table), b"other", None))

    def test_anything_unusual_is_left_to_python(self):
        fast = self.fast_path()
        a, b, c = FakeTensor((3, 4)), FakeTensor((4, 5)), FakeTensor((3, 5))
        self.assertIsNotNone(fast.gemm_arguments(a, b, c))
        cases = {
            "not a tensor": (FakeCudaArray((3, 4)), b, c),
            "float64": (FakeTensor((3, 4), dtype=FLOAT64), b, c),
            "host memory": tuple(FakeTensor(x.shape, device=None) for x in (a, b, c)),
            "3-D": (a, b, FakeTensor((3, 5, 1))),
            "inner dimensions": (a, FakeTensor((5, 5)), c),
            "c's shape": (a, b, FakeTensor((5, 3))),
            "no unit stride": (FakeTensor((3, 4), (8, 2)), b, c),
            "two devices": (a, b, FakeTensor((3, 5), device=1)),
            "too large": (FakeTensor((3, 2**31), (1, 3)), FakeTensor((2**31, 5), (5, 1)), c),
            "too far apart": (FakeTensor((3, 4), (1, 2**31)), b, c),
            "too wide": (a, FakeTensor((4, 2**31), (1, 4)), FakeTensor((3, 2**31), (1, 3))),
        }
        for what, (x, y, z) in cases.items():
            self.assertIsNone(fast.gemm_arguments(x, y, z), what)
            self.assertIsNone(fast.gemm(x, y, z, 1.0, 0.0), what)
        self.assertEqual(self.recorder.calls, [])

    def test_a_reader_that_raises_is_left_to_python(self):
        class Broken(FakeTensor):
            def stride(self):
                raise RuntimeError("no strides")

        fast = self.fast_path()
        self.assertIsNone(fast.gemm(Broken((3, 4)), FakeTensor((4, 5)), FakeTensor((3, 5)), 1.0,
                                    0.0))

    def test_the_call_gets_alpha_beta_the_stream_and_returns_the_status(self):
        fast = self.fast_path()
        a, b = FakeTensor((3, 4), pointer=0x1000), FakeTensor((4, 5), pointer=0x2000)
        c = FakeTensor((3, 5), pointer=0x3000)
        self.recorder.status = 7
        self.assertEqual(fast.gemm(a, b, c, 2.5, -1), 7)
        # row-major: C^T = B^T A^T, n x m, with the lds of the row-major storage
        self.assertEqual(self.recorder.calls, [(0, 0, 5, 3, 4, 2.5, 0x2000, 5, 0x1000, 4, -1.0,
                                                0x3000, 5, 0x100, 0)])

    def test_a_tensor_off_the_current_device_is_left_to_python(self):
        fast = self.fast_path(current_device=lambda: 0)
        a, b, c = (FakeTensor(shape, device=1) for shape in ((3, 4), (4, 5), (3, 5)))
        self.assertIsNone(fast.gemm(a, b, c, 1.0, 0.0))
        self.assertEqual(self.fast_path(lambda: 1).gemm(a, b, c, 1.0, 0.0), 0)
        self.assertEqual(self.recorder.calls[0][13], 0x200)  # device 1's stream

    def test_bad_alpha_is_left_to_python_and_bad_arguments_are_type_errors(self):
        fast = self.fast_path()
        a, b, c = FakeTensor((3, 4)), FakeTensor((4, 5)), FakeTensor((3, 5))
        self.assertIsNone(fast.gemm(a, b, c, "two", 0.0))
        with self.assertRaises(TypeError):
            fast.gemm(a, b, c)
        with self.assertRaises(TypeError):
            tuned._native.FastPath(self.recorder.address, "not a type", FLOAT32, abs, abs)
        with self.assertRaises(ValueError):
            tuned._native.FastPath(0, FakeTensor, FLOAT32, abs, abs)


class TorchPaths(WithFakeTorch):
    """tuned.gemm on (fake) torch tensors: the same call from the native and the Python path."""

    native = False

    def layouts(self):
        def view(rows, cols, layout, pointer):
            if layout == "row":
                return FakeTensor((rows, cols), None, pointer)
            if layout == "col":
                return FakeTensor((cols, rows), None, pointer).t()
            return FakeTensor((rows, cols), (cols + 3, 1), pointer)  # padded

        for la, lb, lc in itertools.product(("row", "col", "pad"), repeat=3):
            yield view(3, 4, la, 0x1000), view(4, 5, lb, 0x2000), view(3, 5, lc, 0x3000)

    def calls(self, native, device=0):
        tuned._use_native(native)
        self.recorder.calls.clear()
        for a, b, c in self.layouts():
            with mock.patch.object(tuned, "_gemm", wraps=tuned._gemm) as python_path:
                self.assertIs(tuned.gemm(a, b, c, alpha=0.5, beta=2.0), c)
            self.assertEqual(python_path.called, not native or device != self.torch.current)
        return list(self.recorder.calls)

    @needs_native
    def test_native_and_python_paths_make_the_same_calls(self):
        python = self.calls(native=False)
        self.assertEqual(len(python), 27)
        self.assertEqual(self.calls(native=True), python)
        self.assertEqual({call[13:] for call in python}, {(0x100, 0)})  # stream, device

    def test_a_tensor_on_another_device_runs_there_on_its_stream(self):
        for native in (False, True):
            self.torch.current = 0
            tuned._use_native(native)
            self.recorder.calls.clear()
            a, b, c = (FakeTensor(shape, device=1) for shape in ((3, 4), (4, 5), (3, 5)))
            tuned.gemm(a, b, c)
            self.assertEqual(self.recorder.calls[0][13:], (0x200, 1), f"native {native}")
            self.assertEqual(self.torch.current, 0)

    def test_operands_on_two_devices_are_a_value_error(self):
        for native in (False, True):
            tuned._use_native(native)
            with self.assertRaisesRegex(ValueError, "a, b and c must be on one device, got a in "
                                                    "cuda:0, b in cuda:1, c in cuda:0"):
                tuned.gemm(FakeTensor((3, 4)), FakeTensor((4, 5), device=1), FakeTensor((3, 5)))

    def test_errors_come_from_python_on_both_paths(self):
        for native in (False, True):
            tuned._use_native(native)
            with self.assertRaisesRegex(TypeError, r"a must hold float32, got torch.float64"):
                tuned.gemm(FakeTensor((3, 4), dtype=FLOAT64), FakeTensor((4, 5)),
                           FakeTensor((3, 5)))
            with self.assertRaisesRegex(TypeError, "b must be a CUDA tensor, got one on cpu"):
                tuned.gemm(FakeTensor((3, 4)), FakeTensor((4, 5), device=None))
            with self.assertRaisesRegex(ValueError, "c must be 3x5, got 5x3"):
                tuned.gemm(FakeTensor((3, 4)), FakeTensor((4, 5)), FakeTensor((5, 3)))
            self.recorder.status = 1
            with self.assertRaises(tuned.Error) as raised:
                tuned.gemm(FakeTensor((3, 4)), FakeTensor((4, 5)), FakeTensor((3, 5)))
            self.assertEqual(raised.exception.status, 1)
            self.recorder.status = 0

    def test_a_new_result_is_row_major_on_a_device(self):
        for native in (False, True):
            tuned._use_native(native)
            self.recorder.calls.clear()
            c = tuned.gemm(FakeTensor((3, 4), device=1), FakeTensor((4, 5), device=1))
            self.assertEqual((c.shape, c.stride(), c.get_device()), ((3, 5), (5, 1), 1))
            self.assertEqual(self.recorder.calls[0][11:], (c.data_ptr(), 5, 0x200, 1))
            with self.assertRaisesRegex(ValueError, "beta must be 0"):
                tuned.gemm(FakeTensor((3, 4)), FakeTensor((4, 5)), beta=1.0)

    @needs_native
    def test_calls_run_from_the_extension_without_a_python_frame(self):
        tuned._use_native(True)
        a, b, c = FakeTensor((3, 4)), FakeTensor((4, 5)), FakeTensor((3, 5))
        self.assertIsInstance(tuned.gemm, tuned._native.Gemm)
        tuned.gemm(a, b, c)  # binds the fast path (through the Python frame, once)
        with mock.patch.object(tuned, "_fast_gemm", side_effect=AssertionError("Python frame")):
            self.assertIs(tuned.gemm(a, b, c, alpha=0.5, beta=2.0), c)
            self.assertIs(tuned.gemm(a, b, c, beta=1), c)
            made = tuned.gemm(a, b, alpha=3.0)  # a new c, made by the extension
        self.assertEqual((made.shape, made.stride(), made.get_device()), ((3, 5), (5, 1), 0))
        self.assertEqual([call[5] for call in self.recorder.calls], [1.0, 0.5, 1.0, 3.0])
        self.assertEqual([call[10] for call in self.recorder.calls], [0.0, 2.0, 1.0, 0.0])
        self.assertEqual(self.recorder.calls[-1][11:13], (made.data_ptr(), 5))
        with self.assertRaisesRegex(ValueError, "beta must be 0"):
            tuned.gemm(a, b, beta=1.0)  # declined by the extension: Python's error
        self.recorder.status = 1
        with self.assertRaises(tuned.Error) as raised:
            tuned.gemm(a, b, c)
        self.assertEqual(raised.exception.status, 1)
        self.recorder.status = 0
        with self.assertRaisesRegex(TypeError, "gamma"):
            tuned.gemm(a, b, c, gamma=1.0)  # the Python function's own error
        tuned._use_native(False)
        with mock.patch.object(tuned, "_gemm", wraps=tuned._gemm) as python_path:
            tuned.gemm(a, b, c)
        self.assertTrue(python_path.called)

    def test_strided_operands_are_copied_and_a_strided_c_computed_in_a_copy(self):
        for native in (False, True):
            tuned._use_native(native)
            self.recorder.calls.clear()
            a = FakeTensor((3, 4), (8, 2))  # every second element: no unit stride
            b, c = FakeTensor((4, 5)), FakeTensor((3, 5), (10, 2))
            self.assertIs(tuned.gemm(a, b, c, beta=1.0), c)
            call = self.recorder.calls[0]
            # c^T = b^T a^T: B of the call is a's row-major copy, C is c's (which holds c's
            # values for beta) and is assigned back to c.
            self.assertEqual((call[8], call[9]), (a.data_ptr() + (1 << 40), 4))
            self.assertEqual((call[11], call[12]), (c.data_ptr() + (1 << 40), 5))
            index, result = c.assigned
            self.assertEqual((index, result.copied_from), (Ellipsis, c))

    def test_importing_tuned_imports_no_torch(self):
        code = "import sys; sys.path[:0] = %r; import tuned; print('torch' in sys.modules)"
        path = [p for p in sys.path[:1] if p == PACKAGE_ROOT]  # the package tested
        run = subprocess.run([sys.executable, "-c", code % path], capture_output=True,
                             text=True, check=True)
        self.assertEqual(run.stdout.strip(), "False")


# ----- DLPack -------------------------------------------------------------------------------------

_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
_capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_GetName", ctypes.pythonapi))
CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLPackArray:
    """Only __dlpack__ and __dlpack_device__ (as JAX arrays): a hand-made DLManagedTensor in a
    "dltensor" capsule whose destructor records the name it dies with."""

    def __init__(self, shape, strides=None, dtype=(2, 32, 1), device=(2, 0), pointer=1 << 20,
                 byte_offset=0, name=b"dltensor"):
        self._device, self.streams, self.destroyed = device, [], []
        self._name = ctypes.create_string_buffer(name)
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = (ctypes.c_int64 * len(strides))(*strides) if strides else None
        self._managed = _dlpack.DLManagedTensor()
        tensor = self._managed.dl_tensor
        tensor.data, tensor.byte_offset, tensor.ndim = pointer, byte_offset, len(shape)
        tensor.device = _dlpack.DLDevice(*device)
        tensor.dtype = _dlpack.DLDataType(*dtype)
        tensor.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None:
            tensor.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        self._destructor = CAPSULE_DESTRUCTOR(
            lambda capsule: self.destroyed.append(_capsule_name(capsule)))

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return _capsule_new(ctypes.addressof(self._managed), ctypes.addressof(self._name),
                            ctypes.cast(self._destructor, ctypes.c_void_p).value)


class DLPack(WithFakeTorch):
    native = False

    def test_read_like_the_interface(self):
        cases = [  # (shape, DLPack strides in elements, the same in bytes for the interface)
            ((3, 4), None, None), ((3, 4), (1, 3), (4, 12)), ((3, 4), (8, 1), (32, 4)),
            ((1, 4), (9, 1), (36, 4)), ((3, 4), (8, 2), (32, 8))]
        for shape, strides, byte_strides in cases:
            dl = DLPackArray(shape, strides, pointer=0x1000, byte_offset=64)
            cai = FakeCudaArray(shape, byte_strides, pointer=0x1040)
            try:
                expected = tuned._Matrix(cai, "a")
            except ValueError as e:
                with self.assertRaisesRegex(ValueError, re.escape(str(e))):
                    tuned._Matrix(dl, "a")
                continue
            got = tuned._Matrix(dl, "a")
            self.assertEqual((got.pointer, got.rows, got.cols, got.transposed, got.ld),
                             (expected.pointer, expected.rows, expected.cols, expected.transposed,
                              expected.ld), f"{shape} {strides}")
            self.assertEqual((got.device, got.stream), (0, 0))
            self.assertEqual(dl.streams, [1])  # the legacy default stream

    def test_gemm_keeps_the_capsules_until_the_call_and_does_not_consume_them(self):
        a, b = DLPackArray((3, 4), pointer=0x1000), DLPackArray((4, 5), pointer=0x2000)
        c = DLPackArray((3, 5), (1, 3), pointer=0x3000)
        seen = []
        self.recorder.function = GEMM_PROTOTYPE(
            lambda *args: seen.append([x.destroyed[:] for x in (a, b, c)]) or 0)
        with mock.patch.object(tuned, "_tuned_gemm", self.recorder.function):
            tuned.gemm(a, b, c)
        self.assertEqual(seen, [[[], [], []]])  # alive during the call
        self.assertEqual([x.destroyed for x in (a, b, c)], [[b"dltensor"]] * 3)  # then deleted

    def test_gemm_runs_on_the_legacy_stream(self):
        tuned.gemm(DLPackArray((3, 4), pointer=0x1000), DLPackArray((4, 5), pointer=0x2000),
                   DLPackArray((3, 5), (1, 3), pointer=0x3000))
        self.assertEqual(self.recorder.calls, [(1, 1, 3, 5, 4, 1.0, 0x1000, 4, 0x2000, 5, 0.0,
                                                0x3000, 3, 0, 0)])

    def test_errors(self):
        b = DLPackArray((4, 5))
        with self.assertRaisesRegex(TypeError, r"a must be a CUDA array, got one on the host "
                                               r"\(kDLCPU\) \(DLPack\)"):
            tuned.gemm(DLPackArray((3, 4), device=(1, 0)), b, FakeCudaArray((3, 5)))
        with self.assertRaisesRegex(TypeError, "a must be a CUDA array, got one on ROCm"):
            tuned.gemm(DLPackArray((3, 4), device=(10, 0)), b, FakeCudaArray((3, 5)))
        with self.assertRaisesRegex(TypeError, "a must hold float32, got DLPack dtype code 2, 64 "
                                               "bits, 1 lanes"):
            tuned.gemm(DLPackArray((3, 4), dtype=(2, 64, 1)), b, FakeCudaArray((3, 5)))
        with self.assertRaisesRegex(ValueError, r"a must be 2-D, got 3-D \(shape \(3, 4, 1\)\)"):
            tuned.gemm(DLPackArray((3, 4, 1)), b, FakeCudaArray((3, 5)))
        with self.assertRaisesRegex(TypeError, "capsule named b'used_dltensor'"):
            tuned.gemm(DLPackArray((3, 4), name=b"used_dltensor"), b, FakeCudaArray((3, 5)))
        with self.assertRaisesRegex(TypeError, "pass c: cannot make a result array for "
                                               "DLPackArray"):
            tuned.gemm(DLPackArray((3, 4)), b)
        with self.assertRaisesRegex(ValueError, r"a and b must be on one device, got a in cuda:0, "
                                                r"b in cuda:1"):
            tuned.describe(DLPackArray((3, 4)), DLPackArray((4, 5), device=(2, 1)))
        with self.assertRaisesRegex(TypeError, "a must be a CUDA array .*got list"):
            tuned.gemm([[1.0]], b, FakeCudaArray((1, 5)))


# ----- transpose ----------------------------------------------------------------------------------

class Transpose(unittest.TestCase):
    def arguments(self, a, out):
        return tuned._transpose_arguments(tuned._Matrix(a, "a"), out)[1]

    def test_row_major_a_is_the_column_major_transpose(self):
        a = FakeCudaArray((3, 5), pointer=0x1000)  # row-major, ld 5
        out = FakeCudaArray((5, 3), pointer=0x2000)  # row-major, ld 3
        self.assertEqual(self.arguments(a, out), (5, 3, 0x1000, 5, 0x2000, 3))
        padded = FakeCudaArray((3, 5), strides=(4 * 8, 4), pointer=0x1000)
        self.assertEqual(self.arguments(padded, out), (5, 3, 0x1000, 8, 0x2000, 3))

    def test_column_major_a(self):
        a = FakeCudaArray((3, 5), strides=(4, 12), pointer=0x1000)  # ld 3
        out = FakeCudaArray((5, 3), strides=(4, 4 * 6), pointer=0x2000)  # ld 6
        self.assertEqual(self.arguments(a, out), (3, 5, 0x1000, 3, 0x2000, 6))

    def test_a_vector_takes_the_order_out_has(self):
        a = FakeCudaArray((1, 5), pointer=0x1000)  # both orders
        out = FakeCudaArray((5, 1), strides=(4 * 4, 4), pointer=0x2000)  # row-major only
        self.assertEqual(self.arguments(a, out), (5, 1, 0x1000, 5, 0x2000, 4))

    def test_a_describe_without_out_assumes_a_result_stored_like_a(self):
        row, col = FakeCudaArray((3, 5)), FakeCudaArray((3, 5), strides=(4, 12))
        self.assertEqual(self.arguments(row, None)[:2], (5, 3))
        self.assertEqual(self.arguments(col, None)[:2], (3, 5))

    def test_errors(self):
        a = FakeCudaArray((3, 5), pointer=0x1000)
        with self.assertRaisesRegex(ValueError, "a is row-major and out column-major: a.T stored "
                                                "in the opposite order to a is a plain copy"):
            tuned.transpose(a, FakeCudaArray((5, 3), strides=(4, 20)))
        with self.assertRaisesRegex(ValueError, r"out must be 5x3 \(a transposed\), got 3x5"):
            tuned.transpose(a, FakeCudaArray((3, 5)))
        with self.assertRaisesRegex(TypeError, "out must hold float32, got typestr '<f8'"):
            tuned.transpose(a, FakeCudaArray((5, 3), typestr="<f8"))
        with self.assertRaisesRegex(TypeError, "a must hold float32, got typestr '|u1'"):
            tuned.transpose(FakeCudaArray((3, 5), typestr="|u1"))
        with self.assertRaisesRegex(ValueError, "a must be 2-D, got 1-D"):
            tuned.transpose(FakeCudaArray((3,)))
        with self.assertRaisesRegex(ValueError, "out is read-only"):
            tuned.transpose(a, FakeCudaArray((5, 3), readonly=True))
        with self.assertRaisesRegex(TypeError, "pass out: cannot make a result array for "
                                               "FakeCudaArray"):
            tuned.transpose(a)
        with self.assertRaisesRegex(TypeError, "a must be a CUDA array, got one on the host"):
            tuned.transpose(DLPackArray((3, 5), device=(1, 0)), FakeCudaArray((5, 3)))

    @unittest.skipIf(has_gpu(), "a GPU is present: the no-device error cannot be seen")
    def test_the_library_refuses_overlap_and_needs_a_device(self):
        with self.assertRaisesRegex(tuned.Error, "overlap"):
            tuned.transpose(FakeCudaArray((3, 5)), FakeCudaArray((5, 3)))
        for call in (lambda: tuned.transpose(FakeCudaArray((3, 5), pointer=0x1000),
                                             FakeCudaArray((5, 3), pointer=0x2000)),
                     lambda: tuned.describe_transpose(FakeCudaArray((3, 5)))):
            with self.assertRaises(tuned.Error) as raised:
                call()
            self.assertEqual(raised.exception.status, 2)


# ----- entropy ------------------------------------------------------------------------------------

def entropy_reference(value, rows, cols, radius):
    """Shannon entropy (natural log) of the clipped (2 radius + 1)^2 window around each element of
    the rows x cols matrix whose (i, j) element is value(i, j)."""
    result = []
    for i in range(rows):
        row = []
        for j in range(cols):
            counts = collections.Counter(
                value(y, x) for y in range(max(0, i - radius), min(rows, i + radius + 1))
                for x in range(max(0, j - radius), min(cols, j + radius + 1)))
            total = sum(counts.values())
            row.append(-sum(n / total * math.log(n / total) for n in counts.values()))
        result.append(row)
    return result


class HostArray:
    """A host matrix in a ctypes buffer with __array_interface__ (what NumPy arrays have)."""

    def __init__(self, rows, cols, kind=ctypes.c_float, typestr="<f4", order="C", pad=0,
                 readonly=False):
        self.rows, self.cols, self.order = rows, cols, order
        self.ld = (cols if order == "C" else rows) + pad
        self.buffer = (kind * (self.ld * (rows if order == "C" else cols)))()
        size = ctypes.sizeof(kind)
        strides = (self.ld * size, size) if order == "C" else (size, self.ld * size)
        self.__array_interface__ = {"shape": (rows, cols), "typestr": typestr, "version": 3,
                                    "data": (ctypes.addressof(self.buffer), readonly),
                                    "strides": strides}

    def _index(self, i, j):
        return i * self.ld + j if self.order == "C" else j * self.ld + i

    def __getitem__(self, ij):
        return self.buffer[self._index(*ij)]

    def __setitem__(self, ij, value):
        self.buffer[self._index(*ij)] = value


class Entropy(unittest.TestCase):
    rows, cols, radius, levels = 7, 13, 2, 5

    def setUp(self):
        generator = random.Random(30)
        self.values = [[generator.randrange(self.levels) for _ in range(self.cols)]
                       for _ in range(self.rows)]
        self.expected = entropy_reference(lambda i, j: self.values[i][j], self.rows, self.cols,
                                          self.radius)

    def host(self, order="C", kind=ctypes.c_float, typestr="<f4", pad=0):
        x = HostArray(self.rows, self.cols, kind, typestr, order, pad)
        for i, j in itertools.product(range(self.rows), range(self.cols)):
            x[i, j] = self.values[i][j]
        return x

    def assert_close(self, got, expected, what):
        for i, j in itertools.product(range(len(expected)), range(len(expected[0]))):
            self.assertAlmostEqual(got(i, j), expected[i][j], delta=1e-5, msg=f"{what} ({i}, {j})")

    def test_host_arrays_in_both_orders_and_types_match_the_reference(self):
        for order, kind, typestr, pad in [("C", ctypes.c_float, "<f4", 0),
                                          ("F", ctypes.c_float, "<f4", 3),
                                          ("C", ctypes.c_uint8, "|u1", 5),
                                          ("F", ctypes.c_uint8, "|u1", 0)]:
            x = self.host(order, kind, typestr, pad)
            out = HostArray(self.rows, self.cols, order=order, pad=1)
            for path in ("cpu", "auto"):
                self.assertIs(tuned.entropy(x, self.radius, self.levels, out, path=path), out)
                self.assert_close(lambda i, j: out[i, j], self.expected,
                                  f"{order} {typestr} pad {pad} {path}")

    @unittest.skipIf(numpy is None, "numpy is not installed: the NumPy host entropy is not "
                                    "checked (apt-get install python3-numpy, /usr/bin/python3)")
    def test_numpy_arrays_match_the_reference(self):
        x = numpy.array(self.values, dtype=numpy.float32)
        expected = numpy.array(self.expected)
        padded = numpy.zeros((self.rows, self.cols + 4), dtype=numpy.float32)
        padded[:, :self.cols] = x
        for name, array, reference in [
                ("row-major", x, expected), ("column-major", numpy.asfortranarray(x), expected),
                ("uint8", x.astype(numpy.uint8), expected),
                ("padded view", padded[:, :self.cols], expected), ("transposed view", x.T,
                                                                   expected.T)]:
            out = tuned.entropy(array, self.radius, self.levels, path="cpu")
            self.assertEqual((out.dtype, out.shape), (numpy.float32, array.shape), name)
            self.assertEqual(out.flags.f_contiguous, array.flags.f_contiguous
                             and not array.flags.c_contiguous, name)
            self.assertLess(numpy.abs(out - reference).max(), 1e-5, name)
        out = numpy.full(x.shape, numpy.nan, dtype=numpy.float32)
        self.assertIs(tuned.entropy(x, 0, self.levels, out, path="cpu"), out)
        self.assertEqual(numpy.abs(out).max(), 0)  # one value per window
        with self.assertRaisesRegex(ValueError, "x is row-major and out column-major"):
            tuned.entropy(x, self.radius, self.levels, numpy.empty_like(x, order="F"))
        with self.assertRaisesRegex(ValueError, "out is read-only"):
            out.flags.writeable = False
            tuned.entropy(x, self.radius, self.levels, out)

    def test_errors(self):
        x, out = self.host(), HostArray(self.rows, self.cols)
        entropy = tuned.entropy
        with self.assertRaisesRegex(TypeError, "x must hold float32 or uint8, got typestr '<f8'"):
            entropy(HostArray(7, 13, ctypes.c_double, "<f8"), 2, 5, out)
        with self.assertRaisesRegex(TypeError, "out must hold float32, got typestr '|u1'"):
            entropy(x, 2, 5, HostArray(7, 13, ctypes.c_uint8, "|u1"))
        with self.assertRaisesRegex(ValueError, "x must be 2-D, got 3-D"):
            entropy(FakeCudaArray((7, 13, 1)), 2, 5, out)
        with self.assertRaisesRegex(ValueError, "out must be 7x13 like x, got 13x7"):
            entropy(x, 2, 5, HostArray(13, 7))
        with self.assertRaisesRegex(ValueError, "x is row-major and out column-major: out must be "
                                                "stored in x's order"):
            entropy(x, 2, 5, HostArray(7, 13, order="F"))
        with self.assertRaisesRegex(ValueError, "needs a unit stride"):
            entropy(FakeCudaArray((7, 13), strides=(104, 8)), 2, 5, FakeCudaArray((7, 13)))
        with self.assertRaisesRegex(ValueError, "x and out must be on one device, got x in host "
                                                "memory, out in cuda:1"):
            entropy(x, 2, 5, DLPackArray((7, 13), device=(2, 1)))
        with self.assertRaisesRegex(ValueError, "path must be one of"):
            entropy(x, 2, 5, out, path="fast")
        with self.assertRaisesRegex(ValueError, "path='cpu' and gpus=0 choose where a host array"):
            entropy(FakeCudaArray((7, 13), pointer=0x1000), 2, 5,
                    FakeCudaArray((7, 13), pointer=0x2000), path="cpu")
        with self.assertRaisesRegex(TypeError, "radius must be an integer, got float"):
            entropy(x, 2.0, 5, out)
        with self.assertRaisesRegex(TypeError, "pass out: cannot make a result array for "
                                               "HostArray"):
            entropy(x, 2, 5)
        with self.assertRaisesRegex(TypeError, "x must be a CUDA or host array"):
            entropy([[1.0]], 2, 5, out)

    def test_the_library_checks_values_and_ranges(self):
        out = HostArray(self.rows, self.cols)
        for value, levels, radius, message in [(7, 5, 2, "levels"), (1.5, 5, 2, "integer"),
                                               (1, 5, 8, "radius"), (1, 1, 2, "levels")]:
            x = self.host()
            x[3, 4] = value
            with self.assertRaisesRegex(tuned.Error, message) as raised:
                tuned.entropy(x, radius, levels, out, path="cpu")
            self.assertEqual(raised.exception.status, 1, str(raised.exception))

    def test_a_bad_value_is_named_by_its_python_index(self):
        for order in ("C", "F"):
            x = self.host(order)
            x[3, 4] = 7
            with self.assertRaisesRegex(tuned.Error, r"^x\[3, 4\] = 7: values must be integers"):
                tuned.entropy(x, self.radius, self.levels, HostArray(7, 13, order=order),
                              path="cpu")


@unittest.skipIf(has_gpu(), "a GPU is present: the no-device error cannot be seen")
class WithoutGpu(unittest.TestCase):
    def test_a_call_without_a_device_is_a_tuned_error(self):
        with self.assertRaises(tuned.Error) as raised:
            tuned.gemm(FakeCudaArray((2, 2)), FakeCudaArray((2, 2)), FakeCudaArray((2, 2)))
        self.assertEqual(raised.exception.status, 2)  # TUNED_STATUS_NO_DEVICE
        self.assertIn("no CUDA device", str(raised.exception))


class ErrorsForUsers(unittest.TestCase):
    """A failed call's message says what failed, not where in libtuned's sources (issue 70)."""

    def test_no_device_error_names_the_cause_and_no_source_location(self):
        # Every GPU hidden (a machine without one gets the no-driver message instead): run apart,
        # as CUDA reads CUDA_VISIBLE_DEVICES once per process.
        script = ("import sys\n"
                  "if not INSTALLED: sys.path.insert(0, sys.argv[1])\n"
                  "import tuned\n"
                  "class A:\n"
                  "    __cuda_array_interface__ = {'shape': (2, 2), 'typestr': '<f4', 'data': "
                  "(1 << 20, False), 'strides': None, 'version': 3}\n"
                  "try:\n"
                  "    tuned.gemm(A(), A(), A())\n"
                  "except tuned.Error as e:\n"
                  "    print(e.status, e, sep='\\n')\n").replace("INSTALLED", str(INSTALLED))
        run = subprocess.run([sys.executable, "-c", script, PACKAGE_ROOT], capture_output=True,
                             text=True, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
        self.assertEqual(run.returncode, 0, run.stderr)
        status, message = run.stdout.rstrip("\n").split("\n", 1)
        self.assertEqual(status, "2", message)  # TUNED_STATUS_NO_DEVICE
        self.assertRegex(message, r"^no CUDA device: (no NVIDIA driver is loaded|no GPU is visible "
                                  r"\(CUDA_VISIBLE_DEVICES=''\))")
        self.assertNotRegex(message, r"\w\.(cpp|hpp|cu|c|h):\d+")
        self.assertNotIn("insufficient", message)
        self.assertEqual(message.count("no CUDA device"), 1, message)


class OfflineTuning(unittest.TestCase):
    """The recorder's Python face and tuned.autotune's handling of the autotune program (a stand-in
    script here: the real one needs a GPU)."""

    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="tuned-test-")
        self.addCleanup(shutil.rmtree, self.folder, True)

    def program(self, body):
        """An executable autotune stand-in running the shell body ($@: its arguments)."""
        path = os.path.join(self.folder, "autotune")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(path, 0o755)
        return path

    def test_set_record_refuses_a_folder_naming_it_and_recording_restores(self):
        with self.assertRaises(tuned.Error) as raised:
            tuned.set_record(self.folder)
        self.assertIn(f"cannot record problems into '{self.folder}'", str(raised.exception))
        self.assertEqual(raised.exception.status, 1)  # invalid argument
        path = os.path.join(self.folder, "shapes.txt")
        with tuned.recording(path) as recorded:
            self.assertEqual((recorded, tuning._record_path), (path, path))
            self.assertTrue(os.path.exists(path))  # created at once, empty
        self.assertIsNone(tuning._record_path)

    def test_autotune_passes_its_arguments_and_returns_the_rows(self):
        arguments = os.path.join(self.folder, "arguments")
        rows = [{"op": "gemm", "layout": "NN", "shape": "8x8x8", "config": "BM=16"}]
        body = ('printf "%s\\n" "$@" > ' + arguments +
                '; for a in "$@"; do case "$a" in --json=*) json="${a#--json=}" ;; esac; done; '
                "printf '%s' '" + json.dumps({"device": "fake", "rows": rows}) + "' > \"$json\"")
        with mock.patch.dict(os.environ, {"TUNED_AUTOTUNE": self.program(body)}):
            got = tuned.autotune(shapes=["8x8x8", (16, 16, 16)], layout="NN", budget=2,
                                 db=os.path.join(self.folder, "t.db"), quiet=True)
        self.assertEqual(got, rows)
        with open(arguments) as f:
            passed = f.read().split("\n")
        # (test_tuning.py checks every keyword; values are passed as --flag=value)
        for expected in ("--shape=8x8x8", "--shape=16x16x16", "--layout=NN", "--budget=2",
                         "--db=" + os.path.join(self.folder, "t.db")):
            self.assertIn(expected, passed)

    def test_autotune_errors(self):
        with mock.patch.dict(os.environ, {"TUNED_AUTOTUNE": self.program(
                "echo 'autotune: --shape: bad shape' >&2; exit 2")}):
            with self.assertRaisesRegex(ValueError, "autotune: --shape: bad shape"):
                tuned.autotune(shapes=["1x1x1"], quiet=True)
        with mock.patch.dict(os.environ, {"TUNED_AUTOTUNE": self.program(
                "echo 'autotune: no CUDA device' >&2; exit 1")}):
            with self.assertRaisesRegex(RuntimeError, "exit 1.*no CUDA device"):
                tuned.autotune(shapes=["1x1x1"], quiet=True)
        with self.assertRaisesRegex(ValueError, "shapes or shapes_from"):
            tuned.autotune(shapes=["1x1x1"], shapes_from="x.txt")
        bundled = os.path.join(os.path.dirname(tuning.__file__), "bin", "autotune")
        if os.path.exists(bundled):
            self.skipTest(f"{bundled} is bundled")  # (after the checks above)
        empty = os.path.join(self.folder, "empty")
        os.mkdir(empty)
        with mock.patch.dict(os.environ, {"TUNED_AUTOTUNE": os.path.join(empty, "autotune"),
                                          "PATH": empty}):
            with self.assertRaisesRegex(FileNotFoundError, "TUNED_AUTOTUNE"):
                tuned.autotune(shapes=["1x1x1"])


if __name__ == "__main__":
    unittest.main()
