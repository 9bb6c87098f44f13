#!/usr/bin/env python3
"""Times cuDNN's fused attention (PyTorch SDPA, cuDNN backend) on a GPU machine.

Validation data for attnsim: end-to-end timings of another kernel, never used to fit the
model. Timed as `attnsim run` times ours: after WARMUP calls (5), REPS (20) repetitions of
LAUNCHES (10) back-to-back calls between one CUDA event pair, enqueued without host syncs; the
median per-launch time, after PRECONDITION_MS (0) of untimed calls so that the board's power
controller has settled under the load (it acts on power averaged over about a second), and with
more repetitions than REPS where they would take less than MIN_TIMED_MS (0; the clock swings with
a period of about 0.7 s under sustained load). Random N(0,1) bf16 inputs, the same buffers every
call; writes JSON.
Usage: python3 scripts/bench_cudnn_sdpa.py OUT.json
       [SHAPES.json [WARMUP REPS LAUNCHES [PRECONDITION_MS [MIN_TIMED_MS]]]]
SHAPES.json (written by `attnsim validate --cudnn` and `attnsim bench`): a list of {"batch",
"heads", "kv_heads" (optional, default heads), "seqlen_q", "seqlen_k", "head_dim", "causal"};
without it, the built-in SHAPES below. A GQA shape (kv_heads < heads) is timed with K/V of
kv_heads heads (enable_gqa) when the cuDNN backend takes it, else with K/V of `heads` heads; each
result row says which in "kv_heads_timed". A shape cuDNN refuses gets "error" instead of "time_us".
"""
import datetime
import json
import math
import sys
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

# (batch, heads, seqlen, head_dim, causal): FA3's benchmark shapes and the issue's validation set.
SHAPES = [
    (4, 16, 8448, 128, False), (2, 16, 8192, 128, False), (2, 16, 8192, 64, False), (2, 16, 8192, 256, False),
    (2, 16, 8192, 128, True), (16, 16, 1024, 128, False), (4, 16, 4096, 64, True), (1, 16, 16384, 128, False),
]


def time_ms(fn, warmup=5, reps=20, launches=10, precondition_ms=0.0, min_timed_ms=0.0):
    """Median per-launch time (ms) of `reps` repetitions (more where they would take less than
    `min_timed_ms`) of `launches` back-to-back calls between one CUDA event pair. All repetitions
    are enqueued without a host sync, behind one untimed call, so the GPU runs the kernels back to
    back and host (Python) gaps stay out of the times. Before them, untimed calls for
    `precondition_ms` of wall-clock time. The repetition count comes from `launches` back-to-back
    calls timed once (one call timed alone would include the host's launch latency)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    if precondition_ms > 0 or min_timed_ms > 0:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(launches):
            fn()
        b.record()
        torch.cuda.synchronize()
        per_call = max(a.elapsed_time(b) / launches, 1e-3)
        # By the wall clock, in chunks of about 50 ms of calls: a count from a per-call estimate
        # fell short wherever the estimate was long.
        chunk = max(1, int(50.0 / per_call))
        end = time.perf_counter() + precondition_ms / 1e3
        while time.perf_counter() < end:
            for _ in range(chunk):
                fn()
            torch.cuda.synchronize()
        reps = min(100000, max(reps, math.ceil(min_timed_ms / (launches * per_call))))
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    fn()
    for start, end in events:
        start.record()
        for _ in range(launches):
            fn()
        end.record()
    torch.cuda.synchronize()
    times = sorted(start.elapsed_time(end) / launches for start, end in events)
    return times[len(times) // 2] if len(times) % 2 else 0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2])


def main():
    warmup, reps, launches = (int(x) for x in sys.argv[3:6]) if len(sys.argv) > 5 else (5, 20, 10)
    precondition_ms = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    min_timed_ms = float(sys.argv[7]) if len(sys.argv) > 7 else 0.0
    out = {"benchmark": "cudnn_sdpa", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "warmup": warmup, "reps": reps, "launches": launches, "precondition_ms": precondition_ms,
           "min_timed_ms": min_timed_ms,
           "method": "torch.nn.functional.scaled_dot_product_attention under sdpa_kernel(CUDNN_ATTENTION), "
                     f"bf16 N(0,1) inputs (batch, heads, seqlen, head_dim); median over {reps} repetitions of the "
                     f"per-launch time of {launches} back-to-back calls (more repetitions where they took under "
                     f"{min_timed_ms:g} ms) between one CUDA event pair (enqueued without "
                     f"host syncs), after {warmup} warm-up calls and {precondition_ms:g} ms of untimed calls; "
                     "same input buffers every call (K/V exceed L2)",
           "results": []}
    shapes = [(b, h, h, s, s, d, c) for b, h, s, d, c in SHAPES]
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            shapes = [(x["batch"], x["heads"], x.get("kv_heads", x["heads"]), x["seqlen_q"], x["seqlen_k"],
                       x["head_dim"], x["causal"]) for x in json.load(f)]
    for b, h, hk, sq, sk, d, causal in shapes:
        q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.bfloat16)
        row = {"batch": b, "heads": h, "kv_heads": hk, "seqlen": sq, "seqlen_q": sq, "seqlen_k": sk, "head_dim": d,
               "causal": causal}
        # GQA: K/V with kv_heads heads first; if the backend refuses them, K/V expanded to every head.
        for kvh in ([hk, h] if hk != h else [h]):
            k, v = (torch.randn(b, kvh, sk, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
            extra = {"enable_gqa": True} if kvh != h else {}
            try:
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    ms = time_ms(lambda: torch.nn.functional.scaled_dot_product_attention(
                        q, k, v, is_causal=causal, **extra), warmup, reps, launches, precondition_ms, min_timed_ms)
                f = 4.0 * b * h * sq * sk * d / (2 if causal else 1)
                row.update(time_us=ms * 1e3, tflops=f / (ms * 1e-3) / 1e12, kv_heads_timed=kvh)
                row.pop("error", None)
                break
            except Exception as e:  # a shape the backend refuses is recorded, not fatal
                row["error"] = str(e)[:200]
            finally:
                del k, v
        print(row, flush=True)
        out["results"].append(row)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
