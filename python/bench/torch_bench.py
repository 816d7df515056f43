"""tuned's PyTorch switch against torch itself, side by side in one process (issue 65's figures):

1. training: a GPT-style decoder (embedding 1600, 25 heads, MLP 6400, vocabulary 50257, 1024
   tokens, batch 4, attention through matmul of 4-D tensors) trained for --steps steps in FP32
   from the same initial weights and batches with tuned.torch_op enabled and disabled: the loss of
   every step, the median step time after warm-up, and each forward output's normwise error
   against an FP64 copy of the model (on the initial weights); then the same model under
   torch.autocast(bfloat16): outputs with the switch on and off compared bit for bit;
2. bmm on attention shapes (batch * heads 64-256, 128-2048 tokens, head dims 64 and 128; the
   forward products q k^T and p v and the backward ones) against torch.bmm, time-weighted;
3. F.linear with bias and GELU fused in the product's kernel against the unfused tuned path
   (linear with its bias, then torch's GELU), no gradient; beside them the product alone, with
   its bias only, and torch's F.linear + GELU;
4. the host time of one small call through each route (torch, tuned.gemm, the operators, routed).

torch's FP32 matmul precision is "highest" (TF32 off) throughout, as for torch's own FP32.

    python torch_bench.py --out python_<device>.json [--layers 12] [--steps 20]
"""
import argparse
import copy
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F

import tuned
import tuned.torch_op
from mm_vs_torch import timed  # (this folder: the script's own, first on the path)


# ----- the model ------------------------------------------------------------------------------------

class Attention(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        mask = torch.ones((t, t), dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class Block(torch.nn.Module):
    def __init__(self, d, heads, hidden):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.fc, self.out = torch.nn.Linear(d, hidden), torch.nn.Linear(hidden, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Gpt(torch.nn.Module):
    def __init__(self, layers, d=1600, heads=25, hidden=6400, vocabulary=50257, tokens=1024):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(vocabulary, d), torch.nn.Embedding(tokens, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads, hidden) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocabulary, bias=False)
        for p in self.parameters():  # GPT-2's initialisation scale
            if p.dim() > 1:
                torch.nn.init.normal_(p, std=0.02)

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def normwise_error(y, exact):
    exact = exact.double()
    return ((y.double() - exact).norm() / exact.norm().clamp_min(1e-300)).item()


def train(model, batches, steps, warmup):
    """Losses of every step and the median time of the steps after warmup (ms)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    losses, times = [], []
    for step in range(steps):
        tokens, targets = batches[step % len(batches)]
        torch.cuda.synchronize()
        start = time.perf_counter()
        logits = model(tokens)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
        losses.append(loss.item())
    return losses, statistics.median(times[warmup:])


def training(args):
    torch.manual_seed(65)
    initial = Gpt(args.layers).cuda()
    generator = torch.Generator(device="cuda").manual_seed(1)
    batches = []
    for _ in range(4):
        data = torch.randint(0, 50257, (args.batch, 1025), device="cuda", generator=generator)
        batches.append((data[:, :-1].contiguous(), data[:, 1:].contiguous()))
    result = {"layers": args.layers, "batch": args.batch, "tokens": 1024, "embedding": 1600,
              "heads": 25, "mlp": 6400, "vocabulary": 50257, "steps": args.steps}
    # Forward errors against an FP64 copy, on the initial weights.
    tokens = batches[0][0]
    with torch.no_grad():
        exact = copy.deepcopy(initial).double()(tokens)
        tuned.torch_op.enable()
        on = initial(tokens)
        tuned.torch_op.disable()
        off = initial(tokens)
        result["forward_error_tuned"] = normwise_error(on, exact)
        result["forward_error_torch"] = normwise_error(off, exact)
        del exact, on, off
    torch.cuda.empty_cache()
    for name, enabled in (("torch", False), ("tuned", True)):
        model = copy.deepcopy(initial)
        if enabled:
            tuned.torch_op.enable()
        losses, ms = train(model, batches, args.steps, args.warmup)
        tuned.torch_op.disable()
        result[f"losses_{name}"], result[f"step_ms_{name}"] = losses, ms
        print(f"training {name}: step {ms:.1f} ms, losses {losses[0]:.5f} .. {losses[-1]:.5f}",
              flush=True)
        del model
        torch.cuda.empty_cache()
    result["speedup"] = result["step_ms_torch"] / result["step_ms_tuned"]
    result["loss_max_relative_difference"] = max(
        abs(a - b) / abs(b) for a, b in zip(result["losses_tuned"], result["losses_torch"]))
    # Autocast: torch's, bit for bit, whatever the switch.
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        tuned.torch_op.enable()
        on = initial(tokens)
        tuned.torch_op.disable()
        off = initial(tokens)
    result["autocast_outputs_identical"] = bool(torch.equal(on, off))
    result["autocast_dtype"] = str(on.dtype)
    return result


# ----- products ---------------------------------------------------------------------------------

def timed_pair(first, second, rounds=None):
    """Median ms of each of two calls, interleaved (CUDA events around repeated calls)."""
    first(), second()
    probe = timed(first, 1)
    repeat = rounds or max(1, min(200, int(5.0 / max(probe, 1e-3))))
    a, b = [], []
    for _ in range(5):
        a.append(timed(first, repeat))
        b.append(timed(second, repeat))
    return statistics.median(a), statistics.median(b)


def bmm_shapes():
    """(name, batch, m, n, k, transposes) of attention's batched products."""
    shapes = []
    for bh in (64, 128, 256):
        for t in (128, 512, 1024, 2048):
            for hd in (64, 128):
                if bh * t * t * 4 > 4 << 30:  # scores past 4 GB
                    continue
                shapes += [
                    (f"q k^T  bh{bh} t{t} d{hd}", bh, t, t, hd, (False, True)),
                    (f"p v    bh{bh} t{t} d{hd}", bh, t, hd, t, (False, False)),
                    (f"dp v^T bh{bh} t{t} d{hd}", bh, t, t, hd, (False, True)),
                    (f"p^T do bh{bh} t{t} d{hd}", bh, t, hd, t, (True, False)),
                ]
    return shapes


def operand(batch, rows, cols, transposed):
    if transposed:
        return torch.randn((batch, cols, rows), device="cuda").transpose(1, 2)
    return torch.randn((batch, rows, cols), device="cuda")


def bmm_benchmark():
    rows = []
    for name, batch, m, n, k, (ta, tb) in bmm_shapes():
        a, b = operand(batch, m, k, ta), operand(batch, k, n, tb)
        with torch.no_grad():
            ours = torch.ops.tuned.bmm(a, b, 0)
            theirs = torch.bmm(a, b)
            error = torch_error = 0.0  # the worst of the first, a middle and the last product
            for z in sorted({0, batch // 2, batch - 1}):
                exact = a[z].double() @ b[z].double()
                error = max(error, normwise_error(ours[z], exact))
                torch_error = max(torch_error, normwise_error(theirs[z], exact))
            del ours, theirs
            tuned_ms, torch_ms = timed_pair(lambda: torch.ops.tuned.bmm(a, b, 0),
                                            lambda: torch.bmm(a, b))
            # The switch's route: torch.bmm itself, routed (the mode entered for each call).
            mode = tuned.torch_op.routing()

            def routed():
                with mode:
                    return torch.bmm(a, b)
            routed_ms, _ = timed_pair(routed, lambda: torch.bmm(a, b))
        gflop = 2.0 * batch * m * n * k / 1e9
        rows.append({"name": name, "batch": batch, "m": m, "n": n, "k": k, "gflop": gflop,
                     "tuned_ms": tuned_ms, "torch_ms": torch_ms, "ratio": torch_ms / tuned_ms,
                     "routed_ms": routed_ms, "routed_ratio": torch_ms / routed_ms,
                     "error": error, "torch_error": torch_error})
        print(f"{name:28s} {gflop:8.1f} GFLOP  torch {torch_ms:8.3f} ms  tuned {tuned_ms:8.3f} ms"
              f"  {torch_ms / tuned_ms:5.2f}x  routed {torch_ms / routed_ms:5.2f}x"
              f"  err {error:.1e} ({torch_error:.1e})", flush=True)
        del a, b
    summary = {
        "shapes": len(rows),
        "time_weighted_ratio": sum(r["torch_ms"] for r in rows) / sum(r["tuned_ms"] for r in rows),
        "geomean_ratio": math.exp(statistics.mean(math.log(r["ratio"]) for r in rows)),
        "worst": min(rows, key=lambda r: r["ratio"])["name"],
        "worst_ratio": min(r["ratio"] for r in rows),
        "contract_violations": [r["name"] for r in rows if r["error"] > 2 * r["torch_error"]],
        "routed_time_weighted_ratio": sum(r["torch_ms"] for r in rows) /
        sum(r["routed_ms"] for r in rows),
        "routed_geomean_ratio": math.exp(statistics.mean(math.log(r["routed_ratio"])
                                                         for r in rows)),
        "routed_worst_ratio": min(r["routed_ratio"] for r in rows),
    }
    return {"summary": summary, "rows": rows}


def fused_linear_benchmark():
    rows = []
    for rows_, d_in, d_out in ((4096, 1600, 6400), (4096, 1024, 4096), (1024, 4096, 11008),
                               (512, 768, 3072), (8192, 5120, 13824)):
        x = torch.randn((rows_, d_in), device="cuda")
        w = torch.randn((d_out, d_in), device="cuda") / math.sqrt(d_in)
        b = torch.randn((d_out,), device="cuda")
        with torch.no_grad():
            # Fused: bias and GELU (erf) in the product's kernel. Unfused: the tuned product,
            # then torch adds the bias and applies GELU (the tuned path before the epilogue).
            # Bias fused: the bias in the kernel, GELU by torch after it.
            fused = lambda: torch.ops.tuned.linear(x, w, b, 3, 0)
            unfused = lambda: F.gelu(torch.ops.tuned.linear(x, w, None, 0, 0) + b)
            bias_fused = lambda: F.gelu(torch.ops.tuned.linear(x, w, b, 0, 0))
            exact = F.gelu(F.linear(x.double(), w.double(), b.double()))
            error = normwise_error(fused(), exact)
            fused_ms, unfused_ms = timed_pair(fused, unfused)
            _, bias_fused_ms = timed_pair(fused, bias_fused)
            # Where the time goes: the product alone (the plain kernel), with the bias fused
            # (the epilogue kernel), and torch's own F.linear + GELU.
            plain_ms, bias_ms = timed_pair(lambda: torch.ops.tuned.linear(x, w, None, 0, 0),
                                           lambda: torch.ops.tuned.linear(x, w, b, 0, 0))
            torch_ms, _ = timed_pair(lambda: F.gelu(F.linear(x, w, b)), fused)
        rows.append({"m": rows_, "in": d_in, "out": d_out, "fused_ms": fused_ms,
                     "unfused_ms": unfused_ms, "ratio": unfused_ms / fused_ms,
                     "bias_fused_ms": bias_fused_ms, "ratio_to_bias_fused": bias_fused_ms / fused_ms,
                     "error": error, "plain_ms": plain_ms, "bias_ms": bias_ms,
                     "torch_ms": torch_ms,
                     # the most fusing can give: the unfused path over the product alone
                     "ceiling": unfused_ms / plain_ms})
        print(f"linear+gelu {rows_}x{d_in}->{d_out}: fused {fused_ms:.3f} ms, unfused "
              f"{unfused_ms:.3f} ms ({unfused_ms / fused_ms:.2f}x), bias fused "
              f"{bias_fused_ms:.3f} ms ({bias_fused_ms / fused_ms:.2f}x), err {error:.1e}; "
              f"product alone {plain_ms:.3f} (ceiling {unfused_ms / plain_ms:.2f}x), with bias "
              f"{bias_ms:.3f}, torch {torch_ms:.3f}",
              flush=True)
    summary = {"time_weighted_ratio": sum(r["unfused_ms"] for r in rows) /
               sum(r["fused_ms"] for r in rows),
               "worst_ratio": min(r["ratio"] for r in rows),
               "time_weighted_ratio_to_bias_fused": sum(r["bias_fused_ms"] for r in rows) /
               sum(r["fused_ms"] for r in rows),
               # A product's time does not shrink by fusing: where it dwarfs the bias add and
               # GELU (8192 x 5120 -> 13824) no fusion reaches 1.1x. What share of the time
               # torch's bias and GELU take after the product the fused kernel saves:
               "time_weighted_ceiling": sum(r["unfused_ms"] for r in rows) /
               sum(r["plain_ms"] for r in rows),
               "share_of_epilogue_time_saved":
                   sum(r["unfused_ms"] - r["fused_ms"] for r in rows) /
                   sum(r["unfused_ms"] - r["plain_ms"] for r in rows),
               # the model (embedding 1600, MLP 6400, 4096 tokens): its MLP's first layer
               "gpt_mlp_ratio": next(r["ratio"] for r in rows
                                     if (r["m"], r["in"], r["out"]) == (4096, 1600, 6400))}
    return {"summary": summary, "rows": rows}


def call_overhead():
    """Host time of one small call (µs, CPU-bound: no GPU wait between calls) through each route:
    the floor under every short product."""
    a, b = torch.randn((8, 8), device="cuda"), torch.randn((8, 8), device="cuda")
    a3, b3 = a[None].expand(4, 8, 8).contiguous(), b[None].expand(4, 8, 8).contiguous()
    routes = {"torch.mm": lambda: torch.mm(a, b), "tuned.gemm": lambda: tuned.gemm(a, b),
              "torch.ops.tuned.mm": lambda: torch.ops.tuned.mm(a, b, 0),
              "torch.bmm": lambda: torch.bmm(a3, b3),
              "torch.ops.tuned.bmm": lambda: torch.ops.tuned.bmm(a3, b3, 0)}
    result = {}
    with torch.no_grad():
        for name, fn in routes.items():
            for _ in range(50):
                fn()
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(2000):
                fn()
            result[name] = (time.perf_counter() - start) / 2000 * 1e6
            torch.cuda.synchronize()
    with torch.no_grad(), tuned.torch_op.routing():
        start = time.perf_counter()
        for _ in range(2000):
            torch.bmm(a3, b3)
        result["torch.bmm routed"] = (time.perf_counter() - start) / 2000 * 1e6
        torch.cuda.synchronize()
    print("host us per call: " + ", ".join(f"{k} {v:.1f}" for k, v in result.items()), flush=True)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--only", choices=["training", "bmm", "linear", "overhead"],
                        action="append")
    args = parser.parse_args()
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.allow_tf32 = False
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "tuned": tuned.version}
    parts = args.only or ["training", "bmm", "linear", "overhead"]
    run = {"training": lambda: training(args), "bmm": bmm_benchmark,
           "linear": fused_linear_benchmark, "overhead": call_overhead}
    names = {"linear": "fused_linear", "overhead": "call_overhead_us"}
    for part in ["training", "bmm", "linear", "overhead"]:
        if part in parts:
            result[names.get(part, part)] = run[part]()
            if args.out:  # after each part: a run cut short keeps what it measured
                with open(args.out, "w") as f:
                    json.dump(result, f, indent=1)
    print(json.dumps({k: v.get("summary", v) if isinstance(v, dict) else v
                      for k, v in result.items()}, indent=1,
                     default=lambda o: None)[:4000])


if __name__ == "__main__":
    main()
