"""The Python package without a GPU: import, version, every argument error, and a clear
tuned.Error where the library needs a device. Run: TUNED_LIBRARY=.../libtuned.so
python3 -m unittest discover -s python/tests."""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tuned  # noqa: E402


class FakeCudaArray:
    """Only __cuda_array_interface__: what the package reads of torch, CuPy or Numba arrays."""

    def __init__(self, shape, strides=None, typestr="<f4", pointer=1 << 20):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (pointer, False), "strides": strides,
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
        with self.assertRaisesRegex(ValueError, "a must be 2-D, got 3-D"):
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


@unittest.skipIf(has_gpu(), "a GPU is present: the no-device error cannot be seen")
class WithoutGpu(unittest.TestCase):
    def test_a_call_without_a_device_is_a_tuned_error(self):
        with self.assertRaises(tuned.Error) as raised:
            tuned.gemm(FakeCudaArray((2, 2)), FakeCudaArray((2, 2)), FakeCudaArray((2, 2)))
        self.assertEqual(raised.exception.status, 2)  # TUNED_STATUS_NO_DEVICE
        self.assertIn("no CUDA device", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
