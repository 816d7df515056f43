"""torch.ops.tuned.mm: tuned's GEMM as a PyTorch operator (torch >= 2.4), so it runs in eager
mode, inside torch.compile'd code (an opaque custom op: no graph break) and inside CUDA graph
capture; and swap_linear(model), which routes a model's FP32 nn.Linear layers through it.

    import tuned.torch_op
    y = torch.ops.tuned.mm(a, b)             # a @ b, float32 CUDA tensors
    tuned.torch_op.swap_linear(model)         # every float32 nn.Linear now uses it
"""
import torch

from . import gemm


@torch.library.custom_op("tuned::mm", mutates_args=())
def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for 2-D float32 CUDA tensors (any strides with a unit dimension)."""
    c = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32, device=a.device)
    gemm(a, b, c)
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
        if x.dtype != torch.float32 or not x.is_cuda or self.weight.dtype != torch.float32:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        y = torch.ops.tuned.mm(x.reshape(-1, self.in_features), self.weight.t())
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)


def swap_linear(model):
    """Replaces every nn.Linear of model (in place) by tuned's Linear; returns model."""
    for name, child in model.named_children():
        if isinstance(child, torch.nn.Linear):
            setattr(model, name, Linear(child))
        else:
            swap_linear(child)
    return model
