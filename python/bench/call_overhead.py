"""Host time per call of a tiny product (8x8x8, float32, torch tensors), over many calls with one
synchronization at the end: tuned.gemm with and without an output, torch.matmul and torch.mm into
an output, and libtuned's C entry called through ctypes with its arguments ready (the floor a
Python call cannot go below)."""
import ctypes
import time

import torch

import tuned
from tuned._library import lib


def per_call_us(fn, calls=20000):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def main():
    a, b, c = (torch.randn((8, 8), device="cuda") for _ in range(3))
    one, zero = ctypes.c_float(1), ctypes.c_float(0)
    stream = torch.cuda.current_stream().cuda_stream
    raw = (0, 0, 8, 8, 8, ctypes.byref(one), a.data_ptr(), 8, b.data_ptr(), 8, ctypes.byref(zero),
           c.data_ptr(), 8, stream)
    results = {
        "tuned_gemm through ctypes, arguments ready": per_call_us(lambda: lib.tuned_gemm(*raw)),
        "tuned.gemm(a, b, c)": per_call_us(lambda: tuned.gemm(a, b, c)),
        "tuned.gemm(a, b)": per_call_us(lambda: tuned.gemm(a, b)),
        "torch.mm(a, b, out=c)": per_call_us(lambda: torch.mm(a, b, out=c)),
        "torch.matmul(a, b)": per_call_us(lambda: torch.matmul(a, b)),
    }
    for name, us in results.items():
        print(f"{name:45s} {us:7.2f} us per call")


if __name__ == "__main__":
    main()
