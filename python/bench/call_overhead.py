"""Host time per call of a tiny product (8x8x8, float32, torch tensors): libtuned's C entry called
from a C loop in this process (the floor: python/bench/c_call_floor.c, built into a small shared
library and handed tuned_gemm's address), the same entry through ctypes with its arguments
ready, tuned.gemm with and without an output on the native path (tuned._native) and on the
Python path, torch.mm into an output and torch.matmul; then where the native path's time goes.

Host time, not GPU time: with thousands of tiny launches queued the GPU becomes the bottleneck and
each call waits for a free launch slot, which hides the host's own cost. So calls are timed in
bursts of BURST (below the launch queue's depth) with the GPU drained before each burst, outside
the timed region. Rows are measured in turn, round after round (machine noise, clock changes and
warm caches then fall on every row alike), and each row is the median over all its bursts.

    python3 python/bench/call_overhead.py [--rounds N] [--c-floor libc_call_floor.so]
"""
import argparse
import ctypes
import statistics
import time

import torch

import tuned
from tuned._library import lib

BURST = 200


def bursts_us(fn, bursts):
    """Host time per call of each burst, the GPU idle at each burst's start."""
    times = []
    for _ in range(bursts):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(BURST):
            fn()
        times.append((time.perf_counter() - start) / BURST * 1e6)
    torch.cuda.synchronize()
    return times


def c_floor(path, a, b, c, stream):
    """A row function timing tuned_gemm from C (bursts -> times), or None without the library."""
    floor = ctypes.CDLL(path)
    floor.c_call_floor.restype = ctypes.c_int
    sync_type = ctypes.CFUNCTYPE(None)
    floor.c_call_floor.argtypes = [ctypes.c_void_p, sync_type, ctypes.c_int, ctypes.c_int,
                                   ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.POINTER(ctypes.c_double)]
    sync = sync_type(torch.cuda.synchronize)
    gemm = ctypes.cast(lib.tuned_gemm, ctypes.c_void_p).value

    def run(bursts):
        times = (ctypes.c_double * bursts)()
        status = floor.c_call_floor(gemm, sync, bursts, BURST, 8, a.data_ptr(), b.data_ptr(),
                                    c.data_ptr(), stream, times)
        if status:
            raise tuned.Error(status, lib.tuned_last_error().decode())
        return list(times)
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds over every row")
    parser.add_argument("--bursts", type=int, default=10, help="bursts of %d calls per row and "
                                                               "round" % BURST)
    parser.add_argument("--c-floor", help="libc_call_floor.so (python/bench/c_call_floor.c)")
    args = parser.parse_args()

    a, b, c = (torch.randn((8, 8), device="cuda") for _ in range(3))
    one, zero = ctypes.c_float(1), ctypes.c_float(0)
    stream = torch.cuda.current_stream().cuda_stream
    raw = (0, 0, 8, 8, 8, ctypes.byref(one), a.data_ptr(), 8, b.data_ptr(), 8, ctypes.byref(zero),
           c.data_ptr(), 8, stream)

    def path(native, fn):
        def run(bursts):
            tuned._use_native(native)
            try:
                return bursts_us(fn, bursts)
            finally:
                tuned._use_native(True)
        return run

    def timed(fn):
        return lambda bursts: bursts_us(fn, bursts)

    rows = {}
    if args.c_floor:
        rows["tuned_gemm from C (this process)"] = c_floor(args.c_floor, a, b, c, stream)
    rows["tuned_gemm through ctypes, arguments ready"] = timed(lambda: lib.tuned_gemm(*raw))
    paths = ([True] if tuned._native is not None else []) + [False]
    for native in paths:
        label = "native" if native else "Python"
        rows[f"tuned.gemm(a, b, c), {label} path"] = path(native, lambda: tuned.gemm(a, b, c))
        rows[f"tuned.gemm(a, b), {label} path"] = path(native, lambda: tuned.gemm(a, b))
    rows["torch.mm(a, b, out=c)"] = timed(lambda: torch.mm(a, b, out=c))
    rows["torch.matmul(a, b)"] = timed(lambda: torch.matmul(a, b))
    # Where the native path's time goes: the tensors' reads and the mapping (no launch), the same
    # reads from Python, torch's current device and stream.
    tuned.gemm(a, b, c)
    fast = getattr(tuned._fast_gemm, "__self__", None)
    if fast is not None:
        rows["  native reads and mapping, no launch"] = timed(
            lambda: fast.gemm_arguments(a, b, c))
    rows["  the same tensor reads from Python"] = timed(
        lambda: [(t.dtype, t.shape, t.stride(), t.data_ptr(), t.get_device()) for t in (a, b, c)])
    raw_stream, get_device = torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice
    rows["  current device and stream from Python"] = timed(lambda: (get_device(), raw_stream(0)))

    for run in rows.values():  # warm-up: choices made, caches filled
        run(2)
    times = {name: [] for name in rows}
    for _ in range(args.rounds):
        for name, run in rows.items():
            times[name] += run(args.bursts)
    results = {name: statistics.median(values) for name, values in times.items()}

    print(f"host time per call, median of {args.rounds} rounds x {args.bursts} bursts of {BURST} "
          f"calls, GPU drained before each burst ({torch.cuda.get_device_name()}, torch "
          f"{torch.__version__}); the native path reads tensors through torch's "
          f"{'C++ API (torch reader)' if tuned._torch_reader() else 'Python API'}")
    for name, us in results.items():
        print(f"{name:45s} {us:7.2f} us per call")
    for floor_name in ("tuned_gemm from C (this process)",
                       "tuned_gemm through ctypes, arguments ready"):
        if floor_name not in results:
            continue
        for label in ("native", "Python"):
            name = f"tuned.gemm(a, b, c), {label} path"
            if name in results:
                print(f"tuned.gemm(a, b, c) - {floor_name}, {label} path: "
                      f"{results[name] - results[floor_name]:6.2f} us")


if __name__ == "__main__":
    main()
