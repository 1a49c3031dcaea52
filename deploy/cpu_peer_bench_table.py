#!/usr/bin/env python3
"""The table of deploy/cpu-peer-bench.sh: medians over its rounds of
kvserve's cpu_decode_bench JSON and llama-batched-bench's JSONL, as Markdown."""
import argparse
import glob
import json
import os
import statistics


def median(values):
    return statistics.median(values) if values else float("nan")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--types", nargs="+", required=True)
    p.add_argument("--batches", required=True)
    p.add_argument("--prompt", type=int, required=True)
    p.add_argument("--new-tokens", type=int, required=True)
    p.add_argument("--prefill", type=int, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--shape", required=True)
    a = p.parse_args()
    batches = [int(b) for b in a.batches.split(",")]
    rounds = len(glob.glob(os.path.join(a.out, f"kvserve-{a.types[0]}-*.json")))
    rows, ceilings = [], []
    for t in a.types:
        kv = {b: [] for b in batches}
        ll = {b: [] for b in batches}
        kv_pp, ll_pp, bytes_per_step = [], [], None
        for path in glob.glob(os.path.join(a.out, f"kvserve-{t}-*.json")):
            with open(path) as f:
                j = json.load(f)
            ceilings.append(j["read_bytes_per_s"])
            bytes_per_step = j["weight_bytes_per_step"]
            for r in j["results"]:
                kv[r["batch"]].append(r["decode_tokens_per_s"])
            kv_pp.append(j["prefill"]["tokens_per_s"])
        for path in glob.glob(os.path.join(a.out, f"llamacpp-{t}-*.jsonl")):
            for line in open(path):
                if line.startswith("{"):
                    r = json.loads(line)
                    ll[r["pl"]].append(r["speed_tg"])
        for path in glob.glob(os.path.join(a.out, f"llamacpp-prefill-{t}-*.jsonl")):
            for line in open(path):
                if line.startswith("{"):
                    ll_pp.append(json.loads(line)["speed_pp"])
        rows.append((t, bytes_per_step, {b: (median(kv[b]), median(ll[b])) for b in batches},
                     (median(kv_pp), median(ll_pp))))
    ceiling = median(ceilings)
    load_before = open(os.path.join(a.out, "load-before")).read().strip()
    load_after = open(os.path.join(a.out, "load-after")).read().strip()
    print(f"### kvserve vs llama.cpp, {a.shape} shape, random weights, {a.threads} threads\n")
    print(f"Decode: {a.prompt}-token prompts, {a.new_tokens} new tokens per sequence; prefill: one "
          f"{a.prefill}-token prompt. Tokens/s, median of {rounds} alternating rounds; ratio = "
          f"kvserve / llama.cpp. Read ceiling (every core summing 1 GiB, measured in kvserve's "
          f"runs): {ceiling / 1e9:.1f} GB/s.\n")
    header = "| weights | MiB read/step | ceiling tok/s (batch 1) |"
    rule = "|---|---:|---:|"
    for b in batches:
        header += f" batch {b}: kvserve / llama.cpp (ratio) |"
        rule += "---:|"
    header += f" prefill {a.prefill}: kvserve / llama.cpp (ratio) |"
    rule += "---:|"
    print(header)
    print(rule)
    for t, bytes_per_step, decode, (kv_pp, ll_pp) in rows:
        line = f"| {t} | {bytes_per_step / 2**20:.0f} | {ceiling / bytes_per_step:.1f} |"
        for b in batches:
            k, l = decode[b]
            line += f" {k:.1f} / {l:.1f} ({k / l:.2f}×) |"
        line += f" {kv_pp:.1f} / {ll_pp:.1f} ({kv_pp / ll_pp:.2f}×) |"
        print(line)
    print(f"\nLoad before: `{load_before}`  \nLoad after: `{load_after}`")


if __name__ == "__main__":
    main()
