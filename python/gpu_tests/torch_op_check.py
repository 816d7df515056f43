"""torch.ops.tuned.mm on an H100: a small transformer-like block of FP32 Linear layers, swapped to
tuned, in eager mode, under torch.compile (no graph break allowed) and replayed from a captured
CUDA graph, each against the same block in FP64 (normwise error within 2x torch.matmul's, TF32
off); then times of the block with tuned against torch.matmul."""
import sys
import time

import torch

import tuned
import tuned.torch_op


class Block(torch.nn.Module):
    def __init__(self, d=1024, hidden=4096):
        super().__init__()
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.up = torch.nn.Linear(d, hidden)
        self.down = torch.nn.Linear(hidden, d)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attention = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1) @ v
        x = x + self.out(attention)
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


def error(y, exact):
    return ((y.double() - exact).norm() / exact.norm()).item()


def timed(fn, x, rounds=20):
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(rounds):
        fn(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / rounds * 1e3


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(30)
    reference = Block().cuda()
    exact_block = Block().cuda().double()
    exact_block.load_state_dict(reference.state_dict())
    swapped = tuned.torch_op.swap_linear(Block().cuda())
    swapped.load_state_dict(reference.state_dict())
    x = torch.randn((4, 509, 1024), device="cuda")  # 2036 tokens: odd row counts
    with torch.no_grad():
        exact = exact_block(x.double())
        baseline = error(reference(x), exact)
        eager = error(swapped(x), exact)
        backend = "inductor"
        try:
            compiled_fn = torch.compile(swapped, fullgraph=True)  # a graph break fails
            compiled = error(compiled_fn(x), exact)
        except Exception as e:  # inductor needs a C compiler for Triton's launchers
            print(f"inductor unavailable ({type(e).__name__}: {str(e)[:200]}); aot_eager instead")
            backend = "aot_eager"
            torch._dynamo.reset()
            compiled_fn = torch.compile(swapped, fullgraph=True, backend=backend)
            compiled = error(compiled_fn(x), exact)
        print(f"torch.compile backend: {backend}")
        static_x = x.clone()
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            swapped(static_x)  # warm-up outside the capture (first calls choose kernels)
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(graph):
            static_y = swapped(static_x)
        static_x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        replayed = error(static_y, exact_block(static_x.double()))
        results = {"torch.matmul": baseline, "tuned eager": eager, "tuned compiled": compiled,
                   "tuned graph replay": replayed}
        failures = 0
        for name, value in results.items():
            ok = value <= 2 * baseline or name == "torch.matmul"
            failures += not ok
            print(f"{name:20s} normwise error {value:.2e} {'ok' if ok else 'FAIL (> 2x torch)'}")
        t_ref = timed(reference, x)
        t_eager = timed(swapped, x)
        t_comp_ref = timed(torch.compile(reference, backend=backend), x)
        t_comp = timed(compiled_fn, x)
        print(f"block time: torch.matmul eager {t_ref:.3f} ms, tuned eager {t_eager:.3f} ms "
              f"({t_ref / t_eager:.3f}x); compiled: torch {t_comp_ref:.3f} ms, tuned "
              f"{t_comp:.3f} ms ({t_comp_ref / t_comp:.3f}x)")
        a = torch.randn((1000, 127), device="cuda").t()  # a transposed view: no copy
        b = torch.randn((1000, 77), device="cuda")
        ours = torch.ops.tuned.mm(a, b)
        failures += not torch.allclose(ours, a @ b, rtol=1e-4, atol=1e-4)
        print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
