"""torch.ops.tuned.mm: tuned's GEMM as a PyTorch operator (torch >= 2.4), so it runs in eager
mode, inside torch.compile'd code (an opaque custom op: no graph break) and inside CUDA graph
capture; swap_linear(model), which routes a model's FP32 nn.Linear layers through it; and
routing(), a context manager that routes every FP32 CUDA torch.mm / matmul / @ / F.linear called
inside it.

    import tuned.torch_op
    y = torch.ops.tuned.mm(a, b)             # a @ b, float32 CUDA tensors
    tuned.torch_op.swap_linear(model)         # every float32 nn.Linear now uses it
    with tuned.torch_op.routing():            # or only the products inside this block
        y = model(x)
"""
import torch
from torch.overrides import TorchFunctionMode

import tuned as _tuned  # gemm looked up at each call (tests count the calls)


@torch.library.custom_op("tuned::mm", mutates_args=())
def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for 2-D float32 CUDA tensors (any strides with a unit dimension)."""
    c = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32, device=a.device)
    _tuned.gemm(a, b, c)
    return c


@mm.register_fake
def _(a, b):
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "tuned::mm takes 2-D tensors")
    torch._check(a.shape[1] == b.shape[0], lambda: "tuned::mm: a.shape[1] must equal b.shape[0]")
    return a.new_empty((a.shape[0], b.shape[1]))


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a = mm(grad, b.t()) if ctx.needs_input_grad[0] else None
    grad_b = mm(a.t(), grad) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


mm.register_autograd(_backward, setup_context=_setup_context)


class Linear(torch.nn.Module):
    """nn.Linear's forward through torch.ops.tuned.mm (the same weight and bias tensors)."""

    def __init__(self, linear):
        super().__init__()
        self.weight, self.bias = linear.weight, linear.bias
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x):
        if not _routable(x, self.weight):
            return torch.nn.functional.linear(x, self.weight, self.bias)
        return _linear(x, self.weight, self.bias)


def swap_linear(model):
    """Replaces every nn.Linear of model (in place) by tuned's Linear; returns model."""
    for name, child in model.named_children():
        if isinstance(child, torch.nn.Linear):
            setattr(model, name, Linear(child))
        else:
            swap_linear(child)
    return model


def _routable(*tensors):
    return all(isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.is_cuda
               for t in tensors)


def _linear(x, weight, bias=None):
    y = torch.ops.tuned.mm(x.reshape(-1, weight.shape[1]), weight.t())
    if bias is not None:
        y = y + bias
    return y.reshape(*x.shape[:-1], weight.shape[0])


_MATRIX_PRODUCTS = {torch.mm, torch.matmul, torch.Tensor.mm, torch.Tensor.matmul,
                    torch.Tensor.__matmul__}


class routing(TorchFunctionMode):
    """Inside the block, FP32 CUDA products of two 2-D tensors (torch.mm, torch.matmul,
    Tensor.mm/matmul, @) and F.linear (any leading dimensions) run through torch.ops.tuned.mm;
    anything else (other dtypes, batched products, out=) is left to torch."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _MATRIX_PRODUCTS and not kwargs and len(args) == 2 and _routable(*args) \
                and args[0].dim() == 2 and args[1].dim() == 2:
            return torch.ops.tuned.mm(*args)
        if func is torch.nn.functional.linear and len(args) >= 2 and \
                _routable(args[0], args[1]) and args[1].dim() == 2 and args[0].dim() >= 1:
            bias = args[2] if len(args) > 2 else kwargs.get("bias")
            if len(args) + len(kwargs) <= 3 and (bias is None or _routable(bias)):
                return _linear(args[0], args[1], bias)
        return func(*args, **kwargs)
