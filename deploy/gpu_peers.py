#!/usr/bin/env python3
"""Attention peers on the GPU machine, on the shapes of cuda_attention_bench
(tests/bench/cuda_attention_bench.cc), so that deploy/gpu-check.sh sets
kvserve's paged kernels next to PyTorch's scaled_dot_product_attention with
its FlashAttention-2 (FLASH_ATTENTION) and cuDNN (CUDNN_ATTENTION) backends,
measured in the same run on the same GPU.

- decode: one query per sequence, `L` contiguous keys (the peers' layout;
  kvserve's are paged), 8 KV heads shared by 32 query heads (enable_gqa,
  so both read the same bytes; where this PyTorch lacks it, K/V are
  expanded to 32 heads and the row says so);
- prefill: causal, S tokens per sequence, FLOPs 4·B·H·S²·D/2.

Timing: CUDA events around 20 calls after 3 warm-ups; the median of 5.

    python3 deploy/gpu_peers.py --json peers.json [--dtype bfloat16]

Prints a table; a backend that refuses a shape is reported, not fatal. Exit
status 2 without PyTorch or a GPU."""
import argparse
import json
import statistics
import sys

DECODE = [(1, 256), (1, 512), (32, 256), (32, 4096), (128, 1024)]
PREFILL = [(1, 2048), (8, 2048)]
HEADS = [(32, 8, 64), (32, 8, 128)]


def time_ms(fn, torch, calls=20, rounds=5):
    for _ in range(3):
        fn()
    samples = []
    for _ in range(rounds):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(stop) / calls)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    args = parser.parse_args()
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        print(f"gpu_peers: no PyTorch ({e})")
        return 2
    if not torch.cuda.is_available():
        print("gpu_peers: PyTorch sees no CUDA device")
        return 2
    dtype = getattr(torch, args.dtype)
    try:  # enable_gqa came with PyTorch 2.5
        tiny = torch.zeros(1, 4, 1, 64, device="cuda", dtype=dtype)
        F.scaled_dot_product_attention(tiny, tiny[:, :1], tiny[:, :1], enable_gqa=True)
        gqa = True
    except TypeError:
        gqa = False
    report = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "dtype": args.dtype, "cases": []}
    print(f"{report['gpu']}, torch {torch.__version__}, {args.dtype}")
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        for heads, kv_heads, dim in HEADS:
            for kind, shapes in (("decode", DECODE), ("prefill", PREFILL)):
                for batch, length in shapes:
                    q_len = 1 if kind == "decode" else length
                    q = torch.randn(batch, heads, q_len, dim, device="cuda", dtype=dtype)
                    k = torch.randn(batch, kv_heads, length, dim, device="cuda", dtype=dtype)
                    v = torch.randn_like(k)
                    row = {"backend": backend.name, "kind": kind, "batch": batch, "length": length,
                           "heads": heads, "kv_heads": kv_heads, "head_dim": dim}
                    name = f"{backend.name:16s} {kind} B{batch} {'L' if kind == 'decode' else 'S'}{length} d{dim}"
                    try:
                        kwargs = {"is_causal": kind == "prefill"}
                        if gqa:
                            kwargs["enable_gqa"] = True
                        else:  # every query head gets its own copy: 4x the bytes
                            k = k.repeat_interleave(heads // kv_heads, dim=1)
                            v = v.repeat_interleave(heads // kv_heads, dim=1)
                            row["expanded_kv"] = True
                        with sdpa_kernel(backend), torch.inference_mode():
                            ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, **kwargs),
                                         torch)
                    except Exception as e:  # a backend that does not serve the shape
                        row["error"] = str(e).splitlines()[0][:200]
                        print(f"{name}: not served ({row['error'][:80]})")
                        report["cases"].append(row)
                        continue
                    if kind == "decode":
                        kv_bytes = 2 * batch * length * kv_heads * dim * q.element_size()
                        row.update(us=ms * 1e3, gb_s=kv_bytes / (ms * 1e-3) / 1e9)
                        print(f"{name}: {ms * 1e3:9.1f} us ({row['gb_s']:5.0f} GB/s of GQA K+V)")
                    else:
                        flops = 4 * batch * heads * length * length * dim / 2
                        row.update(ms=ms, tflops=flops / (ms * 1e-3) / 1e12)
                        print(f"{name}: {ms:9.3f} ms ({row['tflops']:5.0f} TFLOP/s)")
                    report["cases"].append(row)
                    del q, k, v
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
