"""The Python package on a GPU (torch): every call against a higher-precision reference on fresh
random inputs with the output poisoned first, odd shapes, every stride pattern, non-contiguous
inputs, DLPack and __cuda_array_interface__ producers, the torch op eager / compiled / captured,
and the offline tuning workflow (record, autotune --shapes-from, rerun picks "exact").

Run: TUNED_LIBRARY=.../libtuned.so TUNED_AUTOTUNE=.../autotune python3 -m unittest discover -s
python/gpu_tests -v. Without torch or a CUDA device every test reports itself skipped."""
import os
import sys
import tempfile
import unittest
from unittest import mock

INSTALLED = os.environ.get("TUNED_TEST_INSTALLED") == "1"
PACKAGE_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
if not INSTALLED:  # else the installed package is tested
    sys.path.insert(0, PACKAGE_ROOT)
import tuned  # noqa: E402

try:
    import torch
    _SKIP = None if torch.cuda.is_available() else "no CUDA device visible to torch"
except ImportError:
    torch = None
    _SKIP = "torch is not installed"

ODD_SHAPES = [(1, 1, 1), (7, 127, 1000), (1000, 7, 127), (127, 1000, 7), (4097, 33, 65),
              (1, 4097, 127)]


def storage(x, layout):
    """x's values stored row-major, column-major, row-major with a padded leading dimension, or
    as a strided (non-contiguous) slice of a larger array."""
    if layout == "row":
        return x.contiguous()
    if layout == "col":
        return x.t().contiguous().t()
    if layout == "pad":
        padded = torch.empty((x.shape[0], x.shape[1] + 3), device=x.device, dtype=x.dtype)
        padded[:, : x.shape[1]] = x
        return padded[:, : x.shape[1]]
    assert layout == "strided"  # every second element of each row: no unit stride anywhere
    wide = torch.empty((x.shape[0], 2 * x.shape[1]), device=x.device, dtype=x.dtype)
    wide[:, ::2] = x
    return wide[:, ::2]


def normwise_error(y, exact):
    return ((y.double() - exact).norm() / max(exact.norm().item(), 1e-300)).item()


def poisoned(rows, cols, layout):
    return storage(torch.full((rows, cols), float("nan"), device="cuda"), layout)


class CudaArrayOnly:
    """Only __cuda_array_interface__ (what CuPy and Numba arrays offer)."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.__cuda_array_interface__ = tensor.__cuda_array_interface__


class DLPackOnly:
    """Only the DLPack protocol (what JAX arrays offer)."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


@unittest.skipIf(_SKIP, _SKIP)
class Gemm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.manual_seed(30)

    def check(self, a64, b64, c, layouts, alpha=1.0, beta=0.0, c64=None):
        exact = alpha * (a64 @ b64) + (beta * c64 if beta else 0)
        a, b = storage(a64.float(), layouts[0]), storage(b64.float(), layouts[1])
        with torch.cuda.stream(self.stream):  # the producer's current stream
            tuned.gemm(a, b, c, alpha=alpha, beta=beta)
        self.stream.synchronize()
        ours = normwise_error(c, exact)
        theirs = normwise_error(alpha * (a @ b) + (beta * c64.float() if beta else 0), exact)
        self.assertTrue(torch.isfinite(c).all().item(), layouts)
        self.assertLessEqual(ours, 2 * theirs + 1e-7, f"{layouts}: {ours:.2e} vs {theirs:.2e}")

    def setUp(self):
        self.stream = torch.cuda.Stream()

    def test_every_stride_pattern_on_odd_shapes(self):
        for m, n, k in ODD_SHAPES:
            a64 = torch.rand((m, k), device="cuda", dtype=torch.float64) * 2 - 1
            b64 = torch.rand((k, n), device="cuda", dtype=torch.float64) * 2 - 1
            for la in ("row", "col", "pad", "strided"):
                for lb in ("row", "col", "pad", "strided"):
                    for lc in ("row", "col", "strided"):
                        with self.subTest(shape=(m, n, k), a=la, b=lb, c=lc):
                            self.check(a64, b64, poisoned(m, n, lc), (la, lb, lc))

    def test_alpha_and_beta_read_c(self):
        m, n, k = 127, 1000, 7
        a64 = torch.rand((m, k), device="cuda", dtype=torch.float64)
        b64 = torch.rand((k, n), device="cuda", dtype=torch.float64)
        c64 = torch.rand((m, n), device="cuda", dtype=torch.float64)
        for lc in ("row", "col", "strided"):
            with self.subTest(c=lc):
                self.check(a64, b64, storage(c64.float(), lc), ("row", "col", lc), alpha=-0.5,
                           beta=2.0, c64=c64)

    def test_a_new_result_and_other_producers(self):
        a = torch.randn((127, 1000), device="cuda")
        b = torch.randn((1000, 33), device="cuda")
        exact = a.double() @ b.double()
        c = tuned.gemm(a, b)
        self.assertEqual((c.shape, c.dtype, c.device), ((127, 33), torch.float32, a.device))
        self.assertLess(normwise_error(c, exact), 1e-6)
        for wrap in (CudaArrayOnly, DLPackOnly):
            with self.subTest(producer=wrap.__name__):
                out = torch.full((127, 33), float("nan"), device="cuda")
                tuned.gemm(wrap(a), wrap(b), wrap(out))
                torch.cuda.synchronize()
                self.assertLess(normwise_error(out, exact), 1e-6)

    def test_describe_names_origin_and_config(self):
        a, b = torch.randn((1000, 127), device="cuda"), torch.randn((127, 7), device="cuda")
        text = tuned.describe(a, b)
        self.assertRegex(text, r"^(exact|first-use|twin \S+|shipped|model|nearest \S+|default): "
                               r"\S+=\d+")

    def test_argument_errors(self):
        a = torch.randn((8, 8), device="cuda")
        with self.assertRaisesRegex(TypeError, "float32"):
            tuned.gemm(a.double(), a)
        with self.assertRaisesRegex(TypeError, "CUDA"):
            tuned.gemm(a.cpu(), a)
        with self.assertRaisesRegex(ValueError, r"2-D or 3-D \(a batch\), got 4-D"):
            tuned.gemm(a[None, None], a)
        with self.assertRaisesRegex(ValueError, r"a\.shape\[1\] == b\.shape\[0\]"):
            tuned.gemm(a, torch.randn((7, 8), device="cuda"))
        with self.assertRaisesRegex(ValueError, "c must be 8x8"):
            tuned.gemm(a, a, torch.empty((8, 7), device="cuda"))


def _module(name):
    try:
        return __import__(name)
    except ImportError:
        return None


@unittest.skipIf(_SKIP, _SKIP)
class OtherProducers(unittest.TestCase):
    """CuPy arrays (__cuda_array_interface__, results made as CuPy arrays) and JAX arrays
    (DLPack), where those libraries are installed."""

    def test_cupy_arrays_in_and_out(self):
        cupy = _module("cupy")
        if cupy is None:
            self.skipTest("CuPy is not installed")
        a = cupy.random.rand(127, 1000, dtype=cupy.float64)
        b = cupy.asfortranarray(cupy.random.rand(1000, 33, dtype=cupy.float64))
        c = tuned.gemm(a.astype(cupy.float32), b.astype(cupy.float32))
        self.assertIsInstance(c, cupy.ndarray)
        cupy.cuda.Stream.null.synchronize()
        exact = a @ b
        self.assertLess(float(cupy.linalg.norm(c - exact) / cupy.linalg.norm(exact)), 1e-6)
        t = tuned.transpose(a.astype(cupy.float32))
        cupy.cuda.Stream.null.synchronize()
        self.assertTrue(bool((t == a.astype(cupy.float32).T).all()))

    def test_jax_arrays_in_through_dlpack(self):
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU
        jax = _module("jax")
        if jax is None or not any(d.platform == "gpu" for d in jax.devices()):
            self.skipTest("JAX with a GPU is not installed")
        import jax.numpy as jnp
        a = jnp.asarray(torch.randn((509, 127)).numpy())
        b = jnp.asarray(torch.randn((127, 77)).numpy()).T.T  # a JAX array on the GPU
        c = torch.full((509, 77), float("nan"), device="cuda")
        tuned.gemm(a, b, c)  # inputs read through DLPack, on the legacy default stream
        torch.cuda.synchronize()
        exact = torch.tensor(jax.device_get(a)).double() @ \
            torch.tensor(jax.device_get(b)).double()
        self.assertLess(normwise_error(c.cpu(), exact), 1e-6)
        with self.assertRaisesRegex(TypeError, "pass c"):
            tuned.gemm(a, b)  # JAX arrays are immutable: no result is made for them


@unittest.skipIf(_SKIP, _SKIP)
class Transpose(unittest.TestCase):
    def test_odd_shapes_both_storage_orders_exactly(self):
        for rows, cols in [(1, 1), (7, 4097), (4097, 7), (127, 1000), (1000, 127)]:
            x = torch.randn((rows, cols), device="cuda")
            for layout in ("row", "col", "pad"):
                with self.subTest(shape=(rows, cols), layout=layout):
                    a = storage(x, layout)
                    out = tuned.transpose(a)
                    torch.cuda.synchronize()
                    self.assertTrue(torch.equal(out, x.t()))
                    given = poisoned(cols, rows, "col" if layout == "col" else "row")
                    tuned.transpose(a, given)
                    torch.cuda.synchronize()
                    self.assertTrue(torch.equal(given, x.t()))


def entropy_reference(x, radius, levels):
    """The local entropy in FP64: per level, the count in the clipped window is a box filter of
    the indicator with zero padding; the window's size is the box filter of ones."""
    x = x.double()[None, None]
    box = torch.ones((1, 1, 2 * radius + 1, 2 * radius + 1), dtype=torch.float64,
                     device=x.device)
    conv = torch.nn.functional.conv2d
    size = conv(torch.ones_like(x), box, padding=radius)
    h = torch.zeros_like(x)
    for level in range(levels):
        p = conv((x == level).double(), box, padding=radius) / size
        h -= torch.where(p > 0, p * torch.log(p.clamp_min(1e-300)), torch.zeros_like(p))
    return h[0, 0]


@unittest.skipIf(_SKIP, _SKIP)
class Entropy(unittest.TestCase):
    def test_device_and_host_arrays_against_fp64(self):
        torch.manual_seed(31)
        for rows, cols, radius, levels in [(1, 1, 0, 2), (7, 127, 3, 16), (1000, 127, 2, 5),
                                           (127, 1000, 7, 256)]:
            values = torch.randint(0, levels, (rows, cols), device="cuda")
            exact = entropy_reference(values, radius, levels)
            inputs = {"float32 row": values.float(), "float32 col": storage(values.float(), "col"),
                      "uint8 row": values.to(torch.uint8)}
            for name, x in inputs.items():
                with self.subTest(shape=(rows, cols, radius, levels), input=name):
                    out = tuned.entropy(x, radius, levels)
                    torch.cuda.synchronize()
                    self.assertLess((out.double() - exact).abs().max().item(), 1e-5)
            try:
                import numpy  # noqa: F401
            except ImportError:
                continue
            host = values.cpu().numpy().astype("float32")
            for path in ("cpu", "gpu", "auto"):
                with self.subTest(shape=(rows, cols, radius, levels), host_path=path):
                    out = tuned.entropy(host, radius, levels, path=path)
                    error = abs(torch.from_numpy(out).double() - exact.cpu()).max().item()
                    self.assertLess(error, 1e-5)

    def test_a_value_out_of_range_is_a_tuned_error(self):
        x = torch.zeros((7, 7), device="cuda")
        x[3, 4] = 16
        with self.assertRaisesRegex(tuned.Error, "16"):
            tuned.entropy(x, 1, 16)


@unittest.skipIf(_SKIP, _SKIP)
class TorchOp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import tuned.torch_op  # noqa: F401  registers torch.ops.tuned.mm
        torch.backends.cuda.matmul.allow_tf32 = False

    def block(self):
        torch.manual_seed(32)
        layers = torch.nn.Sequential(torch.nn.Linear(127, 1000), torch.nn.GELU(),
                                     torch.nn.Linear(1000, 33)).cuda()
        exact = torch.nn.Sequential(torch.nn.Linear(127, 1000), torch.nn.GELU(),
                                    torch.nn.Linear(1000, 33)).cuda().double()
        exact.load_state_dict(layers.state_dict())
        swapped = torch.nn.Sequential(torch.nn.Linear(127, 1000), torch.nn.GELU(),
                                      torch.nn.Linear(1000, 33)).cuda()
        swapped.load_state_dict(layers.state_dict())
        return layers, exact, tuned.torch_op.swap_linear(swapped)

    def assert_within_contract(self, y, reference, exact):
        ours, theirs = normwise_error(y, exact), normwise_error(reference, exact)
        self.assertLessEqual(ours, 2 * theirs + 1e-7, f"{ours:.2e} vs torch {theirs:.2e}")

    def test_eager_compiled_and_graph_replay(self):
        layers, exact, swapped = self.block()
        x = torch.randn((4, 509, 127), device="cuda")
        with torch.no_grad():
            reference, expected = layers(x), exact(x.double())
            self.assert_within_contract(swapped(x), reference, expected)
            compiled = torch.compile(swapped, fullgraph=True)  # a graph break fails
            self.assert_within_contract(compiled(x), reference, expected)
            static_x = x.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                swapped(static_x)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_y = swapped(static_x)
            static_x.copy_(torch.randn_like(x))
            graph.replay()
            torch.cuda.synchronize()
            self.assert_within_contract(static_y, layers(static_x), exact(static_x.double()))

    def test_routing_sends_fp32_products_to_tuned_and_leaves_the_rest(self):
        layers, exact, _ = self.block()
        x = torch.randn((3, 333, 127), device="cuda")
        calls = []
        original = tuned.torch_op._products.launch

        def counting(*args, **kwargs):
            calls.append(1)
            return original(*args, **kwargs)
        with mock.patch.object(tuned.torch_op._products, "launch", counting):
            with torch.no_grad(), tuned.torch_op.routing():
                y = layers(x)  # F.linear twice
                a, b = torch.randn((7, 127), device="cuda"), torch.randn((127, 1000), device="cuda")
                z = a @ b
                torch.mm(a.double(), b.double())  # not float32: torch's own
        self.assertEqual(len(calls), 3)
        with torch.no_grad():
            self.assert_within_contract(y, layers(x), exact(x.double()))
        self.assertLess(normwise_error(z, a.double() @ b.double()), 1e-6)

    def test_a_new_shape_first_met_inside_a_capture(self):
        a, b = torch.randn((333, 77), device="cuda"), torch.randn((77, 555), device="cuda")
        c = torch.full((333, 555), float("nan"), device="cuda")
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            tuned.gemm(a, b, c)
        graph.replay()
        torch.cuda.synchronize()
        self.assertLess(normwise_error(c, a.double() @ b.double()), 1e-6)

    def test_gradients_match_torch(self):
        a = torch.randn((127, 33), device="cuda", requires_grad=True)
        b = torch.randn((33, 1000), device="cuda", requires_grad=True)
        torch.ops.tuned.mm(a, b).square().sum().backward()
        grad_a, grad_b = a.grad.clone(), b.grad.clone()
        a.grad = b.grad = None
        (a @ b).square().sum().backward()
        self.assertTrue(torch.allclose(grad_a, a.grad, rtol=1e-4, atol=1e-3))
        self.assertTrue(torch.allclose(grad_b, b.grad, rtol=1e-4, atol=1e-3))


@unittest.skipIf(_SKIP, _SKIP)
class TorchRouting(unittest.TestCase):
    """tuned.torch_op.enable(): every eligible product of the thread, batched ones, linear with
    its bias, addmm/baddbmm; autograd; torch.compile without graph breaks; CUDA graphs; autocast
    and other dtypes left to torch bit for bit; torch's precision setting; a tensor on another
    GPU."""

    def setUp(self):
        import tuned.torch_op
        torch.manual_seed(65)
        torch.set_float32_matmul_precision("highest")
        tuned.torch_op.enable()
        self.addCleanup(tuned.torch_op.disable)

    def attention(self, q, k, v):
        scores = (q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5
        return torch.softmax(scores, dim=-1) @ v

    def test_the_operator_is_skipped_only_where_it_has_nothing_to_do(self):
        # Without gradients or tracing, routing runs the operator's body (the operator's dispatch
        # costs more host time than a short product); with a gradient to compute and on a tensor
        # subclass, the operator itself (under torch.compile too: the compiled tests below fail
        # on a graph break, which the body's raw pointers would be).
        ops = tuned.torch_op
        a, b = torch.randn((6, 33, 77), device="cuda"), torch.randn((6, 77, 45), device="cuda")
        exact = a.double() @ b.double()
        with mock.patch.object(ops, "bmm", wraps=ops.bmm) as operator:
            with torch.no_grad():
                y = torch.bmm(a, b)
            self.assertEqual(operator.call_count, 0)
            self.assertLess(normwise_error(y, exact), 1e-6)
            y = torch.bmm(a, b.requires_grad_())  # grad enabled, an input requires it
            self.assertEqual(operator.call_count, 1)
            y.sum().backward()  # (whose formula calls the operator for b's gradient)
            self.assertIsNotNone(b.grad)
            b, calls = b.detach(), operator.call_count

            class Marked(torch.Tensor):
                pass
            with torch.no_grad():
                torch.bmm(a.as_subclass(Marked), b)
            self.assertEqual(operator.call_count, calls + 1)

    def test_batched_products_and_their_gradients_match_fp64(self):
        q, k, v = (torch.randn((2, 5, 77, 64), device="cuda", requires_grad=True)
                   for _ in range(3))
        y = self.attention(q, k, v)
        y.square().sum().backward()
        grads = [t.grad.clone() for t in (q, k, v)]
        tuned.torch_op.disable()
        qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
        exact = self.attention(qd, kd, vd)
        exact.square().sum().backward()
        reference = self.attention(q.detach(), k.detach(), v.detach())
        self.assertLessEqual(normwise_error(y, exact), 2 * normwise_error(reference, exact) + 1e-7)
        for got, want in zip(grads, (qd.grad, kd.grad, vd.grad)):
            self.assertLess(normwise_error(got, want), 1e-5)

    def test_linear_addmm_baddbmm_broadcasts(self):
        x, w, b = (torch.randn(s, device="cuda") for s in ((3, 50, 129), (77, 129), (77,)))
        cases = [
            lambda: torch.nn.functional.linear(x, w, b),
            lambda: torch.addmm(b, x[0], w.t(), alpha=0.5),
            lambda: torch.baddbmm(torch.randn((3, 50, 77), device="cuda"), x,
                                  w.t().expand(3, -1, -1), beta=2.0),
            lambda: torch.randn((129,), device="cuda") @ x.transpose(1, 2),
            lambda: torch.randn((4, 1, 50, 129), device="cuda") @ torch.randn((1, 3, 129, 8),
                                                                              device="cuda"),
        ]
        for case in cases:
            torch.manual_seed(1)
            got = case()
            tuned.torch_op.disable()
            torch.manual_seed(1)
            want = case()
            tuned.torch_op.enable()
            self.assertEqual(got.shape, want.shape)
            self.assertLess(normwise_error(got, want.double()), 1e-5)

    def test_fused_linear_gelu_and_its_gradient(self):
        x = torch.randn((300, 129), device="cuda", requires_grad=True)
        w = torch.randn((77, 129), device="cuda", requires_grad=True)
        b = torch.randn((77,), device="cuda", requires_grad=True)
        for activation, torch_activation in (("gelu", torch.nn.functional.gelu),
                                             ("relu", torch.relu)):
            y = tuned.torch_op.linear(x, w, b, activation=activation)
            y.sum().backward()
            grads = [t.grad.clone() for t in (x, w, b)]
            for t in (x, w, b):
                t.grad = None
            with torch.no_grad():
                want = torch_activation(torch.nn.functional.linear(x.double(), w.double(),
                                                                   b.double()))
            self.assertLess(normwise_error(y, want), 1e-6, activation)
            tuned.torch_op.disable()
            torch_activation(torch.nn.functional.linear(x, w, b)).sum().backward()
            tuned.torch_op.enable()
            for got, t in zip(grads, (x, w, b)):
                self.assertLess(normwise_error(got, t.grad.double()), 1e-5, activation)
                t.grad = None

    def test_compiled_without_graph_breaks_and_in_a_cuda_graph(self):
        def block(x, w, b):
            h = torch.nn.functional.linear(x, w, b)
            return self.attention(h, h, h) @ w

        x = torch.randn((2, 64, 96), device="cuda")
        w, b = torch.randn((96, 96), device="cuda"), torch.randn((96,), device="cuda")
        tuned.torch_op.disable()
        want = block(x.double(), w.double(), b.double())
        tuned.torch_op.enable()
        compiled = torch.compile(block, fullgraph=True)  # a graph break fails
        self.assertLess(normwise_error(compiled(x, w, b), want), 1e-5)
        static_x = x.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            block(static_x, w, b)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = block(static_x, w, b)
        static_x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        tuned.torch_op.disable()
        want = block(static_x.double(), w.double(), b.double())
        self.assertLess(normwise_error(static_y, want), 1e-5)

    def test_autocast_and_other_dtypes_are_torchs_bit_for_bit(self):
        x, w = torch.randn((64, 96), device="cuda"), torch.randn((80, 96), device="cuda")
        before = tuned.torch_op.refusals()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            on = torch.nn.functional.linear(x, w) @ w
        for dtype in (torch.float16, torch.float64):
            on_dtype = x.to(dtype) @ w.to(dtype).t()
        tuned.torch_op.disable()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            off = torch.nn.functional.linear(x, w) @ w
        self.assertTrue(torch.equal(on, off))
        self.assertEqual(on.dtype, torch.bfloat16)
        self.assertTrue(torch.equal(on_dtype, x.double() @ w.double().t()))
        after = tuned.torch_op.refusals()
        self.assertGreater(sum(after.values()), sum(before.values()))

    def test_precision_high_runs_the_tf32_compute_type(self):
        # The TF32 type allows TF32 rounding (the library may still pick an exact kernel where it
        # is faster): what torch's setting decides is the compute type of the call, and the
        # result stays within TF32's accuracy, torch's own under that setting.
        a, b = torch.randn((512, 512), device="cuda"), torch.randn((512, 512), device="cuda")
        exact = a.double() @ b.double()
        computes = []
        launch = tuned.torch_op._products.launch

        def recording(call, alpha, beta, compute, epilogue, device):
            computes.append(compute)
            return launch(call, alpha, beta, compute, epilogue, device)
        with mock.patch.object(tuned.torch_op._products, "launch", recording):
            accurate = normwise_error(a @ b, exact)
            torch.set_float32_matmul_precision("high")
            try:
                fast = normwise_error(a @ b, exact)
                tuned.torch_op.disable()
                torch_tf32 = normwise_error(a @ b, exact)
                tuned.torch_op.enable()
            finally:
                torch.set_float32_matmul_precision("highest")
        self.assertEqual(computes, [tuned._library.COMPUTE_TYPES["default"],
                                    tuned._library.COMPUTE_TYPES["tf32"]])
        self.assertLess(accurate, 1e-6)
        self.assertLess(fast, 2 * max(torch_tf32, 1e-6))

    @unittest.skipIf(_SKIP or torch.cuda.device_count() < 2, "one GPU")
    def test_tensors_on_another_gpu_run_there(self):
        a, b = torch.randn((100, 60), device="cuda:1"), torch.randn((60, 70), device="cuda:1")
        self.assertEqual(torch.cuda.current_device(), 0)
        y = a @ b
        self.assertEqual(y.device, a.device)
        self.assertLess(normwise_error(y, a.double() @ b.double()), 1e-6)


@unittest.skipIf(_SKIP, _SKIP)
class OfflineTuning(unittest.TestCase):
    """TUNED_RECORD's workflow: record a run's problems, tune exactly those, rerun: exact."""

    def test_record_autotune_rerun_picks_the_tuned_configs(self):
        folder = tempfile.mkdtemp(prefix="tuned-offline-")
        database, record = os.path.join(folder, "tuned.db"), os.path.join(folder, "shapes.txt")
        tuned.set_database(database)
        a = torch.randn((509, 1000), device="cuda")
        w = torch.randn((1000, 333), device="cuda")
        with tuned.recording(record):
            tuned.gemm(a, w)  # row-major operands: recorded as the library's problem
            tuned.gemm(a.t(), torch.randn((509, 7), device="cuda"))
            tuned.gemm(a, w)  # seen: not again
        tuned.gemm(a, a.t())  # after the block: not recorded
        with open(record) as f:
            lines = [line.split() for line in f.read().splitlines()]
        self.assertEqual(len(lines), 2, lines)
        self.assertTrue(all(line[0] == "gemm" and line[3] == "align" for line in lines), lines)
        before = tuned.describe(a, w)
        self.assertFalse(before.startswith("exact"), before)
        rows = tuned.autotune(shapes_from=record, budget=2 * 6, quiet=True)
        self.assertEqual(len(rows), 2, rows)
        self.assertTrue(all(row["config"] for row in rows), rows)
        for x, y in [(a, w), (a.t(), torch.randn((509, 7), device="cuda"))]:
            text = tuned.describe(x, y)
            self.assertTrue(text.startswith("exact: "), text)
            out = tuned.gemm(x, y)
            torch.cuda.synchronize()
            self.assertLess(normwise_error(out, x.double() @ y.double()), 1e-6)
        tuned.set_database(None)


class RecordingFromTheEnvironment(unittest.TestCase):
    """TUNED_RECORD=FILE records a program's problems with no change to the program."""

    @unittest.skipIf(_SKIP, _SKIP)
    def test_a_fresh_process_records_its_calls_once(self):
        import subprocess
        record = os.path.join(tempfile.mkdtemp(prefix="tuned-record-"), "shapes.txt")
        path = "" if INSTALLED else "sys.path.insert(0, %r); " % PACKAGE_ROOT
        program = ("import sys, torch; " + path + "import tuned; "
                   "a = torch.randn((333, 77), device='cuda'); "
                   "[tuned.gemm(a, a.t()) for _ in range(3)]; tuned.transpose(a); "
                   "torch.cuda.synchronize()")
        for _ in range(2):  # the second process adds nothing
            subprocess.run([sys.executable, "-c", program], check=True,
                           env=dict(os.environ, TUNED_RECORD=record))
        with open(record) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 2, lines)
        self.assertTrue(lines[0].startswith("gemm "), lines)
        self.assertTrue(lines[1].startswith("transpose T "), lines)


if __name__ == "__main__":
    unittest.main()
