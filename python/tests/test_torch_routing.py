"""Routing of torch's products without a GPU: every decision tuned._routing makes (autocast,
dtypes, ranks, broadcasting, devices, keywords, precision, refusals) on real torch tensors, with
the library call replaced by a reference that reads and writes memory exactly as libtuned's
arguments say (pointers, leading dimensions, batch strides, transposes, the epilogue). So the
arguments tuned._products and tuned._torch_products make are checked against torch's own results.

The router is made for CPU tensors here (device_type="cpu"); on a GPU tuned.torch_op routes CUDA
tensors the same way (python/gpu_tests). Needs torch (Debian's python3-torch on CI); skipped with
the reason otherwise. Run: python3 -m unittest discover -s python/tests
"""
import ctypes
import os
import sys
import unittest
from unittest import mock

if os.environ.get("TUNED_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import numpy
    import torch
    from torch.overrides import TorchFunctionMode
except ImportError as e:  # pragma: no cover - CI installs them
    torch = None
    REASON = f"torch and numpy are needed: {e}"

if torch is not None:
    from tuned import _routing
    from tuned._torch_products import TorchProducts


class Reference:
    """libtuned's strided batched product on host memory, from the call's arguments alone; records
    each call."""

    def __init__(self):
        self.calls = []

    @staticmethod
    def _matrix(pointer, rows, cols, ld, transposed):
        """op(X) (rows x cols) of the column-major X at pointer, as a float64 array (a copy)."""
        s0, s1 = (ld, 1) if transposed else (1, ld)
        span = (rows - 1) * s0 + (cols - 1) * s1 + 1 if rows and cols else 0
        if span == 0:
            return numpy.zeros((rows, cols))
        memory = numpy.ctypeslib.as_array((ctypes.c_float * span).from_address(pointer))
        return numpy.lib.stride_tricks.as_strided(memory, (rows, cols), (4 * s0, 4 * s1)) \
            .astype(numpy.float64)

    def __call__(self, call, alpha, beta, compute, epilogue, device):
        self.calls.append((call, compute, epilogue.bias_kind, epilogue.activation))
        for z in range(call.batch):
            a = self._matrix(call.a + 4 * z * call.stride_a, call.m, call.k, call.lda, call.op_a)
            b = self._matrix(call.b + 4 * z * call.stride_b, call.k, call.n, call.ldb, call.op_b)
            c_at = call.c + 4 * z * call.stride_c
            out = alpha * (a @ b)
            if beta != 0:
                out += beta * self._matrix(c_at, call.m, call.n, call.ldc, False)
            if epilogue.bias_kind:
                length = call.m if epilogue.bias_kind == 1 else call.n
                bias = self._matrix(epilogue.bias + 4 * z * epilogue.bias_batch_stride, length, 1,
                                    length, False)[:, 0]
                out += bias[:, None] if epilogue.bias_kind == 1 else bias[None, :]
            if epilogue.activation == 1:
                out = numpy.maximum(out, 0)
            if call.m and call.n:
                memory = numpy.ctypeslib.as_array(
                    (ctypes.c_float * ((call.n - 1) * call.ldc + call.m)).from_address(c_at))
                target = numpy.lib.stride_tricks.as_strided(memory, (call.m, call.n),
                                                            (4, 4 * call.ldc))
                target[...] = out


class RoutingTest(unittest.TestCase):
    def setUp(self):
        if torch is None:
            self.skipTest(REASON)
        self.reference = Reference()
        products = TorchProducts(torch, self.reference)

        class Ops:  # what tuned.torch_op gives the router, without torch.library's operators
            mm = staticmethod(products.mm)
            bmm = staticmethod(products.bmm)
            linear = staticmethod(lambda x, w, bias, compute: products.linear(x, w, bias, 0,
                                                                              compute))
            addmm = staticmethod(products.addmm)
            baddbmm = staticmethod(products.baddbmm)

        self.router = _routing.Router(torch, Ops(), device_type="cpu")
        router = self.router

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                if router.handles(func):
                    try:
                        return router.route(func, args, kwargs)
                    except _routing.Refused:
                        pass
                return func(*args, **(kwargs or {}))

        self.mode = Mode
        self.generator = torch.Generator().manual_seed(0)
        torch.set_float32_matmul_precision("highest")

    def rand(self, *shape, dtype=None):
        return torch.rand(*shape, generator=self.generator, dtype=dtype or torch.float32) - 0.5

    def routed(self, function):
        """function() inside routing, its result beside torch's own, and the calls it made."""
        expected = function()
        self.reference.calls.clear()
        with self.mode():
            got = function()
        return got, expected, list(self.reference.calls)

    def assert_routed(self, function, calls=1):
        got, expected, made = self.routed(function)
        self.assertEqual(len(made), calls, f"library calls: {made}")
        self.assertEqual(got.shape, expected.shape)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
        return made

    def assert_refused(self, function, reason):
        got, expected, made = self.routed(function)
        self.assertEqual(made, [])
        self.assertTrue(torch.equal(got, expected), "a refused call must be torch's, bit for bit")
        self.assertTrue(any(reason in r for r in self.router.refusals), self.router.refusals)

    # ----- ranks and layouts -------------------------------------------------------------------

    def test_two_matrices_take_one_call_in_every_layout(self):
        a, b = self.rand(7, 13), self.rand(13, 5)
        for x, y in ((a, b), (a.t().contiguous().t(), b), (a, b.t().contiguous().t()),
                     (a.t().contiguous().t(), b.t().contiguous().t())):
            (call, compute, _, _), = self.assert_routed(lambda: torch.mm(x, y))
            self.assertEqual((call.m, call.n, call.k, call.batch), (5, 7, 13, 1))  # c^T = b^T a^T
            self.assertEqual(compute, 0)
        self.assert_routed(lambda: a @ b)
        self.assert_routed(lambda: a.matmul(b))
        self.assert_routed(lambda: torch.matmul(a, b))

    def test_vectors_are_matrices_of_one_row_or_column(self):
        a, v, w = self.rand(9, 4), self.rand(4), self.rand(9)
        self.assert_routed(lambda: a @ v)
        self.assert_routed(lambda: w @ a)
        self.assert_refused(lambda: v @ v, "dot product")

    def test_leading_dimensions_fold_into_rows_against_a_matrix(self):
        x, w = self.rand(3, 5, 8), self.rand(8, 6)
        (call, _, _, _), = self.assert_routed(lambda: x @ w)
        self.assertEqual((call.m, call.n, call.k, call.batch), (6, 15, 8, 1))

    def test_attention_products_are_one_batch(self):
        q, k, v = self.rand(2, 3, 10, 4), self.rand(2, 3, 10, 4), self.rand(2, 3, 10, 4)
        (call, _, _, _), = self.assert_routed(lambda: q @ k.transpose(-2, -1))
        self.assertEqual((call.m, call.n, call.k, call.batch), (10, 10, 4, 6))
        self.assertEqual(call.op_a, 1)  # k^T's storage read as stored: no copy
        scores = self.rand(2, 3, 10, 10)
        self.assert_routed(lambda: torch.matmul(scores, v))
        self.assert_routed(lambda: torch.bmm(q.reshape(6, 10, 4),
                                             k.reshape(6, 10, 4).transpose(1, 2)))

    def test_broadcast_batches_follow_torch(self):
        a = self.rand(4, 6)
        b = self.rand(2, 3, 6, 5)
        (call, _, _, _), = self.assert_routed(lambda: a @ b)  # a shared by every product
        self.assertEqual((call.batch, call.stride_b), (6, 0))  # the call's B is torch's a
        for x, y in ((self.rand(2, 1, 4, 6), self.rand(1, 3, 6, 5)),
                     (self.rand(1, 1, 4, 6), self.rand(2, 3, 6, 5)),
                     (self.rand(5), self.rand(2, 5, 3)), (self.rand(2, 3, 4), self.rand(4))):
            (call, _, _, _), = self.assert_routed(lambda: x @ y)
            if x.dim() == 4 and all(s == 1 for s in x.shape[:2]):  # a shared, not copied
                self.assertEqual(call.stride_b, 0)

    def test_operands_without_a_unit_stride_are_copied(self):
        a = self.rand(6, 16)[:, ::2]
        b = self.rand(8, 3)
        self.assert_routed(lambda: a @ b)

    def test_a_geometry_is_planned_once_and_right_for_every_operand(self):
        # Kept plans take each call's own pointers: new tensors of the same shapes and strides,
        # both storage orders, a shared operand (batch 1) and the same tensor on both sides.
        from tuned import _products
        cases = [lambda: (self.rand(4, 9, 5), self.rand(4, 5, 3)),
                 lambda: (self.rand(4, 5, 9).transpose(1, 2), self.rand(4, 3, 5).transpose(1, 2)),
                 lambda: (self.rand(1, 9, 5), self.rand(4, 5, 3))]
        original, planned = _products.plan, []

        def counting(*args):
            planned.append(1)
            return original(*args)
        with mock.patch.object(_products, "plan", counting):
            for make in cases:
                planned.clear()
                for i in range(3):
                    a, b = make()
                    self.assert_routed(lambda: torch.matmul(a, b))
                    if i == 0:
                        first = len(planned)  # (a batch read transposed: turnings planned too)
                self.assertEqual(len(planned), first)
                self.assertGreaterEqual(first, 1)
            h = self.rand(3, 6, 6)
            self.assert_routed(lambda: torch.bmm(h, h))
            self.assert_routed(lambda: torch.bmm(h, h.transpose(1, 2)))

    def test_a_batch_is_turned_over_where_the_cost_model_says_it_pays(self):
        # p^T do: the library would read its t x t operand as B transposed; p v (d 64): a call of
        # m = d. Turned over, the product writes c's transpose from the small operand's, reading
        # the t x t one as stored (NN and TN of t x d x t); only where the copies cost little
        # next to the product (here a slow one, on CPU sizes).
        from tuned import _products
        p, do = self.rand(3, 40, 40), self.rand(3, 40, 8)
        (call, _, _, _), = self.assert_routed(lambda: torch.matmul(p.transpose(1, 2), do))
        self.assertEqual((call.op_a, call.op_b, call.m, call.n), (0, 1, 8, 40))  # too small
        p, do = self.rand(3, 80, 80), self.rand(3, 80, 8)  # (a geometry's plan is kept)
        with mock.patch.multiple(_products, TRANSPOSED_B_BATCH_FLOPS_PER_S=1.0,
                                 FEW_ROWS_BATCH_FLOPS_PER_S=1.0, COPY_HOST_S=0.0):
            for _ in range(2):  # planned, then kept
                (call, _, _, _), = self.assert_routed(lambda: torch.matmul(p.transpose(1, 2), do))
                self.assertEqual((call.op_a, call.op_b, call.m, call.n, call.k), (0, 0, 80, 8, 80))
                (call, _, _, _), = self.assert_routed(lambda: torch.matmul(p, do))
                self.assertEqual((call.op_a, call.op_b, call.m, call.n, call.k), (1, 0, 80, 8, 80))
            # a shared operand, and a c whose input counts (beta != 0: not turned over)
            self.assert_routed(lambda: torch.matmul(p[:1].transpose(1, 2), do))
            self.assert_routed(lambda: torch.matmul(p.transpose(1, 2), do[:1]))
            given = self.rand(3, 80, 8)
            made = self.assert_routed(lambda: torch.baddbmm(given, p.transpose(1, 2), do, beta=0.5))
            self.assertEqual(made[0][0].op_b, 1)
        # At attention's sizes the model's own costs: p^T do and p v of head dim 64 turned over
        # (do or v and the output copied, p read as stored), p v of 128 and q k^T not.
        def operands(batch, t, d, p_transposed, b_rows):
            p = _products.Operand("a", 1 << 40, (batch, t, t),
                                  (t * t, 1, t) if p_transposed else (t * t, t, 1))
            b = _products.Operand("b", 1 << 41, (batch, b_rows, d), (b_rows * d, d, 1))
            c = _products.Operand("c", 1 << 42, (batch, t, d), (t * d, d, 1))
            return p, b, c, _products.plan(p, b, c)
        for transposed, d in ((True, 128), (True, 64), (False, 64)):
            turn = _products.turn_over(*operands(256, 2048, d, transposed, 2048))
            self.assertEqual((turn.copy_a, turn.copy_b, turn.copy_c), (False, True, True))
            self.assertEqual(turn.call.op_b, 0)
            self.assertGreater(turn.call.m, 64)
        self.assertIsNone(_products.turn_over(*operands(256, 2048, 128, False, 2048)))
        self.assertIsNone(_products.turn_over(*operands(64, 128, 64, True, 128)))
        q = _products.Operand("a", 1 << 40, (256, 2048, 64), (2048 * 64, 64, 1))
        k_t = _products.Operand("b", 1 << 41, (256, 64, 2048), (2048 * 64, 1, 64))
        s = _products.Operand("c", 1 << 42, (256, 2048, 2048), (2048 * 2048, 2048, 1))
        self.assertIsNone(_products.turn_over(q, k_t, s, _products.plan(q, k_t, s)))

    # ----- linear, addmm, baddbmm ----------------------------------------------------------------

    def test_linear_fuses_its_bias(self):
        F = torch.nn.functional
        x, w, bias = self.rand(2, 7, 12), self.rand(5, 12), self.rand(5)
        (call, _, bias_kind, activation), = self.assert_routed(lambda: F.linear(x, w, bias))
        self.assertEqual((call.m, call.n, call.k, bias_kind, activation), (5, 14, 12, 1, 0))
        (_, _, bias_kind, _), = self.assert_routed(lambda: F.linear(x, w))
        self.assertEqual(bias_kind, 0)
        layer = torch.nn.Linear(12, 5)
        self.assert_routed(lambda: layer(x))
        bias2 = self.rand(1, 5)
        self.assert_refused(lambda: F.linear(x, w, bias2), "one value per output")

    def test_addmm_and_baddbmm_scale_and_add_their_input(self):
        a, b = self.rand(6, 4), self.rand(4, 9)
        vector, matrix, column = self.rand(9), self.rand(6, 9), self.rand(6, 1)
        (_, _, bias_kind, _), = self.assert_routed(lambda: torch.addmm(vector, a, b))
        self.assertEqual(bias_kind, 1)  # a vector of columns: the epilogue's bias
        self.assert_routed(lambda: torch.addmm(matrix, a, b, beta=0.5, alpha=2.0))
        self.assert_routed(lambda: column.addmm(a, b, alpha=-1.0))
        nan = torch.full((6, 9), float("nan"))
        self.assert_routed(lambda: torch.addmm(nan, a, b, beta=0))  # beta 0 ignores input
        b1, b2 = self.rand(3, 6, 4), self.rand(3, 4, 9)
        batch_input = self.rand(3, 6, 9)
        self.assert_routed(lambda: torch.baddbmm(batch_input, b1, b2, beta=0.25, alpha=3))
        self.assert_routed(lambda: torch.baddbmm(vector, b1, b2))
        self.assert_refused(lambda: torch.addmm(matrix, a, b, out=torch.empty(6, 9)), "out=")

    # ----- torch's rules -------------------------------------------------------------------------

    def test_other_dtypes_are_torchs(self):
        for dtype in (torch.float64, torch.bfloat16):
            a, b = self.rand(5, 4, dtype=dtype), self.rand(4, 3, dtype=dtype)
            self.assert_refused(lambda: a @ b, f"dtype {dtype}")
        a, b = self.rand(5, 4), self.rand(4, 3, dtype=torch.float64)
        with self.mode(), self.assertRaises(RuntimeError):  # torch's own error for mixed dtypes
            a @ b
        self.assertTrue(any("dtype torch.float64" in r for r in self.router.refusals))

    def test_autocast_is_torchs_and_outputs_are_identical(self):
        a, b = self.rand(16, 8), self.rand(8, 4)
        F = torch.nn.functional
        with torch.autocast("cpu", dtype=torch.bfloat16):
            self.assert_refused(lambda: a @ b, "autocast")
            self.assert_refused(lambda: F.linear(a, b.t(), None), "autocast")

    def test_tensors_of_another_device_type_are_torchs(self):
        cuda_router = _routing.Router(torch, None, device_type="cuda")
        with self.assertRaises(_routing.Refused) as refused:
            cuda_router.route(torch.mm, (self.rand(2, 2), self.rand(2, 2)), {})
        self.assertIn("a tensor on cpu", str(refused.exception))

    def test_precision_setting_picks_the_compute_type(self):
        a, b = self.rand(5, 4), self.rand(4, 3)
        try:
            for precision, compute in (("high", 1), ("medium", 1), ("highest", 0)):
                torch.set_float32_matmul_precision(precision)
                (_, got, _, _), = self.assert_routed(lambda: a @ b)
                self.assertEqual(got, compute, precision)
        finally:
            torch.set_float32_matmul_precision("highest")

    def test_refusals_fall_back_to_torch_errors_included(self):
        u, v = self.rand(3), self.rand(3)
        self.assert_refused(lambda: u @ v, "dot product")
        with self.mode(), self.assertRaises(RuntimeError):  # torch's own message, not ours
            self.rand(3, 4) @ self.rand(5, 2)
        with self.mode(), self.assertRaises(RuntimeError):
            torch.bmm(self.rand(2, 3, 4), self.rand(3, 4, 2))
        self.assertTrue(any("torch's error" in r for r in self.router.refusals))


if __name__ == "__main__":
    unittest.main()
