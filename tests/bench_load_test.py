#!/usr/bin/env python3
"""kvserve-bench against a real CPU server on the default model, bounded to a
few seconds: zero errors, the requests it counts match the server's
kvserve_requests_total, its numbers are self-consistent, its TTFT agrees with
the server's own TTFT histogram, and the JSON and the plot are written.

Run by ctest with KVSERVE_BIN and KVSERVE_BENCH_BIN set."""
import json
import os
import re
import subprocess
import tempfile
import unittest
import urllib.request


def scrape(url):
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            values[series] = float(value)
    return values


def total(values, name):
    return sum(v for k, v in values.items() if k == name or k.startswith(name + "{"))


def start_server(test, *flags):
    """A CPU server on the default model; returns (process, grpc port, metrics port)."""
    server = subprocess.Popen(
        [os.environ["KVSERVE_BIN"], "--port=0", "--http_port=-1", "--metrics_port=0", "--host=127.0.0.1", *flags],
        stderr=subprocess.PIPE, text=True)
    for line in server.stderr:
        match = re.search(r"serving .* on [0-9.]+:(\d+).*metrics on http://[0-9.]+:(\d+)/", line)
        if match:
            return server, match.group(1), match.group(2)
    server.kill()
    test.fail("the server did not start")


class BenchLoadTest(unittest.TestCase):
    def run_cold_warm(self, *server_flags):
        """kvserve-bench --cold_warm over 6 requests sharing a 300-token prefix
        (a JSONL file); returns its stdout."""
        lines = [json.dumps({"token_ids": [3 + (i * 7) % 300 for i in range(300)] + [10 + r, 11],
                             "max_new_tokens": 2}) for r in range(6)]
        server, grpc_port, metrics_port = start_server(self, *server_flags)
        try:
            metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
            with tempfile.TemporaryDirectory() as tmp:
                workload = os.path.join(tmp, "shared.jsonl")
                with open(workload, "w") as f:
                    f.write("\n".join(lines) + "\n")
                bench = subprocess.run(
                    [os.environ["KVSERVE_BENCH_BIN"], f"--target=127.0.0.1:{grpc_port}", "--cold_warm",
                     f"--prompts_file={workload}", f"--metrics_url={metrics_url}"],
                    capture_output=True, text=True, timeout=120)
            self.assertEqual(bench.returncode, 0, bench.stderr + bench.stdout)
            self.assertEqual(scrape(metrics_url)["kvserve_kv_blocks_used"], 0)
            return bench.stdout
        finally:
            server.terminate()
            self.assertEqual(server.wait(timeout=30), 0)

    def test_cold_warm_reports_the_prefix_cache_speedup(self):
        out = self.run_cold_warm()
        cold = float(re.search(r"TTFT cold \(request 0\)\s+([0-9.]+) ms", out).group(1))
        warm = re.search(r"TTFT warm p50 \(\s*(\d+) reqs\)\s+([0-9.]+) ms", out)
        ratio = float(re.search(r"cold / warm p50\s+([0-9.]+) x", out).group(1))
        self.assertEqual(int(warm.group(1)), 5)
        self.assertAlmostEqual(ratio, cold / float(warm.group(2)), delta=0.01 * ratio + 0.01)
        # Each warm request found the 18 full blocks of the shared 300 tokens.
        self.assertIn("server prefix cache: 1440 of 1812 prompt tokens hit", out)

    def test_enable_prefix_caching_false_turns_it_off(self):
        self.assertIn("server prefix cache: 0 of 0 prompt tokens hit",
                      self.run_cold_warm("--enable_prefix_caching=false"))

    def test_bounded_sweep_is_consistent_with_the_server(self):
        server, grpc_port, metrics_port = start_server(self)
        try:
            metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
            before = scrape(metrics_url)
            with tempfile.TemporaryDirectory() as tmp:
                report, plot = os.path.join(tmp, "report.json"), os.path.join(tmp, "sweep.png")
                bench = subprocess.run(
                    [os.environ["KVSERVE_BENCH_BIN"], f"--target=127.0.0.1:{grpc_port}",
                     "--concurrency=1,4", "--duration_s=4", "--warmup_requests=2",
                     "--prompt_tokens=32", "--output_tokens=24", "--output_dist=uniform",
                     f"--metrics_url={metrics_url}", f"--json_out={report}", f"--plot_out={plot}"],
                    capture_output=True, text=True, timeout=120)
                self.assertEqual(bench.returncode, 0, bench.stderr + bench.stdout)
                self.assertIn("concurrency 4", bench.stdout)
                with open(report) as f:
                    result = json.load(f)
                with open(plot, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            after = scrape(metrics_url)
        finally:
            server.terminate()
            self.assertEqual(server.wait(timeout=30), 0)

        measured = 0
        for level in result["levels"]:
            with self.subTest(level=level["label"]):
                self.assertEqual(level["failed"], 0)
                self.assertGreater(level["completed"], 0)
                measured += level["completed"]
                # Self-consistency: rates × duration give back the counts.
                self.assertAlmostEqual(level["output_tokens_per_s"] * level["duration_s"],
                                       level["output_tokens"], delta=1e-6 * level["output_tokens"] + 1e-9)
                self.assertAlmostEqual(level["request_throughput"] * level["duration_s"],
                                       level["completed"], delta=1e-6 * level["completed"] + 1e-9)
                self.assertAlmostEqual(level["total_tokens_per_s"] * level["duration_s"],
                                       level["prompt_tokens"] + level["output_tokens"], delta=1e-3)
                self.assertEqual(level["ttft_ms"]["count"], level["completed"])
                self.assertLessEqual(level["ttft_ms"]["p50"], level["e2e_ms"]["p50"])
                self.assertEqual(level["prompt_tokens"], 32 * level["completed"])
                # The server counted exactly the measured requests of the level,
                # and its TTFT (arrival → first token) is below the client's
                # (send → first chunk received) by at most the transport time.
                server_side = level["server"]
                self.assertEqual(server_side["requests"], level["completed"])
                self.assertEqual(server_side["ttft_count"], level["completed"])
                margin = 5.0 + 0.10 * level["ttft_ms"]["mean"]
                self.assertLessEqual(server_side["ttft_mean_ms"], level["ttft_ms"]["mean"] + 0.5)
                self.assertGreaterEqual(server_side["ttft_mean_ms"], level["ttft_ms"]["mean"] - margin)
                self.assertEqual(server_side["kv_blocks_total"], after["kvserve_kv_blocks_total"])
        # Over the whole run (warm-ups included: 2 per level), the server's
        # request counter moved by exactly what the bench sent.
        counted = total(after, "kvserve_requests_total") - total(before, "kvserve_requests_total")
        self.assertEqual(counted, measured + 2 * len(result["levels"]))
        self.assertEqual(after["kvserve_kv_blocks_used"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
