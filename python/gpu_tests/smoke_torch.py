"""tuned.gemm on torch CUDA tensors against an FP64 product: every layout of a and b (row-major,
column-major, transposed views), odd shapes, the result poisoned first, on torch's current stream.
A first GPU check of the Python package (issue 30); prints one line per case and a summary."""
import sys

import torch

import tuned


def view(x, layout):
    """x's values in the given storage: row-major, column-major (a transposed contiguous copy
    viewed back), or a row-major matrix with a padded leading dimension."""
    if layout == "row":
        return x.contiguous()
    if layout == "col":
        return x.t().contiguous().t()
    padded = torch.empty((x.shape[0], x.shape[1] + 3), device=x.device, dtype=x.dtype)
    padded[:, : x.shape[1]] = x
    return padded[:, : x.shape[1]]


def main():
    torch.manual_seed(30)
    torch.backends.cuda.matmul.allow_tf32 = False
    failures = 0
    stream = torch.cuda.Stream()
    for m, n, k in [(1, 1, 1), (7, 127, 1000), (1000, 7, 127), (127, 1000, 7), (4097, 33, 65)]:
        a64 = torch.rand((m, k), device="cuda", dtype=torch.float64) * 2 - 1
        b64 = torch.rand((k, n), device="cuda", dtype=torch.float64) * 2 - 1
        exact = a64 @ b64
        for la in ("row", "col", "pad"):
            for lb in ("row", "col", "pad"):
                for lc in ("row", "col"):
                    a, b = view(a64.float(), la), view(b64.float(), lb)
                    c = view(torch.full((m, n), float("nan"), device="cuda"), lc)
                    with torch.cuda.stream(stream):
                        tuned.gemm(a, b, c)
                    stream.synchronize()
                    ours = (c.double() - exact).norm() / max(exact.norm().item(), 1e-30)
                    cublas = ((a @ b).double() - exact).norm() / max(exact.norm().item(), 1e-30)
                    ok = torch.isfinite(c).all().item() and ours <= 2 * cublas + 1e-7
                    failures += not ok
                    print(f"{m}x{n}x{k} a {la} b {lb} c {lc}: error {ours:.2e} "
                          f"(torch.matmul {cublas:.2e}) {'ok' if ok else 'FAIL'}")
        c = tuned.gemm(a64.float(), b64.float())  # a new row-major result
        failures += not torch.allclose(c.double(), exact, rtol=1e-4, atol=1e-4)
    print(f"describe: {tuned.describe(a64.float(), b64.float())}")
    print(f"version {tuned.version}; {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
