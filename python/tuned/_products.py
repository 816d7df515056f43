"""How a product of strided arrays becomes one call of tuned_gemm_strided_batched_ex.

c[z] = a[z] @ b[z] for z in 0 .. batch - 1, each operand a (batch, rows, cols) array given by its
pointer, shape and strides in elements (a batch stride of 0 shares one matrix between every
product). libtuned is column-major (cuBLAS conventions): a matrix stored row-major is the
column-major matrix of its transpose, so a row-major c is computed as c^T = b^T a^T. Nothing here
knows torch or CUDA: tuned.gemm and tuned.torch_op build Operands from their arrays, and the CPU
tests check the arguments against a reference that reads memory exactly as libtuned would.
"""
from collections import namedtuple

INT_MAX = 2**31 - 1  # libtuned's sizes and leading dimensions are C ints

#: One call's arguments, in tuned_gemm_strided_batched_ex's order (alpha, beta, compute, the
#: epilogue and the stream are the caller's). bias_kind: the bias vector's kind for a vector of
#: c's columns (tuned_bias_t: 1 per row of the call's C, 2 per column).
Call = namedtuple("Call", "op_a op_b m n k a lda stride_a b ldb stride_b c ldc stride_c batch "
                          "bias_kind")


#: A batch turned over (turn_over): which operands are computed on as copies in the other storage
#: order (c: the product writes a copy that is then copied into c), and the call made on them
#: (its pointers the copies').
Turn = namedtuple("Turn", "copy_a copy_b copy_c call")

# turn_over's cost model, from an H100's attention sweeps (an H200 is a little faster at all):
# a device-to-device copy moves ~3.0 TB/s counting reads and writes, and a torch copy costs ~10 us
# of host time; a batch runs at ~80 TFLOP/s where a TMA-fed kernel of 128-row tiles serves it,
# ~60 where it reads B transposed (no TMA-fed kernel does in a batch) and ~50 where m is at most
# 64 (half of a 128-row tile idle, a 64-row one alone on its SM).
COPY_BYTES_PER_S = 3.0e12
COPY_HOST_S = 10e-6
BATCH_FLOPS_PER_S = 80e12
TRANSPOSED_B_BATCH_FLOPS_PER_S = 60e12
FEW_ROWS_BATCH_FLOPS_PER_S = 50e12
TURN_GAIN = 0.9  # turned over only where the model says 10 % faster, copies included


class NoUnitStride(ValueError):
    """An operand whose matrices have no unit stride along either dimension: a contiguous copy of
    it can be computed on (the caller makes one)."""

    def __init__(self, name, message):
        super().__init__(message)
        self.name = name


class Operand:
    """A (batch, rows, cols) array: pointer (bytes), shape, strides in elements; name for
    messages. storage() says how its matrices are stored."""

    __slots__ = ("name", "pointer", "batch", "rows", "cols", "batch_stride", "row_stride",
                 "col_stride")

    def __init__(self, name, pointer, shape, strides):
        self.name, self.pointer = name, pointer
        self.batch, self.rows, self.cols = shape
        self.batch_stride, self.row_stride, self.col_stride = strides
        if self.batch == 1:
            self.batch_stride = 0

    def storage(self):
        """(column_major, ld) of each matrix, column-major where both fit (a vector, a 1 x 1);
        NoUnitStride where neither does. tuned._Matrix._layout and tuned._native's read_matrix
        follow the same rule."""
        rows, cols, s_row, s_col = self.rows, self.cols, self.row_stride, self.col_stride
        if (s_row == 1 or rows == 1) and (s_col >= max(1, rows) or cols == 1):
            return True, max(s_col, rows, 1)
        if (s_col == 1 or cols == 1) and (s_row >= max(1, cols) or rows == 1):
            return False, max(s_row, cols, 1)
        raise NoUnitStride(self.name, f"{self.name} needs a unit stride along one of its last two "
                                      f"dimensions (strides {(s_row, s_col)} elements, shape "
                                      f"{(rows, cols)})")


def batch_count(a, b, c):
    """The products' count: a's and b's batch, equal or one of them 1 (shared); c's must be it."""
    batch = max(a.batch, b.batch)
    for x in (a, b):
        if x.batch not in (1, batch):
            raise ValueError(f"a and b must have one batch size or one of them 1, got {a.batch} "
                             f"and {b.batch}")
    if c.batch != batch:
        raise ValueError(f"c must hold {batch} products, got {c.batch}")
    return batch


def with_pointers(call, a, b, c):
    """call for other operands of the same shapes and strides (pointers in bytes): a plan depends
    on the operands' geometry alone, so a caller may keep it."""
    if call.bias_kind == 2:  # C = op(A) op(B): a, b in order
        return call._replace(a=a, b=b, c=c)
    return call._replace(a=b, b=a, c=c)  # c^T = b^T a^T


def plan(a, b, c):
    """The Call computing c = a @ b (every product), or ValueError naming what does not fit;
    NoUnitStride for an operand the caller may copy."""
    if a.cols != b.rows:
        raise ValueError(f"a @ b needs a's columns == b's rows, got {a.rows}x{a.cols} and "
                         f"{b.rows}x{b.cols}")
    if (c.rows, c.cols) != (a.rows, b.cols):
        raise ValueError(f"c must be {a.rows}x{b.cols}, got {c.rows}x{c.cols}")
    batch = batch_count(a, b, c)
    a_col, lda = a.storage()
    b_col, ldb = b.storage()
    c_col, ldc = c.storage()
    if batch > 1 and c.batch_stride < c.rows * c.cols:
        raise ValueError(f"c's products overlap (batch stride {c.batch_stride} elements for "
                         f"{c.rows}x{c.cols} matrices)")
    m, n, k = a.rows, b.cols, a.cols
    if c_col:  # C = op(A) op(B); a row-major a is A^T stored column-major
        call = Call(int(not a_col), int(not b_col), m, n, k, a.pointer, lda, a.batch_stride,
                    b.pointer, ldb, b.batch_stride, c.pointer, ldc, c.batch_stride, batch, 2)
    else:  # c^T (n x m, column-major) = b^T a^T
        call = Call(int(b_col), int(a_col), n, m, k, b.pointer, ldb, b.batch_stride, a.pointer,
                    lda, a.batch_stride, c.pointer, ldc, c.batch_stride, batch, 1)
    too_large = [name for name, value in (("m", call.m), ("n", call.n), ("k", call.k),
                                          ("lda", call.lda), ("ldb", call.ldb),
                                          ("ldc", call.ldc), ("batch", batch))
                 if value > INT_MAX]
    if too_large:
        raise ValueError(f"too large for libtuned: {', '.join(too_large)} must be below 2**31 "
                         f"({a.rows}x{a.cols} @ {b.rows}x{b.cols}, {batch} products)")
    return call


def other_order(o):
    """The Operand of a contiguous copy of o's matrices in the other storage order (pointer 0:
    the copy's is given later, with_pointers)."""
    column_major, _ = o.storage()
    batch_stride = o.rows * o.cols if o.batch > 1 else 0
    strides = (batch_stride, o.cols, 1) if column_major else (batch_stride, 1, o.rows)
    return Operand(o.name, 0, (o.batch, o.rows, o.cols), strides)


def batch_seconds(call):
    """turn_over's estimate of a batched call's time."""
    flops = 2.0 * call.m * call.n * call.k * call.batch
    if call.op_b:
        return flops / TRANSPOSED_B_BATCH_FLOPS_PER_S
    if call.m <= 64:
        return flops / FEW_ROWS_BATCH_FLOPS_PER_S
    return flops / BATCH_FLOPS_PER_S


def turn_over(a, b, c, call):
    """A batch can run on faster kernels turned over: an operand copied in the other storage order
    (where the call reads B transposed), or the product writing c's transpose, copied into c then
    (which swaps m and n: where m is a head dimension, as in attention's p v and p^T do, its small
    operand and output are copied and the t x t one read as stored). The Turn the cost model
    (batch_seconds and the copies) puts fastest, where it is 10 % faster than the call; None
    otherwise (call = plan(a, b, c))."""
    if call.batch <= 1:
        return None
    best_seconds, best = TURN_GAIN * batch_seconds(call), None
    for copy_c in (False, True):
        for copy_a in (False, True):
            for copy_b in (False, True):
                flags = ((a, copy_a), (b, copy_b), (c, copy_c))
                copies = [x for x, flag in flags if flag]
                if not copies:
                    continue
                turned = plan(*(other_order(x) if flag else x for x, flag in flags))
                seconds = batch_seconds(turned) + sum(
                    8.0 * x.batch * x.rows * x.cols / COPY_BYTES_PER_S + COPY_HOST_S
                    for x in copies)
                if seconds < best_seconds:
                    best_seconds, best = seconds, Turn(copy_a, copy_b, copy_c, turned)
    return best
