#!/usr/bin/env python3
"""What a new user meets first (issue 27 items 1, 2, 6), on the real binaries:

- a second kvserve on a busy port (gRPC, HTTP or metrics) exits 1 at once,
  before loading its model, naming the flag; the first keeps its port alone;
- `kvserve MODEL` serves MODEL; MODEL together with --model, or a second
  argument, is refused (exit 2);
- --help of kvserve, kvserve-cli and kvserve-bench lists the program's own
  flags under group titles and none of Abseil's; --version prints the version
  and build; dashed flag names work on the server; an unknown flag names the
  nearest one.

Env: KVSERVE_BIN, KVSERVE_CLI, KVSERVE_BENCH_BIN, KVSERVE_TEST_DATA_DIR."""
import os
import re
import socket
import subprocess
import threading
import time
import unittest

TIMEOUT_S = 60  # generous: CI runs on a loaded 2-core machine
MODEL = os.path.join(os.environ["KVSERVE_TEST_DATA_DIR"], "tiny-llama3")
LOOPBACK = ["--host=127.0.0.1", "--http_host=127.0.0.1", "--metrics_host=127.0.0.1"]


def run(binary, *args):
    return subprocess.run([os.environ[binary], *args], capture_output=True, text=True,
                          timeout=TIMEOUT_S)


def kvserve(*args):
    return run("KVSERVE_BIN", *args)


class Server:
    """A kvserve process that runs until stop(); its log is collected."""

    def __init__(self, *args):
        self.process = subprocess.Popen([os.environ["KVSERVE_BIN"], *LOOPBACK, *args],
                                        stderr=subprocess.PIPE, text=True)
        self.log = []
        self.ports = {}
        for line in self.process.stderr:
            self.log.append(line)
            if m := re.search(r"HTTP API on http://[0-9.]+:(\d+)", line):
                self.ports["http_port"] = int(m.group(1))
            if m := re.search(r"serving (\S+) on [0-9.]+:(\d+)", line):
                self.model = m.group(1)
                self.ports["port"] = int(m.group(2))
                if m := re.search(r"metrics on http://[0-9.]+:(\d+)/metrics", line):
                    self.ports["metrics_port"] = int(m.group(1))
                break
        else:
            raise AssertionError("kvserve exited before serving:\n" + "".join(self.log))
        self.reader = threading.Thread(target=lambda: self.log.extend(self.process.stderr))
        self.reader.start()

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=TIMEOUT_S)
        finally:
            self.process.kill()
            self.reader.join()
            self.process.stderr.close()


class BusyPortTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.first = Server("--port=0", "--http_port=0", "--metrics_port=0")

    @classmethod
    def tearDownClass(cls):
        cls.first.stop()

    def test_each_busy_port_is_refused_before_the_model_loads(self):
        for flag in ("port", "http_port", "metrics_port"):
            with self.subTest(flag=flag):
                ports = {"port": 0, "http_port": 0, "metrics_port": 0}
                ports[flag] = self.first.ports[flag]
                start = time.monotonic()
                result = kvserve(*LOOPBACK, MODEL, *(f"--{k}={v}" for k, v in ports.items()))
                elapsed = time.monotonic() - start
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertIn(f"--{flag}: cannot listen on 127.0.0.1:{ports[flag]}: the port is "
                              "already in use", result.stderr)
                self.assertNotIn("loaded in", result.stderr)  # the model never loaded
                self.assertLess(elapsed, 10)

    def test_two_flags_on_one_port_are_refused(self):
        with socket.socket() as probe:  # a port free a moment ago
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        result = kvserve(*LOOPBACK, f"--port={port}", f"--http_port={port}", "--metrics_port=-1")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn(f"--http_port: cannot listen on 127.0.0.1:{port}", result.stderr)
        self.assertIn("(--port names it too)", result.stderr)


class ModelArgumentTest(unittest.TestCase):
    def test_positional_model_is_served(self):
        server = Server(MODEL, "--port=0", "--http_port=-1", "--metrics_port=-1")
        server.stop()
        self.assertEqual(server.model, "tiny-llama3")
        self.assertNotIn("built-in default model", "".join(server.log))

    def test_positional_model_and_model_flag_are_refused(self):
        result = kvserve(MODEL, f"--model={MODEL}", "--port=0")
        self.assertEqual(result.returncode, 2)
        self.assertIn(f'the model is given twice: "{MODEL}" and --model={MODEL}; give one',
                      result.stderr)

    def test_stray_argument_is_refused(self):
        result = kvserve(MODEL, "extra", "--port=0")
        self.assertEqual(result.returncode, 2)
        self.assertIn('unexpected argument "extra": kvserve takes one model path', result.stderr)
        result = kvserve("serve", MODEL)
        self.assertEqual(result.returncode, 2)
        self.assertIn("kvserve MODEL, not kvserve serve MODEL", result.stderr)
        result = run("KVSERVE_BENCH_BIN", "stray")
        self.assertEqual(result.returncode, 2)
        self.assertIn('kvserve-bench: unexpected argument "stray"', result.stderr)


class FlagsTest(unittest.TestCase):
    HELP = {
        "KVSERVE_BIN": ["Model:", "--model=TEXT", "Engine and KV cache:", "--max_num_seqs=INT",
                        "HTTP API (OpenAI-compatible):", "--http_port=INT", "Logging:",
                        "--log_level=TEXT", "Sequences running at once."],
        "KVSERVE_CLI": ["Connection:", "--target=TEXT", "Sampling:", "--temperature=NUMBER",
                        "--max_tokens=INT"],
        "KVSERVE_BENCH_BIN": ["Load:", "--concurrency=", "Workload:", "--prompt_tokens=INT",
                              "Goodput:", "--slo_ttft_ms=NUMBER"],
    }

    def test_help_lists_own_flags_in_groups_and_no_abseil_flags(self):
        for binary, expected in self.HELP.items():
            for spelling in ("--help", "-h"):
                with self.subTest(binary=binary, spelling=spelling):
                    result = run(binary, spelling)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    for text in expected:
                        self.assertIn(text, result.stdout)
                    for absl_flag in ("--flagfile", "--fromenv", "--undefok", "No flags matched"):
                        self.assertNotIn(absl_flag, result.stdout)
                    # Every flag has its group: a new one goes into server/flag_groups.cc
                    # or client/flag_groups.cc.
                    self.assertNotIn("\nOther:", result.stdout,
                                     "a flag no group names: add it to a flag_groups.cc")

    def test_helpfull_still_lists_every_flag(self):
        result = kvserve("--helpfull")
        self.assertIn("--flagfile", result.stdout)
        self.assertIn("--max_num_seqs", result.stdout)

    def test_help_filter(self):
        result = kvserve("--help=cuda")
        self.assertEqual(result.returncode, 0)
        self.assertIn("--cuda_graphs", result.stdout)
        self.assertNotIn("--max_num_seqs", result.stdout)

    def test_version(self):
        for binary, name in (("KVSERVE_BIN", "kvserve"), ("KVSERVE_CLI", "kvserve-cli"),
                             ("KVSERVE_BENCH_BIN", "kvserve-bench")):
            with self.subTest(binary=binary):
                result = run(binary, "--version")
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertRegex(result.stdout, rf"^{name} \S+ \(\w+ build(, [^)]+)?\)\n$")

    def test_server_takes_dashed_flags(self):
        server = Server(MODEL, "--port=0", "--http-port=-1", "--metrics-port=-1",
                        "--no-enable-prefix-caching", "--max-num-seqs", "2")
        server.stop()
        # The pool holds no more than 2 sequences of the model's whole context (1024).
        self.assertIn("KV cache: 128 blocks of 16 tokens = 2048 tokens", "".join(server.log))
        self.assertIn("prefix caching off", "".join(server.log))

    def test_unknown_flag_names_the_nearest(self):
        cases = [("KVSERVE_BIN", ["--max_num_seq=3"],
                  "kvserve: unknown flag --max_num_seq; did you mean --max_num_seqs?"),
                 ("KVSERVE_BIN", ["--max-num-seq=3"],
                  "kvserve: unknown flag --max-num-seq; did you mean --max-num-seqs?"),
                 ("KVSERVE_CLI", ["--max-token=3", "generate"],
                  "kvserve-cli: unknown flag --max-token; did you mean --max-tokens?"),
                 ("KVSERVE_BENCH_BIN", ["--concurency=2"],
                  "kvserve-bench: unknown flag --concurency; did you mean --concurrency?")]
        for binary, args, message in cases:
            with self.subTest(args=args):
                result = run(binary, *args)
                self.assertEqual(result.returncode, 2)
                self.assertIn(message, result.stderr)

    def test_bad_value_names_the_flag(self):
        result = kvserve("--max-num-seqs=lots")
        self.assertEqual(result.returncode, 2)
        self.assertIn("kvserve: --max-num-seqs: ", result.stderr)


if __name__ == "__main__":
    unittest.main()
