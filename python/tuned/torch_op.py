"""tuned's products as PyTorch operators (torch >= 2.4), and the switch that sends every eligible
product of a process through them.

    import tuned.torch_op
    tuned.torch_op.enable()                   # or TUNED_TORCH=1, or python -m tuned.run script.py
    loss = model(x).sum(); loss.backward()    # mm, bmm, matmul, F.linear, addmm, baddbmm: tuned's
    with tuned.torch_op.routing():            # or only the products inside this block
        y = model(x)
    y = tuned.torch_op.linear(x, w, b, activation="gelu")   # bias and GELU in the product's kernel

The operators torch.ops.tuned.mm, bmm, linear, addmm and baddbmm have autograd formulas (written
with the same operators), fake tensors for torch.compile (opaque nodes: no graph break) and run
inside CUDA graph capture. Routing follows torch's rules (tuned._routing): float32 CUDA tensors
outside autocast; torch's FP32 matmul precision picks the compute type; anything else, and any
call libtuned cannot serve, is computed by torch as it would have been.
"""
import ctypes
import logging
from typing import Optional

import torch
from torch.overrides import TorchFunctionMode

import tuned as _tuned
from . import _library
from ._routing import Refused, Router
from ._torch_products import TorchProducts

log = logging.getLogger("tuned.torch")
_ACT = {None: 0, "none": 0, "relu": 1, "gelu_tanh": 2, "gelu": 3}


# ----- the library call ---------------------------------------------------------------------------

def _launch(call, alpha, beta, compute, epilogue, device):
    """tuned_gemm_strided_batched_ex on device's current torch stream (the device made current
    for the call); tuned.Error on failure."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    stream = torch.cuda.current_stream(index).cuda_stream
    al, be = ctypes.c_float(alpha), ctypes.c_float(beta)
    arguments = (call.op_a, call.op_b, call.m, call.n, call.k, ctypes.byref(al), call.a, call.lda,
                 call.stride_a, call.b, call.ldb, call.stride_b, ctypes.byref(be), call.c,
                 call.ldc, call.stride_c, call.batch, compute, ctypes.byref(epilogue), stream)
    if torch.cuda.current_device() != index:
        with torch.cuda.device(index):
            status = _library.lib.tuned_gemm_strided_batched_ex(*arguments)
    else:
        status = _library.lib.tuned_gemm_strided_batched_ex(*arguments)
    if status != _library.STATUS_SUCCESS:
        _tuned._raise(status)


_products = TorchProducts(torch, _launch)


def _served(name, tuned_call, torch_call):
    """tuned_call(), or where libtuned fails (no usable device, an unsupported GPU, ...)
    torch_call() with one debug line: an operator never fails where torch would not."""
    try:
        return tuned_call()
    except (_tuned.Error, ValueError) as e:
        # (torch's own precision setting, which chose `compute`, then rules its kernel too.)
        log.debug("tuned: %s computed by torch: %s", name, e)
        with torch._C.DisableTorchFunction():
            return torch_call()


# ----- the operators ------------------------------------------------------------------------------
# Each operator's body is a plain function (_*_eager) that routing also calls directly where the
# operator's own layers have nothing to do (_eager).

def _mm_eager(a, b, compute):
    return _served("mm", lambda: _products.mm(a, b, compute),
                   lambda: torch.ops.aten.mm.default(a, b))


@torch.library.custom_op("tuned::mm", mutates_args=())
def mm(a: torch.Tensor, b: torch.Tensor, compute: int = 0) -> torch.Tensor:
    """a @ b for 2-D float32 CUDA tensors (any strides)."""
    return _mm_eager(a, b, compute)


@mm.register_fake
def _(a, b, compute=0):
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "tuned::mm takes 2-D tensors")
    torch._check(a.shape[1] == b.shape[0], lambda: "tuned::mm: a.shape[1] must equal b.shape[0]")
    return a.new_empty((a.shape[0], b.shape[1]))


def _bmm_eager(a, b, compute):
    def by_torch():
        batch = max(a.shape[0], b.shape[0])
        return torch.ops.aten.bmm.default(a.expand(batch, -1, -1), b.expand(batch, -1, -1))
    return _served("bmm", lambda: _products.bmm(a, b, compute), by_torch)


@torch.library.custom_op("tuned::bmm", mutates_args=())
def bmm(a: torch.Tensor, b: torch.Tensor, compute: int = 0) -> torch.Tensor:
    """a[z] @ b[z] for 3-D float32 CUDA tensors; a batch of 1 is shared by every product."""
    return _bmm_eager(a, b, compute)


@bmm.register_fake
def _(a, b, compute=0):
    torch._check(a.dim() == 3 and b.dim() == 3, lambda: "tuned::bmm takes 3-D tensors")
    torch._check(a.shape[2] == b.shape[1], lambda: "tuned::bmm: a.shape[2] must equal b.shape[1]")
    return a.new_empty((max(a.shape[0], b.shape[0]), a.shape[1], b.shape[2]))


def _linear_eager(x, weight, bias, activation, compute):
    def by_torch():
        y = torch.ops.aten.linear.default(x, weight, bias)
        return _activate(y, activation)
    return _served("linear",
                   lambda: _products.linear(x, weight, bias, activation, compute), by_torch)


@torch.library.custom_op("tuned::linear", mutates_args=())
def linear_op(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
              activation: int = 0, compute: int = 0) -> torch.Tensor:
    """activation(x @ weight^T + bias), x (rows, in), weight (out, in), bias (out,) or None, in
    one kernel (activation: tuned_activation_t)."""
    return _linear_eager(x, weight, bias, activation, compute)


@linear_op.register_fake
def _(x, weight, bias=None, activation=0, compute=0):
    torch._check(x.dim() == 2 and weight.dim() == 2, lambda: "tuned::linear takes 2-D x, weight")
    torch._check(x.shape[1] == weight.shape[1], lambda: "tuned::linear: x and weight's in differ")
    return x.new_empty((x.shape[0], weight.shape[0]))


def _addmm_eager(input, a, b, beta, alpha, compute):
    return _served("addmm", lambda: _products.addmm(input, a, b, beta, alpha, compute),
                   lambda: torch.ops.aten.addmm.default(input, a, b, beta=beta, alpha=alpha))


@torch.library.custom_op("tuned::addmm", mutates_args=())
def addmm(input: torch.Tensor, a: torch.Tensor, b: torch.Tensor, beta: float = 1.0,
          alpha: float = 1.0, compute: int = 0) -> torch.Tensor:
    """beta input + alpha a @ b (torch.addmm)."""
    return _addmm_eager(input, a, b, beta, alpha, compute)


@addmm.register_fake
def _(input, a, b, beta=1.0, alpha=1.0, compute=0):
    return a.new_empty((a.shape[0], b.shape[1]))


def _baddbmm_eager(input, a, b, beta, alpha, compute):
    return _served("baddbmm",
                   lambda: _products.baddbmm(input, a, b, beta, alpha, compute),
                   lambda: torch.ops.aten.baddbmm.default(input, a, b, beta=beta, alpha=alpha))


@torch.library.custom_op("tuned::baddbmm", mutates_args=())
def baddbmm(input: torch.Tensor, a: torch.Tensor, b: torch.Tensor, beta: float = 1.0,
            alpha: float = 1.0, compute: int = 0) -> torch.Tensor:
    """beta input + alpha a[z] @ b[z] (torch.baddbmm)."""
    return _baddbmm_eager(input, a, b, beta, alpha, compute)


@baddbmm.register_fake
def _(input, a, b, beta=1.0, alpha=1.0, compute=0):
    return a.new_empty((max(a.shape[0], b.shape[0]), a.shape[1], b.shape[2]))


def _activate(y, activation):
    if activation == 1:
        return torch.relu(y)
    if activation in (2, 3):
        return torch.nn.functional.gelu(y, approximate="tanh" if activation == 2 else "none")
    return y


# ----- autograd: every formula through the same operators ----------------------------------------

def _save_inputs(ctx, inputs, output):
    ctx.save_for_backward(*[x if isinstance(x, torch.Tensor) else None for x in inputs])
    ctx.scalars = [None if isinstance(x, torch.Tensor) else x for x in inputs]


def _mm_backward(ctx, grad):
    a, b, _ = ctx.saved_tensors
    compute = ctx.scalars[2]
    grad_a = mm(grad, b.t(), compute) if ctx.needs_input_grad[0] else None
    grad_b = mm(a.t(), grad, compute) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b, None


def _bmm_grads(a, b, grad, compute, need_a, need_b):
    """The gradients of a[z] @ b[z] (a or b possibly shared, batch 1)."""
    batch = grad.shape[0]
    grad_a = grad_b = None
    if need_a:
        if a.shape[0] == batch:
            grad_a = bmm(grad, b.transpose(1, 2), compute)
        else:  # shared a: the sum over the batch of grad[z] b[z]^T
            grad_a = bmm(grad, b.transpose(1, 2), compute).sum(0, keepdim=True)
    if need_b:
        if b.shape[0] == batch:
            grad_b = bmm(a.transpose(1, 2), grad, compute)
        elif a.shape[0] == batch:  # shared b: one product over the batch's rows, k = batch * m
            grad_b = mm(a.reshape(-1, a.shape[2]).t(), grad.reshape(-1, grad.shape[2]),
                        compute).unsqueeze(0)
        else:
            grad_b = mm(a[0].t(), grad.sum(0), compute).unsqueeze(0)
    return grad_a, grad_b


def _bmm_backward(ctx, grad):
    a, b, _ = ctx.saved_tensors
    grad_a, grad_b = _bmm_grads(a, b, grad, ctx.scalars[2], *ctx.needs_input_grad[:2])
    return grad_a, grad_b, None


def _linear_backward(ctx, grad):
    x, weight, bias, _, _ = ctx.saved_tensors
    activation, compute = ctx.scalars[3], ctx.scalars[4]
    if activation != 0:
        # The pre-activation, computed again (the fused forward keeps none; routing fuses an
        # activation only where no gradient is needed).
        pre = linear_op(x, weight, bias, 0, compute)
        with torch.enable_grad():
            pre = pre.detach().requires_grad_()
            grad = torch.autograd.grad(_activate(pre, activation), pre, grad)[0]
    grad_x = mm(grad, weight, compute) if ctx.needs_input_grad[0] else None
    grad_w = mm(grad.t(), x, compute) if ctx.needs_input_grad[1] else None
    grad_bias = grad.sum(0) if bias is not None and ctx.needs_input_grad[2] else None
    return grad_x, grad_w, grad_bias, None, None


def _addmm_backward(ctx, grad):
    input, a, b, _, _, _ = ctx.saved_tensors
    beta, alpha, compute = ctx.scalars[3], ctx.scalars[4], ctx.scalars[5]
    need = ctx.needs_input_grad
    grad_input = (grad * beta).sum_to_size(input.shape) if need[0] else None
    scaled = grad * alpha if alpha != 1 else grad
    grad_a = mm(scaled, b.t(), compute) if need[1] else None
    grad_b = mm(a.t(), scaled, compute) if need[2] else None
    return grad_input, grad_a, grad_b, None, None, None


def _baddbmm_backward(ctx, grad):
    input, a, b, _, _, _ = ctx.saved_tensors
    beta, alpha, compute = ctx.scalars[3], ctx.scalars[4], ctx.scalars[5]
    need = ctx.needs_input_grad
    grad_input = (grad * beta).sum_to_size(input.shape) if need[0] else None
    scaled = grad * alpha if alpha != 1 else grad
    grad_a, grad_b = _bmm_grads(a, b, scaled, compute, need[1], need[2])
    return grad_input, grad_a, grad_b, None, None, None


for _op, _backward in ((mm, _mm_backward), (bmm, _bmm_backward), (linear_op, _linear_backward),
                       (addmm, _addmm_backward), (baddbmm, _baddbmm_backward)):
    _op.register_autograd(_backward, setup_context=_save_inputs)


# ----- what routing calls -------------------------------------------------------------------------

_functorch_wrapped = getattr(getattr(torch._C, "_functorch", None),
                             "is_functorch_wrapped_tensor", None)


def _eager(*tensors):
    """Whether a routed call may run an operator's body directly: plain tensors (no subclass, no
    vmap or other functorch wrapper), nothing to differentiate, nothing traced (torch.compile,
    export). There the operator's dispatch (its autograd and fake-tensor layers, ~60 us of host
    time a call on the H100 machine) only delays a short product."""
    if torch.compiler.is_compiling():
        return False
    grad = torch.is_grad_enabled()
    for t in tensors:
        if t is None:
            continue
        if type(t) is not torch.Tensor or (grad and t.requires_grad):
            return False
        if _functorch_wrapped is not None and _functorch_wrapped(t):
            return False
    return True


class _Operators:
    """The Router's ops: tuned's operators, or their bodies where _eager allows (linear without
    an activation: torch's rules keep the pre-activation for autograd)."""

    @staticmethod
    def mm(a, b, compute):
        return _mm_eager(a, b, compute) if _eager(a, b) else mm(a, b, compute)

    @staticmethod
    def bmm(a, b, compute):
        return _bmm_eager(a, b, compute) if _eager(a, b) else bmm(a, b, compute)

    @staticmethod
    def linear(x, w, bias, compute):
        if _eager(x, w, bias):
            return _linear_eager(x, w, bias, 0, compute)
        return linear_op(x, w, bias, 0, compute)

    @staticmethod
    def addmm(input, a, b, beta, alpha, compute):
        if _eager(input, a, b):
            return _addmm_eager(input, a, b, beta, alpha, compute)
        return addmm(input, a, b, beta, alpha, compute)

    @staticmethod
    def baddbmm(input, a, b, beta, alpha, compute):
        if _eager(input, a, b):
            return _baddbmm_eager(input, a, b, beta, alpha, compute)
        return baddbmm(input, a, b, beta, alpha, compute)


_router = Router(torch, _Operators())


class routing(TorchFunctionMode):
    """Inside the block (or, enable()d, everywhere in this thread) the products tuned._routing
    accepts run through tuned's operators; every other call is torch's, unchanged."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if _router.handles(func):
            try:
                return _router.route(func, args, kwargs)
            except Refused:
                pass
        return func(*args, **(kwargs or {}))


_enabled = None  # the routing mode enable() entered


def enable():
    """Routes every eligible product of this thread from now on (TUNED_TORCH=1 does it at import
    of tuned; python -m tuned.run script.py runs a script so). Idempotent."""
    global _enabled
    if _enabled is None:
        _enabled = routing()
        _enabled.__enter__()


def disable():
    """Undoes enable()."""
    global _enabled
    if _enabled is not None:
        _enabled.__exit__(None, None, None)
        _enabled = None


def enabled():
    return _enabled is not None


def refusals():
    """{reason: count} of the products routing left to torch in this process."""
    return dict(_router.refusals)


def linear(x, weight, bias=None, activation=None):
    """activation(x @ weight^T + bias) for float32 CUDA tensors (x of any leading dimensions), the
    bias and the activation (None, "relu", "gelu", "gelu_tanh") in the product's kernel: one pass
    over the result instead of three. Differentiable."""
    if activation not in _ACT:
        raise ValueError(f"activation must be one of {list(_ACT)}, got {activation!r}")
    rows = x.reshape(-1, x.shape[-1])
    y = linear_op(rows, weight, bias, _ACT[activation], _router.compute_type())
    return y.reshape(tuple(x.shape[:-1]) + (weight.shape[0],))


class Linear(torch.nn.Module):
    """nn.Linear's forward through tuned (the same weight and bias tensors), or torch's where
    routing refuses the call (other dtypes, autocast, ...)."""

    def __init__(self, linear):
        super().__init__()
        self.weight, self.bias = linear.weight, linear.bias
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x):
        try:
            return _router.route(torch.nn.functional.linear, (x, self.weight, self.bias), {})
        except Refused:
            return torch.nn.functional.linear(x, self.weight, self.bias)


def swap_linear(model):
    """Replaces every nn.Linear of model (in place) by tuned's Linear; returns model."""
    for name, child in model.named_children():
        if isinstance(child, torch.nn.Linear):
            setattr(model, name, Linear(child))
        else:
            swap_linear(child)
    return model
