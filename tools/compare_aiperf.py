#!/usr/bin/env python3
"""Helpers of tools/compare-aiperf.sh (standard library only).

  compare_aiperf.py prompts INPUTS_JSON OSL > prompts.jsonl
      AIPerf's inputs.json (the request bodies it sent) → kvserve-bench's
      --prompts_file lines {"text": ..., "max_new_tokens": OSL}, so that both
      tools send the very same prompts.
  compare_aiperf.py snapshot METRICS_URL SERVER_PID OUT_JSON
      The server's own TTFT and ITL histogram sums and counts (arrival → first
      token, token → token, so without transport or client) and its CPU time;
      taken before and after each tool's run.
  compare_aiperf.py table OUT_DIR C [C ...]
      The side-by-side table from OUT_DIR/aiperf-cC/profile_export_aiperf.json
      and OUT_DIR/bench-cC.json, one pair of rows per concurrency C.

The two tools define ITL differently (docs/bench.md): AIPerf's
`inter_token_latency` is per request, (E2E − TTFT) / (tokens − 1), which is
kvserve-bench's TPOT; kvserve-bench's `itl_ms` is per gap between streamed
messages, which is AIPerf's `inter_chunk_latency` when every chunk carries one
token. The table shows both pairs under the same definition."""
import json
import os
import sys
import urllib.request


def prompts(inputs_json, osl):
    with open(inputs_json) as f:
        data = json.load(f)
    count = 0
    for session in data["data"]:
        for payload in session["payloads"]:
            prompt = payload["prompt"]
            if isinstance(prompt, list):
                prompt = "".join(prompt)
            print(json.dumps({"text": prompt, "max_new_tokens": int(osl)}, ensure_ascii=False))
            count += 1
    if count == 0:
        sys.exit(f"no prompts in {inputs_json}")


def snapshot(metrics_url, pid, out_json):
    text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            values[series] = float(value)
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    snap = {"cpu_s": (int(fields[11]) + int(fields[12])) / ticks}
    for key, name in (("ttft", "kvserve_time_to_first_token_seconds"),
                      ("itl", "kvserve_inter_token_latency_seconds")):
        snap[key + "_sum"] = values.get(name + "_sum", 0.0)
        snap[key + "_count"] = values.get(name + "_count", 0.0)
    with open(out_json, "w") as f:
        json.dump(snap, f)


def server_side(out_dir, run):
    """The server's mean TTFT and ITL (ms) and CPU seconds over one tool's run
    (warmup included), from the snapshots around it."""
    try:
        with open(os.path.join(out_dir, f"{run}.before.json")) as f:
            before = json.load(f)
        with open(os.path.join(out_dir, f"{run}.after.json")) as f:
            after = json.load(f)
    except OSError:
        return None

    def mean_ms(key):
        count = after[key + "_count"] - before[key + "_count"]
        return 1000 * (after[key + "_sum"] - before[key + "_sum"]) / count if count else None

    client_cpu = None
    try:
        with open(os.path.join(out_dir, f"{run}.time")) as f:
            wall, user, system = (float(x) for x in f.read().split()[-3:])
            client_cpu = (user + system, wall)
    except (OSError, ValueError):
        pass
    return {"ttft": mean_ms("ttft"), "itl": mean_ms("itl"),
            "server_cpu": after["cpu_s"] - before["cpu_s"], "client_cpu": client_cpu}


def aiperf_row(path):
    with open(path) as f:
        metrics = json.load(f)
    if "records" in metrics:  # some versions nest the metrics
        metrics = metrics["records"]

    def stat(tag, name):
        entry = metrics.get(tag)
        return None if entry is None or entry.get(name) is None else float(entry[name])

    return {
        "ttft_p50": stat("time_to_first_token", "p50"),
        "ttft_p99": stat("time_to_first_token", "p99"),
        "tpot_p50": stat("inter_token_latency", "p50"),
        "tpot_p99": stat("inter_token_latency", "p99"),
        "gap_p50": stat("inter_chunk_latency", "p50"),
        "gap_p99": stat("inter_chunk_latency", "p99"),
        "out_tok_s": stat("output_token_throughput", "avg"),
        "req_s": stat("request_throughput", "avg"),
        "requests": stat("request_count", "avg"),
        "errors": stat("error_request_count", "avg") or 0,
    }


def bench_row(path):
    with open(path) as f:
        report = json.load(f)
    summary = report["levels"][0]

    def dist(name, pct):
        entry = summary.get(name)
        return None if entry is None else float(entry[pct])

    return {
        "ttft_p50": dist("ttft_ms", "p50"),
        "ttft_p99": dist("ttft_ms", "p99"),
        "tpot_p50": dist("tpot_ms", "p50"),
        "tpot_p99": dist("tpot_ms", "p99"),
        "gap_p50": dist("itl_ms", "p50"),
        "gap_p99": dist("itl_ms", "p99"),
        "out_tok_s": float(summary["output_tokens_per_s"]),
        "req_s": float(summary["request_throughput"]),
        "requests": float(summary["completed"]),
        "errors": float(summary.get("failed", 0)),
    }


COLUMNS = [("ttft_p50", "TTFT p50"), ("ttft_p99", "TTFT p99"),
           ("tpot_p50", "ITL p50"), ("tpot_p99", "ITL p99"),
           ("gap_p50", "gap p50"), ("gap_p99", "gap p99"),
           ("out_tok_s", "out tok/s"), ("req_s", "req/s")]


def cell(value, digits=1):
    return "—" if value is None else f"{value:.{digits}f}"


def table(out_dir, levels):
    print("ITL = (E2E − TTFT)/(tokens − 1) per request (AIPerf inter_token_latency, "
          "kvserve-bench TPOT); gap = time between streamed chunks (AIPerf "
          "inter_chunk_latency, kvserve-bench ITL). Latencies in ms.\n")
    print("| conc | tool | " + " | ".join(title for _, title in COLUMNS) + " | requests (errors) |")
    print("|---|---|" + "---|" * len(COLUMNS) + "---|")
    for c in levels:
        # The top-level export is the profiling phase (phases/ also holds the warmup's).
        aiperf = os.path.join(out_dir, f"aiperf-c{c}", "profile_export_aiperf.json")
        rows = [("AIPerf (HTTP/SSE)", aiperf_row(aiperf))] if os.path.exists(aiperf) else []
        rows.append(("kvserve-bench (gRPC)", bench_row(os.path.join(out_dir, f"bench-c{c}.json"))))
        for tool, row in rows:
            cells = [cell(row[key], 2 if key == "req_s" else 1) for key, _ in COLUMNS]
            print(f"| {c} | {tool} | " + " | ".join(cells)
                  + f" | {row['requests']:.0f} ({row['errors']:.0f}) |")
        if len(rows) == 2:
            ratios = []
            for key, title in COLUMNS[:6]:
                a, b = rows[0][1][key], rows[1][1][key]
                if a is not None and b:
                    ratios.append(f"{title} {100 * (a - b) / b:+.0f}%")
            print(f"| {c} | AIPerf vs bench | " + ", ".join(ratios) + " | | | | | | | |")


def where_time_went(out_dir, levels):
    print("\nServer side over each run (warmup included): mean TTFT and ITL from the "
          "server's own histograms (no transport, no client), CPU seconds of the server "
          "and of the load tester (with its child processes) over the run's wall time.\n")
    print("| conc | tool | server TTFT mean ms | server ITL mean ms | server CPU s "
          "| client CPU s / wall s |")
    print("|---|---|---|---|---|---|")
    for c in levels:
        for run, tool in ((f"aiperf-c{c}", "AIPerf"), (f"bench-c{c}", "kvserve-bench")):
            side = server_side(out_dir, run)
            if side is None:
                continue
            client = "—" if side["client_cpu"] is None else \
                f"{side['client_cpu'][0]:.1f} / {side['client_cpu'][1]:.1f}"
            print(f"| {c} | {tool} | {cell(side['ttft'])} | {cell(side['itl'])} "
                  f"| {side['server_cpu']:.1f} | {client} |")


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "snapshot":
        snapshot(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) >= 4 and sys.argv[1] == "prompts":
        prompts(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "table":
        table(sys.argv[2], sys.argv[3:])
        where_time_went(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
