"""Host time per call of a tiny product (8x8x8, float32, torch tensors): libtuned's C entry called
through ctypes with its arguments ready (the floor a Python call cannot go below), tuned.gemm
with and without an output on the native path (tuned._native) and on the Python path,
torch.mm into an output and torch.matmul.

Host time, not GPU time: with thousands of tiny launches queued the GPU becomes the bottleneck and
each call waits for a free launch slot, which hides the host's own cost. So calls are timed in
bursts of BURST (below the launch queue's depth) with the GPU drained before each burst, outside
the timed region; each row is the median over bursts of the time per call.

    python3 python/bench/call_overhead.py [--bursts N]
"""
import argparse
import ctypes
import statistics
import time

import torch

import tuned
from tuned._library import lib

BURST = 200


def per_call_us(fn, bursts):
    """Median over bursts of the host time per call, the GPU idle at each burst's start."""
    for _ in range(BURST):  # warm-up: first-use choices, caches
        fn()
    times = []
    for _ in range(bursts):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(BURST):
            fn()
        times.append((time.perf_counter() - start) / BURST * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bursts", type=int, default=100, help="bursts of %d calls" % BURST)
    bursts = parser.parse_args().bursts

    a, b, c = (torch.randn((8, 8), device="cuda") for _ in range(3))
    one, zero = ctypes.c_float(1), ctypes.c_float(0)
    stream = torch.cuda.current_stream().cuda_stream
    raw = (0, 0, 8, 8, 8, ctypes.byref(one), a.data_ptr(), 8, b.data_ptr(), 8, ctypes.byref(zero),
           c.data_ptr(), 8, stream)

    def tuned_rows(native):
        tuned._use_native(native)
        label = "native" if native else "Python"
        return {f"tuned.gemm(a, b, c), {label} path": per_call_us(lambda: tuned.gemm(a, b, c),
                                                                 bursts),
                f"tuned.gemm(a, b), {label} path": per_call_us(lambda: tuned.gemm(a, b), bursts)}

    results = {"tuned_gemm through ctypes, arguments ready": per_call_us(
        lambda: lib.tuned_gemm(*raw), bursts)}
    if tuned._native is None:
        print("tuned._native is not built: the Python path only")
    else:
        results.update(tuned_rows(native=True))
    results.update(tuned_rows(native=False))
    tuned._use_native(True)
    results["torch.mm(a, b, out=c)"] = per_call_us(lambda: torch.mm(a, b, out=c), bursts)
    results["torch.matmul(a, b)"] = per_call_us(lambda: torch.matmul(a, b), bursts)

    print(f"host time per call, median of {bursts} bursts of {BURST} calls, GPU drained before "
          f"each burst ({torch.cuda.get_device_name()}, torch {torch.__version__})")
    for name, us in results.items():
        print(f"{name:45s} {us:7.2f} us per call")
    floor = results["tuned_gemm through ctypes, arguments ready"]
    for label in ("native", "Python"):
        name = f"tuned.gemm(a, b, c), {label} path"
        if name in results:
            print(f"tuned.gemm(a, b, c) - C call, {label} path:{' ' * (14 - len(label))}"
                  f"{results[name] - floor:7.2f} us")


if __name__ == "__main__":
    main()
