#!/usr/bin/env python3
"""Hugging Face transformers generate() decode throughput, for comparison with
tests/bench/cuda_decode_bench.cc in the same run on the same GPU.

Same shape: Llama-3.2-1B (hidden 2048, 16 layers, 32/8 heads of 64,
intermediate 8192, vocab 128256, tied embeddings), random bf16 weights,
random prompts of --prompt tokens, greedy, exactly --new-tokens new tokens.
Decode tokens/s = batch * (new_tokens - 1) / (time(new_tokens) - time(1)):
the difference of two generate() calls removes prefill and set-up.
With --static, also the static KV cache (transformers then compiles the
decode step; the first call is slow, hence the warm-up).

    python3 deploy/hf_decode_bench.py [--batches 1,32] [--static] [--json out.json]
                                      [--prefill 1x2048,8x2048]

--prefill times one forward over BATCHxTOKENS random prompt tokens (SDPA
attention, logits of the last position only: what a prefill computes),
the median of 5 after 2 warm-ups: the peer of cuda_decode_bench --prefill's
TTFT. --batches "" skips the decode runs.
"""
import argparse
import json
import os
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def build_model():
    config = LlamaConfig(
        vocab_size=128256,
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=64,
        max_position_embeddings=2048,
        rms_norm_eps=1e-5,
        rope_theta=500000.0,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    # Explicitly bf16: whether the constructor follows the default dtype or
    # the config's has changed between transformers versions.
    return model.to(torch.bfloat16).eval()


def generate_seconds(model, ids, new_tokens, static):
    kwargs = dict(
        attention_mask=torch.ones_like(ids),
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        pad_token_id=0,
    )
    if static:
        kwargs["cache_implementation"] = "static"
    torch.cuda.synchronize()
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(ids, **kwargs)
    torch.cuda.synchronize()
    assert out.shape[1] == ids.shape[1] + new_tokens, out.shape
    return time.perf_counter() - start


def measure(model, batch, prompt, new_tokens, static, repeats=3):
    ids = torch.randint(0, 128000, (batch, prompt), device="cuda")
    generate_seconds(model, ids, new_tokens, static)  # warm-up (and compilation when static)
    first = min(generate_seconds(model, ids, 1, static) for _ in range(repeats))
    full = min(generate_seconds(model, ids, new_tokens, static) for _ in range(repeats))
    step = (full - first) / (new_tokens - 1)
    return {
        "batch": batch,
        "cache": "static" if static else "dynamic",
        "decode_tokens_per_s": batch / step,
        "ms_per_step": step * 1e3,
        "ttft_ms": first * 1e3,
    }


def measure_prefill(model, batch, tokens, repeats=5, warm=2):
    ids = torch.randint(0, 128000, (batch, tokens), device="cuda")
    times = []
    with torch.inference_mode():
        for i in range(warm + repeats):
            torch.cuda.synchronize()
            start = time.perf_counter()
            model(input_ids=ids, logits_to_keep=1)
            torch.cuda.synchronize()
            if i >= warm:
                times.append(time.perf_counter() - start)
    times.sort()
    ms = times[len(times) // 2] * 1e3
    return {"batch": batch, "tokens": tokens, "forward_ms": ms,
            "prompt_tokens_per_s": batch * tokens / (ms * 1e-3)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--static", action="store_true", help="also measure the static KV cache")
    parser.add_argument("--json", default="")
    parser.add_argument("--prefill", default="", help="BATCHxTOKENS list, e.g. 1x2048,8x2048")
    args = parser.parse_args()
    import transformers

    model = build_model()
    report = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "prompt_tokens": args.prompt,
        "new_tokens": args.new_tokens,
        "dtype": str(next(model.parameters()).dtype),
        "results": [],
        "prefills": [],
    }

    def save():  # after every result: a run cut off by a time limit keeps what it measured
        if args.json:
            with open(args.json + ".tmp", "w") as f:
                json.dump(report, f, indent=2)
            os.replace(args.json + ".tmp", args.json)

    model.config._attn_implementation = "sdpa"
    for item in filter(None, args.prefill.split(",")):
        batch, tokens = (int(x) for x in item.split("x"))
        r = measure_prefill(model, batch, tokens)
        report["prefills"].append(r)
        print(f"transformers prefill {batch} x {tokens}: forward {r['forward_ms']:.2f} ms "
              f"({r['prompt_tokens_per_s']:,.0f} prompt tokens/s)", flush=True)
        save()
    for static in [False, True] if args.static else [False]:
        for batch in [int(b) for b in args.batches.split(",") if b]:
            r = measure(model, batch, args.prompt, args.new_tokens, static)
            report["results"].append(r)
            print(
                f"transformers {r['cache']:7s} batch {batch:3d}: decode {r['decode_tokens_per_s']:8.1f} "
                f"tokens/s, {r['ms_per_step']:.2f} ms/step, TTFT {r['ttft_ms']:.1f} ms",
                flush=True,
            )
            save()


if __name__ == "__main__":
    main()
