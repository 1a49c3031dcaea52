#!/usr/bin/env python3
"""Soak test (issue 13 item 11): N minutes of mixed traffic against one kvserve
process, over gRPC and HTTP, from several concurrent workers: completions,
chats, streams, cancellations, deadline expiries, malformed requests, client
disconnects, and HTTP/2 rapid-reset bursts. First a warm-up brings the server
to its largest steps (long prompts, the KV pool overflowing: preemption and
recomputation) and one burst; the timed load then runs, with a second burst
halfway through. Then:

- every request ended exactly once on the client, and the server's
  kvserve_requests_total agrees with the clients, outcome by outcome
  (ledger.py says which differences are races, not errors);
- KV blocks in use go back to 0 once the load stops;
- RSS at the end is within --rss-tolerance of its value after warm-up (the
  warm-up leaves the allocator and gRPC's caches at their high-water mark
  before the baseline; growth after it is what this looks for);
- the server log has no error line that a client did not cause, and the
  server exits 0 on SIGTERM.

Prints a summary table (and --json FILE); exits 1 if a check fails.

  soak.py --kvserve BIN --stubs DIR --chat-template FILE [--minutes 10] [--workers 6]

Debian's python3 (python3-grpcio, python3-h2)."""
import argparse
import json
import os
import random
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))

from ledger import Ledger  # noqa: E402
from log_check import unexplained_lines  # noqa: E402
from server_process import ServerProcess, wait_until  # noqa: E402


# A small KV pool (128 blocks of 16 tokens, 12 MiB for the built-in model):
# - every block has been written, and its pages are resident, before the
#   warm-up RSS is taken: the pool is allocated at start but its pages count
#   only once touched, and prefix caching hands out never-used blocks before
#   reusing cached ones. With the default 512 MiB pool the RSS grew by 250 MB
#   in 2 minutes of this traffic, linearly, and stayed flat with 64 MiB; at
#   12 MiB, even a pool untouched at warm-up is under the 10% allowed;
# - a few long streams at once fill it, so sequences get preempted and
#   resumed, and their blocks must still all come back.
SERVER_FLAGS = ["--num_kv_blocks=128"]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kvserve", required=True, help="the kvserve binary")
    parser.add_argument("--stubs", required=True, help="directory of the Python gRPC stubs")
    parser.add_argument("--chat-template", required=True)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--warmup-fraction", type=float, default=0.25,
                        help="share of the run after which the baseline RSS is taken...")
    parser.add_argument("--warmup-requests", type=int, default=200,
                        help="...once this many requests have ended or the KV pool has been "
                             "full")
    parser.add_argument("--rss-tolerance", type=float, default=0.10)
    parser.add_argument("--burst-streams", type=int, default=3000,
                        help="streams per rapid-reset burst")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--report-every-s", type=float, default=30)
    parser.add_argument("--log", default="soak-server.log", help="the server's log file")
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("server_flags", nargs="*", help="extra kvserve flags (after --)")
    return parser.parse_args()


class Load:
    """The workers: each picks a scenario by weight until told to stop."""

    def __init__(self, scenarios, workers, seed, ledger):
        self.names = list(scenarios)
        self.weights = [scenarios[n][0] for n in self.names]
        self.functions = [scenarios[n][1] for n in self.names]
        self.ledger = ledger
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(random.Random(seed + i),))
                        for i in range(workers)]

    def start(self):
        for thread in self.threads:
            thread.start()

    def run(self, rng):
        while not self.stop.is_set():
            i = rng.choices(range(len(self.names)), weights=self.weights)[0]
            try:
                self.functions[i](rng)
            except Exception as e:  # the request never got a terminal status
                self.ledger.fail(f"{self.names[i]}: {type(e).__name__}: {e}")

    def join(self):
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=600)
            if thread.is_alive():
                self.ledger.fail("a worker did not stop within 600 s")


def rapid_reset_burst(target, streams):
    """One connection, `streams` HEADERS+DATA+RST_STREAM; returns streams sent."""
    try:
        import rapid_reset
    except ImportError:
        print("no python3-h2: no rapid-reset burst", flush=True)
        return 0
    attack = rapid_reset.Attack(target)
    attack.open_streams(streams, reset=True)
    attack.read_available(timeout=1.0)
    attack.close()
    return attack.sent


def print_summary(figures, failures):
    print("\n=== soak summary ===")
    print(f"duration          {figures['minutes']:.1f} min, {figures['workers']} workers")
    print(f"requests          {figures['requests']} ({figures['requests_per_s']:.1f}/s)"
          f" + {figures['burst_streams']} rapid-reset streams")
    print(f"RSS               {figures['rss_mb']['after_warmup']:.0f} MB after warm-up, "
          f"{figures['rss_mb']['end']:.0f} MB at the end "
          f"({figures['rss_mb']['change']:+.1%}; peak sampled {figures['rss_mb']['peak']:.0f} MB)")
    print(f"KV blocks used    {figures['kv_blocks_used_end']:.0f} at the end (peak "
          f"{figures['kv_blocks_used_peak']:.0f} of {figures['kv_blocks_total']:.0f}; "
          f"{figures['preemptions']:.0f} preemptions)")
    print(f"server log        {figures['log']['lines']} lines, "
          f"{figures['log']['warnings']} warnings, {len(figures['log']['unexplained'])} unexplained")
    print("\nclient status by scenario:")
    for (scenario, status), count in sorted(figures["statuses"].items()):
        print(f"  {scenario:24} {status:20} {count:7}")
    for api, server in figures["server_outcomes"].items():
        print(f"\nserver kvserve_requests_total{{api={api}}} (this run):")
        for outcome, count in sorted(server["server"].items()):
            print(f"  {outcome:24} {count:7}")
        print(f"  finished before their cancel arrived: {server['finished_before_cancel']}, "
              f"burst streams counted: {server['burst_streams_counted']}")
    print("\nresult: " + ("PASS" if not failures else f"FAIL ({len(failures)})"))
    for failure in failures[:50]:
        print(f"  - {failure}")


def main():
    args = parse_args()
    sys.path.insert(0, args.stubs)
    from grpc_traffic import GrpcTraffic
    from http_traffic import HttpTraffic

    server = ServerProcess(args.kvserve, args.log,
                           [f"--chat_template={args.chat_template}", *SERVER_FLAGS,
                            *args.server_flags])
    ledger = Ledger()
    failures = []
    rss_warm = rss_end = rss_peak = kv_end = kv_peak = kv_total = preemptions = None
    burst_sent = 0
    server_figures = {}
    elapsed = 0.0
    try:
        grpc_target = f"127.0.0.1:{server.grpc_port}"
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
        conn.request("GET", "/v1/models")
        model = json.loads(conn.getresponse().read())["data"][0]["id"]
        conn.close()

        grpc_traffic = GrpcTraffic(grpc_target, ledger)
        http_traffic = HttpTraffic(server.http_port, model, ledger)
        before = server.outcomes()
        grpc_traffic.warm_up(random.Random(args.seed))
        print(f"warm-up streams done: {server.gauge('kvserve_preemptions_total'):.0f} "
              f"preemptions, RSS {server.rss_mb():.0f} MB", flush=True)
        burst_sent = rapid_reset_burst(grpc_target, args.burst_streams)
        print(f"warm-up rapid-reset burst: {burst_sent} streams", flush=True)
        load = Load({**grpc_traffic.scenarios(), **http_traffic.scenarios()}, args.workers,
                    args.seed, ledger)
        duration_s = args.minutes * 60
        start = time.monotonic()
        load.start()
        rss_peak = 0.0
        next_report = args.report_every_s
        mid_burst_done = False
        while time.monotonic() - start < duration_s:
            time.sleep(1.0)
            elapsed = time.monotonic() - start
            rss_peak = max(rss_peak, server.rss_mb())
            if (rss_warm is None and elapsed >= duration_s * args.warmup_fraction
                    and (ledger.ended >= args.warmup_requests
                         or server.gauge("kvserve_kv_blocks_used_peak")
                         == server.gauge("kvserve_kv_blocks_total"))):
                rss_warm = server.rss_mb()
                print(f"[{elapsed:5.0f} s] warm: RSS {rss_warm:.0f} MB, "
                      f"{ledger.ended} requests", flush=True)
            if not mid_burst_done and elapsed >= duration_s / 2:
                mid_burst_done = True
                sent = rapid_reset_burst(grpc_target, args.burst_streams)
                burst_sent += sent
                print(f"[{elapsed:5.0f} s] rapid-reset burst: {sent} streams, RSS "
                      f"{server.rss_mb():.0f} MB", flush=True)
            if elapsed >= next_report:
                next_report += args.report_every_s
                print(f"[{elapsed:5.0f} s] {ledger.ended} requests, RSS "
                      f"{server.rss_mb():.0f} MB, {server.threads()} threads, "
                      f"{server.gauge('kvserve_preemptions_total'):.0f} preemptions",
                      flush=True)
        load.join()
        grpc_traffic.close()
        elapsed = time.monotonic() - start

        # Every block back in the pool once the load is gone.
        if not wait_until(lambda: server.gauge("kvserve_kv_blocks_used") == 0, 120):
            failures.append(f"KV blocks used {server.gauge('kvserve_kv_blocks_used'):.0f} "
                            "120 s after the load stopped, not 0")
        kv_end = server.gauge("kvserve_kv_blocks_used")
        kv_peak = server.gauge("kvserve_kv_blocks_used_peak")
        kv_total = server.gauge("kvserve_kv_blocks_total")
        preemptions = server.gauge("kvserve_preemptions_total")
        if rss_warm is None:
            raise RuntimeError(f"only {ledger.ended} requests ended: no warm-up RSS taken")
        # The heap is handed back every --malloc_trim_interval_s: allow a few.
        limit = rss_warm * (1 + args.rss_tolerance)
        wait_until(lambda: server.rss_mb() <= limit, 60, interval_s=1.0)
        rss_end = server.rss_mb()
        if rss_end > limit:
            failures.append(f"RSS {rss_end:.0f} MB at the end, more than "
                            f"{args.rss_tolerance:.0%} over {rss_warm:.0f} MB after warm-up")
        after = server.outcomes()
        compare_failures, server_figures = ledger.compare_with_server(before, after,
                                                                      burst_sent)
        failures += compare_failures
        if ledger.ended == 0:
            failures.append("no request completed")
    finally:
        code = server.stop()
    if code != 0:
        failures.append(f"kvserve exited with {code} on SIGTERM")
    lines = server.log_lines()
    unexplained = unexplained_lines(lines)
    failures += [f"server log: {line}" for line in unexplained[:20]]
    failures = ledger.failures + failures

    figures = {
        "minutes": elapsed / 60, "workers": args.workers, "requests": ledger.ended,
        "requests_per_s": ledger.ended / elapsed, "burst_streams": burst_sent,
        "rss_mb": {"after_warmup": rss_warm, "end": rss_end, "peak": rss_peak,
                   "change": rss_end / rss_warm - 1},
        "kv_blocks_used_end": kv_end, "kv_blocks_used_peak": kv_peak,
        "kv_blocks_total": kv_total, "preemptions": preemptions,
        "statuses": dict(ledger.statuses), "server_outcomes": server_figures,
        "log": {"lines": len(lines), "unexplained": unexplained,
                "warnings": sum(1 for line in lines if re.match(r"W\d{4} |W ", line))},
    }
    print_summary(figures, failures)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**figures, "statuses": {f"{s} {c}": n for (s, c), n in
                                               ledger.statuses.items()},
                       "failures": failures}, f, indent=2)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
