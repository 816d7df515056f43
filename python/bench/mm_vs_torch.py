"""tuned.gemm against torch.matmul (FP32, TF32 off) on the layers of bench/gemm_networks, as a
network calls torch.matmul on row-major tensors: forward x @ W.t(), input gradient dy @ W, weight
gradient dy.t() @ x, a new row-major result each call. A layer's column-major BLAS problem
(layout, m, n, k) is that row-major product transposed: result (n x m) = op(B)^T @ op(A)^T, each
factor row-major where its BLAS letter is N and a transposed view where it is T. Both timed side by side,
interleaved, with CUDA events; each result checked against an FP64 product (normwise error within
2x torch.matmul's, the accuracy contract).

    python mm_vs_torch.py SHAPES.txt [--out python_matmul_<device>.json]
SHAPES.txt: the output of `build/bench/gemm_networks --print-shapes`."""
import argparse
import json
import math
import sys

import torch

import tuned


def operand(rows, cols, letter):
    """A rows x cols float32 factor of the row-major product for a BLAS letter: N row-major (the
    transpose of a column-major operand), T a transposed view of a row-major tensor."""
    if letter == "N":
        return torch.randn((rows, cols), device="cuda")
    return torch.randn((cols, rows), device="cuda").t()


def timed(fn, rounds):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(rounds):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / rounds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("shapes")
    parser.add_argument("--out")
    parser.add_argument("--limit", type=int, default=0, help="first N shapes only")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(30)
    rows = []
    with open(args.shapes) as f:
        lines = [line.split() for line in f if line.strip()]
    if args.limit:
        lines = lines[: args.limit]
    for fields in lines:
        name = " ".join(fields[:-4])
        layout, (m, n, k) = fields[-3], map(int, fields[-2].split("x"))
        gflop = 2.0 * m * n * k / 1e9
        a, b = operand(n, k, layout[1]), operand(k, m, layout[0])  # a @ b is n x m
        ours, theirs = tuned.gemm(a, b), torch.matmul(a, b)  # first calls: choices, warm-up
        exact = a.double() @ b.double()
        norm = max(exact.norm().item(), 1e-30)
        error = ((ours.double() - exact).norm() / norm).item()
        torch_error = ((theirs.double() - exact).norm() / norm).item()
        del exact
        rounds = max(3, min(200, int(20.0 / max(gflop, 1e-3))))
        tuned_ms, torch_ms = [], []
        for _ in range(5):  # interleaved
            tuned_ms.append(timed(lambda: tuned.gemm(a, b), rounds))
            torch_ms.append(timed(lambda: torch.matmul(a, b), rounds))
        row = {"name": name, "layout": layout, "m": m, "n": n, "k": k, "gflop": gflop,
               "tuned_ms": sorted(tuned_ms)[2], "torch_ms": sorted(torch_ms)[2],
               "error": error, "torch_error": torch_error,
               "within_contract": error <= 2 * torch_error or error < 1e-7}
        row["ratio"] = row["torch_ms"] / row["tuned_ms"]
        rows.append(row)
        print(f"{name:45s} {layout} {m}x{n}x{k} {gflop:9.3f} GFLOP: torch {row['torch_ms']:.4f} "
              f"ms, tuned {row['tuned_ms']:.4f} ms, {row['ratio']:.3f}x, error {error:.1e} "
              f"(torch {torch_error:.1e})", flush=True)
    big = [r for r in rows if r["gflop"] > 1]
    summary = {
        "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "tuned": tuned.version, "shapes": len(rows),
        "time_weighted_ratio": sum(r["torch_ms"] for r in rows) / sum(r["tuned_ms"] for r in rows),
        "geomean_ratio": math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows)),
        "geomean_ratio_above_1_gflop":
            math.exp(sum(math.log(r["ratio"]) for r in big) / len(big)) if big else None,
        "worst_ratio": min(r["ratio"] for r in rows),
        "contract_violations": [r["name"] + " " + r["layout"] for r in rows
                                if not r["within_contract"]],
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"summary": summary, "rows": rows}, f, indent=1)
    return 0 if not summary["contract_violations"] else 1


if __name__ == "__main__":
    sys.exit(main())
