"""Which of a torch program's products tuned serves, and how: torch's rules decide.

A product is routed when every tensor of it is float32, strided, on one device of the router's
type (CUDA), outside autocast, with no out= and sizes libtuned takes; its compute type follows
torch's FP32 matmul precision ("highest": FP32-accurate; "high", "medium" or allow_tf32: TF32).
Everything else goes to torch unchanged, with one debug line saying why. Routed calls go to
`ops` (tuned.torch_op's operators, which have autograd formulas, fake tensors for torch.compile
and run in CUDA graphs; the CPU tests give it a recording reference on CPU tensors), reshaped and
broadcast the way torch.matmul does it.
"""
import logging

from ._torch_products import COMPUTE_DEFAULT, COMPUTE_TF32

log = logging.getLogger("tuned.torch")

_INT_MAX = 2**31 - 1


class Refused(Exception):
    """A call tuned leaves to torch; the message says why (the debug log's line)."""


class Router:
    """route(func, args, kwargs) for the products it knows: torch.mm, bmm, matmul, addmm, baddbmm,
    F.linear and their Tensor methods and operators. ops: mm(a, b, compute), bmm(a, b, compute),
    linear(x, weight, bias, compute), addmm(input, a, b, beta, alpha, compute),
    baddbmm(input, a, b, beta, alpha, compute), each a new tensor."""

    def __init__(self, torch, ops, device_type="cuda"):
        self.torch, self.ops, self.device_type = torch, ops, device_type
        self.refusals = {}  # reason -> count (a test and a log see what was left to torch)

        def precision():
            if torch.get_float32_matmul_precision() != "highest" or \
                    torch.backends.cuda.matmul.allow_tf32:
                return COMPUTE_TF32
            return COMPUTE_DEFAULT
        # torch.compile cannot trace the precision getters (a str result is a graph break): it
        # reads them once as it compiles the graph, as it does for its own matmuls' precision.
        compiler = getattr(torch, "compiler", None)
        constant = getattr(compiler, "assume_constant_result", None)
        self._precision = constant(precision) if constant else precision
        F = torch.nn.functional
        T = torch.Tensor
        self.handlers = {
            torch.mm: self._mm, T.mm: self._mm,
            torch.bmm: self._bmm, T.bmm: self._bmm,
            torch.matmul: self._matmul, T.matmul: self._matmul, T.__matmul__: self._matmul,
            T.__rmatmul__: self._rmatmul,
            F.linear: self._linear,
            torch.addmm: self._addmm, T.addmm: self._addmm,
            torch.baddbmm: self._baddbmm, T.baddbmm: self._baddbmm,
        }

    def handles(self, func):
        return func in self.handlers

    def route(self, func, args, kwargs):
        """The routed call's result; Refused (with the reason) for what torch must compute."""
        return self.handlers[func](args, kwargs or {})

    def refuse(self, reason):
        """Counts and logs (debug, once per reason) a refusal; raises Refused."""
        count = self.refusals.get(reason, 0)
        self.refusals[reason] = count + 1
        if count == 0:
            log.debug("tuned: left to torch: %s", reason)
        raise Refused(reason)

    # ----- eligibility ---------------------------------------------------------------------------

    def _check(self, tensors, kwargs, allowed=()):
        """The compute type for these operands, or a refusal naming the rule they break."""
        torch = self.torch
        extra = [k for k in kwargs if k not in allowed]
        if extra:
            self.refuse(f"keyword {extra[0]}= (out= and others are torch's)")
        device = None
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                self.refuse(f"an operand is a {type(t).__name__}, not a tensor")
            if t.dtype != torch.float32:
                self.refuse(f"dtype {t.dtype} (tuned computes float32)")
            if t.layout != torch.strided:
                self.refuse(f"layout {t.layout}")
            if t.device.type != self.device_type:
                self.refuse(f"a tensor on {t.device.type}")
            if device is None:
                device = t.device
            elif t.device != device:
                self.refuse(f"tensors on {device} and {t.device}")
        if self._autocast(device):
            self.refuse("autocast is on (its dtypes are torch's)")
        return self.compute_type()

    def _autocast(self, device):
        torch = self.torch
        try:
            return torch.is_autocast_enabled(self.device_type)
        except TypeError:  # torch < 2.4: one flag per device type
            if self.device_type == "cpu":
                return torch.is_autocast_cpu_enabled()
            return torch.is_autocast_enabled()

    def compute_type(self):
        """torch's FP32 matmul precision as a tuned_compute_t: "highest" keeps FP32 accuracy;
        "high" and "medium" (allow_tf32) accept TF32 rounding."""
        return self._precision()

    def _sizes(self, *tensors):
        for t in tensors:
            if any(s > _INT_MAX for s in t.shape):
                self.refuse(f"a size past 2**31 - 1 (shape {tuple(t.shape)})")

    # ----- the products --------------------------------------------------------------------------

    def _mm(self, args, kwargs):
        a, b = self._two(args, kwargs, "mat2")
        compute = self._check((a, b), kwargs, ("mat2",))
        if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
            self.refuse("mm of operands that are not two fitting matrices (torch's error)")
        self._sizes(a, b)
        return self.ops.mm(a, b, compute)

    def _bmm(self, args, kwargs):
        a, b = self._two(args, kwargs, "mat2")
        compute = self._check((a, b), kwargs, ("mat2",))
        if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
            self.refuse("bmm of operands that are not two fitting batches (torch's error)")
        self._sizes(a, b)
        return self.ops.bmm(a, b, compute)

    def _rmatmul(self, args, kwargs):
        if len(args) != 2:
            self.refuse("__rmatmul__ without two operands")
        return self._matmul((args[1], args[0]), kwargs)

    def _matmul(self, args, kwargs):
        a, b = self._two(args, kwargs, "other")
        compute = self._check((a, b), kwargs, ("other",))
        self._sizes(a, b)
        return self.matmul(a, b, compute)

    def matmul(self, a, b, compute):
        """torch.matmul's semantics (vectors, broadcast batches) on ops.mm and ops.bmm."""
        if a.dim() == 0 or b.dim() == 0:
            self.refuse("matmul of a scalar (torch's error)")
        if a.dim() == 1 and b.dim() == 1:
            self.refuse("dot product of two vectors")
        k = a.shape[-1]
        if b.shape[-2 if b.dim() > 1 else 0] != k:
            self.refuse("matmul of operands that do not fit (torch's error)")
        if b.dim() <= 2:
            # a's leading dimensions folded into its rows (a view where they are contiguous: the
            # weights' layers of a transformer), b a matrix or a vector.
            rows = a.reshape(-1, k)
            mat = b if b.dim() == 2 else b.unsqueeze(1)
            out = self.ops.mm(rows, mat, compute)
            shape = tuple(a.shape[:-1]) + ((b.shape[1],) if b.dim() == 2 else ())
            return out.reshape(shape)
        # A batch: torch's broadcast of the leading dimensions, each operand as a batch of
        # matrices (a shared one where it has no leading dimensions of its own).
        a2 = a.unsqueeze(0) if a.dim() == 1 else a
        batch_shape = self.torch.broadcast_shapes(tuple(a2.shape[:-2]), tuple(b.shape[:-2]))
        left = self._as_batch(a2, batch_shape)
        right = self._as_batch(b, batch_shape)
        out = self.ops.bmm(left, right, compute)
        shape = tuple(batch_shape) + (a2.shape[-2], b.shape[-1])
        out = out.reshape(shape)
        return out.squeeze(-2) if a.dim() == 1 else out

    def _as_batch(self, x, batch_shape):
        """x as (batch, rows, cols): one shared matrix (batch 1) where x has no batch of its own,
        else x broadcast to batch_shape and flattened (a view where torch can make one)."""
        if x.dim() == 2 or all(s == 1 for s in x.shape[:-2]):
            return x.reshape((1,) + tuple(x.shape[-2:]))
        return x.expand(tuple(batch_shape) + tuple(x.shape[-2:])).reshape(
            (-1,) + tuple(x.shape[-2:]))

    def _linear(self, args, kwargs):
        if len(args) < 2 and "weight" not in kwargs:
            self.refuse("F.linear without a weight (torch's error)")
        x = args[0] if args else kwargs.get("input")
        weight = args[1] if len(args) > 1 else kwargs.get("weight")
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
        tensors = (x, weight) if bias is None else (x, weight, bias)
        compute = self._check(tensors, kwargs, ("input", "weight", "bias"))
        if weight.dim() != 2 or x.dim() == 0 or x.shape[-1] != weight.shape[1]:
            self.refuse("F.linear of operands that do not fit (torch's error)")
        if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
            self.refuse("F.linear with a bias that is not one value per output")
        self._sizes(x, weight)
        rows = x.reshape(-1, x.shape[-1])
        out = self.ops.linear(rows, weight, bias, compute)
        return out.reshape(tuple(x.shape[:-1]) + (weight.shape[0],))

    def _addmm(self, args, kwargs):
        input, a, b, beta, alpha = self._scaled(args, kwargs, ("mat1", "mat2"))
        compute = self._check((input, a, b), kwargs, ("input", "mat1", "mat2", "beta", "alpha"))
        if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
            self.refuse("addmm of operands that are not two fitting matrices (torch's error)")
        self._broadcasts(input, (a.shape[0], b.shape[1]))
        self._sizes(a, b)
        return self.ops.addmm(input, a, b, beta, alpha, compute)

    def _baddbmm(self, args, kwargs):
        input, a, b, beta, alpha = self._scaled(args, kwargs, ("batch1", "batch2"))
        compute = self._check((input, a, b), kwargs,
                              ("input", "batch1", "batch2", "beta", "alpha"))
        if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
            self.refuse("baddbmm of operands that are not two fitting batches (torch's error)")
        self._broadcasts(input, (a.shape[0], a.shape[1], b.shape[2]))
        self._sizes(a, b)
        return self.ops.baddbmm(input, a, b, beta, alpha, compute)

    # ----- arguments -----------------------------------------------------------------------------

    def _two(self, args, kwargs, second):
        if len(args) == 2:
            return args
        if len(args) == 1 and second in kwargs:
            return args[0], kwargs[second]
        self.refuse("not two operands")

    def _scaled(self, args, kwargs, names):
        """(input, a, b, beta, alpha) of addmm/baddbmm."""
        values = list(args[:3])
        for name in ("input",) + names:
            if len(values) < 3 and name in kwargs:
                values.append(kwargs[name])
        if len(values) != 3 or len(args) > 3:
            self.refuse("addmm/baddbmm with positional beta or alpha")
        beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
        for name, value in (("beta", beta), ("alpha", alpha)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.refuse(f"{name} of type {type(value).__name__}")
        return values[0], values[1], values[2], float(beta), float(alpha)

    def _broadcasts(self, input, shape):
        try:
            self.torch.broadcast_shapes(tuple(input.shape), shape)
        except RuntimeError:
            self.refuse("input that does not broadcast to the product (torch's error)")
