#!/usr/bin/env python3
"""Holds N concurrent server-sent-event streams open against one kvserve
process (the built-in model on the CPU) and prints the server's thread count
and resident memory (/proc/PID/status) before, during and after.

    tools/http_streams_bench.py --kvserve build/server/kvserve --streams 2000

The streams are POST /v1/completions with stream: true, each on its own
connection; all are opened before the engine runs them (--max_num_seqs is
the stream count), so they are open at once. Standard library only (asyncio).
Exits non-zero unless all N streams were open at once and ended with
data: [DONE] and the server's thread count stayed put (CTest runs it with 200)."""
import argparse
import asyncio
import json
import re
import resource
import subprocess
import sys
import threading
import time


def proc_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) // 1024


def start_server(binary, streams, extra):
    flags = [f"--max_num_seqs={streams}", f"--max_queued_requests={streams}",
             "--max_num_batched_tokens=4096", "--kv_cache_memory_mb=1024"]
    process = subprocess.Popen(
        [binary, "--port=0", "--metrics_port=-1", "--http_port=0", "--host=127.0.0.1",
         "--http_host=127.0.0.1", *flags, *extra], stderr=subprocess.PIPE, text=True)
    port = None
    for line in process.stderr:
        match = re.search(r"HTTP API on http://[0-9.]+:(\d+)", line)
        if match:
            port = int(match.group(1))
        if re.search(r"serving .* on [0-9.]+:\d+", line):
            break
    if port is None:
        raise RuntimeError("kvserve did not start")
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
    return process, port


class Counters:
    def __init__(self):
        self.open = 0       # response headers received, [DONE] not yet
        self.peak_open = 0
        self.done = 0
        self.failed = 0
        self.events = 0


async def one_stream(port, body, counters, all_sent):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
               f"Connection: close\r\n\r\n").encode() + body
    writer.write(request)
    await writer.drain()
    all_sent.release()
    try:
        status = await reader.readline()
        if b" 200 " not in status:
            counters.failed += 1
            return
        counters.open += 1
        counters.peak_open = max(counters.peak_open, counters.open)
        finished = False
        while True:
            line = await reader.readline()
            if not line:
                break
            if line.startswith(b"data: "):
                counters.events += 1
                if line.startswith(b"data: [DONE]"):
                    finished = True
                    break
        counters.open -= 1
        if finished:
            counters.done += 1
        else:
            counters.failed += 1
    finally:
        writer.close()


async def run(port, pid, streams, max_tokens):
    counters = Counters()
    body = json.dumps({"prompt": "Hello", "max_tokens": max_tokens, "ignore_eos": True,
                       "stream": True}).encode()
    samples = []
    all_sent = asyncio.Semaphore(0)

    async def sample():
        while True:
            threads, rss = proc_status(pid)
            samples.append((counters.open, threads, rss))
            await asyncio.sleep(0.2)

    sampler = asyncio.create_task(sample())
    start = time.monotonic()
    tasks = [asyncio.create_task(one_stream(port, body, counters, all_sent))
             for _ in range(streams)]
    await asyncio.gather(*tasks, return_exceptions=False)
    elapsed = time.monotonic() - start
    sampler.cancel()
    return counters, samples, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kvserve", required=True, help="the kvserve binary")
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds of N streams on the same server (memory stays flat)")
    parser.add_argument("server_flags", nargs="*", help="more kvserve flags (after --)")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.streams + 100:
        sys.exit(f"the open-file limit {hard} is below {args.streams} streams")

    process, port = start_server(args.kvserve, args.streams, args.server_flags)
    try:
        # Warm-up: one stream, so "before" includes every thread a request starts.
        asyncio.run(run(port, process.pid, 1, 2))
        before = proc_status(process.pid)
        print(f"before: threads {before[0]}, RSS {before[1]} MiB")
        ok = True
        for round_index in range(args.rounds):
            counters, samples, elapsed = asyncio.run(
                run(port, process.pid, args.streams, args.max_tokens))
            after = proc_status(process.pid)
            peak = max(samples, key=lambda s: s[0])
            print(f"round {round_index + 1}: {args.streams} streams (max_tokens "
                  f"{args.max_tokens}), ended with [DONE]: {counters.done}, failed: "
                  f"{counters.failed}, events: {counters.events}, {elapsed:.1f} s; peak "
                  f"concurrently open: {counters.peak_open}")
            print(f"  during (at {peak[0]} open streams): threads {peak[1]}, RSS {peak[2]} MiB;"
                  f" max over the round: threads {max(s[1] for s in samples)}, "
                  f"RSS {max(s[2] for s in samples)} MiB")
            print(f"  after: threads {after[0]}, RSS {after[1]} MiB")
            # Bounded threads: N streams add none (a few spare for any
            # library thread started late).
            bounded = max(s[1] for s in samples) <= before[0] + 4
            ok = (ok and counters.done == args.streams and counters.peak_open == args.streams
                  and bounded)
    finally:
        process.terminate()
        process.wait(timeout=60)
    print("OK" if ok else "FAILED: not every stream was open at once and ended with [DONE], "
          "or the thread count grew")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
