"""tuned's products on torch tensors: each makes its result (row-major, contiguous, as torch's own
products do) and computes it with one call of tuned_gemm_strided_batched_ex.

TorchProducts takes the call as a function (launch), so the same code runs libtuned on CUDA
tensors (tuned.torch_op) and, in the CPU tests, a reference that reads and writes memory exactly
as libtuned's arguments say. It needs no torch.library: it works with any torch version.
"""
from . import _library
from . import _products

COMPUTE_DEFAULT, COMPUTE_TF32 = 0, 1  # tuned_compute_t
ACTIVATION_CODES = {None: 0, "none": 0, "relu": 1, "gelu_tanh": 2, "tanh": 2, "gelu": 3}


def operand(tensor, name):
    """The Operand of a 2-D or 3-D tensor (a 2-D one is a batch of 1)."""
    shape, strides = tuple(tensor.shape), tensor.stride()
    if len(shape) == 2:
        shape, strides = (1,) + shape, (0,) + tuple(strides)
    return _products.Operand(name, tensor.data_ptr(), shape, strides)


class TorchProducts:
    """mm, bmm, linear, addmm and baddbmm of float32 tensors of one device through launch(call,
    alpha, beta, compute, epilogue, device) (launch raises on failure)."""

    # Plans kept by the operands' shapes and strides: a model repeats a few geometries, and
    # planning one in Python costs more host time than a short product.
    MAX_PLANS = 1024

    def __init__(self, torch, launch):
        self.torch, self.launch = torch, launch
        self._plans = {}

    def product(self, a, b, c, alpha=1.0, beta=0.0, compute=COMPUTE_DEFAULT, bias=None,
                activation=0):
        """c = activation(alpha a @ b + beta c + bias) (a, b, c 2-D or 3-D; bias: c's columns);
        an operand with no unit stride in its matrices is copied first, and a batch that reads
        better turned over is (_products.turn_over). Returns c."""
        geometry = (a.shape, a.stride(), b.shape, b.stride(), c.shape, c.stride(), beta == 0)
        kept = self._plans.get(geometry)
        if kept is not None:
            call, turn = kept
        else:
            operands, copied = [], False
            for tensor, name in ((a, "a"), (b, "b")):
                o = operand(tensor, name)
                try:
                    o.storage()
                except _products.NoUnitStride:
                    tensor, copied = tensor.contiguous(), True
                    o = operand(tensor, name)
                operands.append((o, tensor))  # the tensor keeps a copy alive through the call
            (oa, a), (ob, b) = operands
            oc = operand(c, "c")
            call = _products.plan(oa, ob, oc)
            # (beta != 0 reads c: its transpose would have to be copied in too)
            turn = _products.turn_over(oa, ob, oc, call) if beta == 0 else None
            if not copied and len(self._plans) < self.MAX_PLANS:  # (a copy's pointer is new)
                self._plans[geometry] = (call, turn)
        out = c
        if turn is not None:
            a = self._other_order(a) if turn.copy_a else a
            b = self._other_order(b) if turn.copy_b else b
            if turn.copy_c:
                out = self._empty(c.shape[:-2] + (c.shape[-1], c.shape[-2]), c).transpose(-1, -2)
            call = turn.call
        call = _products.with_pointers(call, a.data_ptr(), b.data_ptr(), out.data_ptr())
        epilogue = _library.Epilogue(0, None, 0, activation)
        if bias is not None:
            bias = bias.contiguous()
            epilogue.bias_kind, epilogue.bias = call.bias_kind, bias.data_ptr()
        self.launch(call, alpha, beta, compute, epilogue, c.device)
        if out is not c:
            c.copy_(out)
        return c

    @staticmethod
    def _other_order(x):
        """A copy of x's matrices stored in the other order (as _products.other_order plans)."""
        if operand(x, "x").storage()[0]:  # column-major: a row-major copy
            return x.contiguous()
        return x.transpose(-1, -2).contiguous().transpose(-1, -2)

    def _empty(self, shape, like):
        return self.torch.empty(shape, dtype=self.torch.float32, device=like.device)

    def mm(self, a, b, compute=COMPUTE_DEFAULT):
        return self.product(a, b, self._empty((a.shape[0], b.shape[1]), a), compute=compute)

    def bmm(self, a, b, compute=COMPUTE_DEFAULT):
        """a (batch or 1, m, k) @ b (batch or 1, k, n): a batch of 1 is shared by every product."""
        batch = max(a.shape[0], b.shape[0])
        return self.product(a, b, self._empty((batch, a.shape[1], b.shape[2]), a),
                            compute=compute)

    def linear(self, x, weight, bias=None, activation=0, compute=COMPUTE_DEFAULT):
        """activation(x @ weight^T + bias) for x (rows, in), weight (out, in), bias (out,)."""
        return self.product(x, weight.t(), self._empty((x.shape[0], weight.shape[0]), x),
                            compute=compute, bias=bias, activation=activation)

    def addmm(self, input, a, b, beta=1.0, alpha=1.0, compute=COMPUTE_DEFAULT):
        """beta input + alpha a @ b (input broadcast to m x n): a vector of n, added once, is
        the epilogue's bias; anything else is copied into the result first."""
        shape = (a.shape[0], b.shape[1])
        if beta == 1 and input.dim() >= 1 and input.shape[-1] == shape[1] and \
                input.numel() == shape[1]:
            return self.product(a, b, self._empty(shape, a), alpha=alpha, compute=compute,
                                bias=input.reshape(-1))
        return self._with_input(input, a, b, shape, beta, alpha, compute)

    def baddbmm(self, input, a, b, beta=1.0, alpha=1.0, compute=COMPUTE_DEFAULT):
        batch = max(a.shape[0], b.shape[0])
        return self._with_input(input, a, b, (batch, a.shape[1], b.shape[2]), beta, alpha,
                                compute)

    def _with_input(self, input, a, b, shape, beta, alpha, compute):
        c = self._empty(shape, a)
        if beta != 0:  # beta = 0 ignores input, NaNs included (torch's rule)
            c.copy_(input.expand(shape))
        return self.product(a, b, c, alpha=alpha, beta=beta, compute=compute)
