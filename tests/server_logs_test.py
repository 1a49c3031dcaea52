#!/usr/bin/env python3
"""The binary's logs (issue 27 item 7): one access-log line per generation
request that ended, over gRPC and HTTP, whether it finished, was refused or
was cancelled; never the prompt text without --log_prompts; and the periodic
stats line, which stops once the server is idle.

Env: KVSERVE_BIN, PYTHONPATH holding the generated stubs."""
import http.client
import json
import os
import re
import subprocess
import threading
import time
import unittest

import grpc
from kvserve.v1 import inference_pb2, inference_pb2_grpc

PROMPT = "secret prompt 4711"
DEADLINE_S = 60


class Server:
    """kvserve (built-in model) on free loopback ports; its stderr collected."""

    def __init__(self, *flags):
        self.process = subprocess.Popen(
            [os.environ["KVSERVE_BIN"], "--host=127.0.0.1", "--port=0", "--metrics_port=-1",
             "--http_host=127.0.0.1", "--http_port=0", *flags],
            stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.lock = threading.Lock()
        self.grpc_port = self.http_port = None
        for line in self.process.stderr:
            self.lines.append(line)
            if m := re.search(r"HTTP API on http://[0-9.]+:(\d+)/v1", line):
                self.http_port = int(m.group(1))
            if m := re.search(r"serving .* on [0-9.]+:(\d+)", line):
                self.grpc_port = int(m.group(1))
                break
        assert self.grpc_port and self.http_port, "".join(self.lines)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.grpc_port}")
        self.stub = inference_pb2_grpc.InferenceStub(self.channel)

    def _read(self):
        for line in self.process.stderr:
            with self.lock:
                self.lines.append(line)

    def log(self):
        with self.lock:
            return "".join(self.lines)

    def wait_for_log(self, pattern):
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            if m := re.search(pattern, self.log()):
                return m
            time.sleep(0.05)
        raise AssertionError(f"no log line matches {pattern!r}:\n{self.log()}")

    def post(self, path, body):
        conn = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=DEADLINE_S)
        conn.request("POST", path, body=json.dumps(body))
        return conn, conn.getresponse()

    def stop(self):
        self.channel.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=DEADLINE_S)
        finally:
            self.process.kill()
            self.reader.join(timeout=DEADLINE_S)
            self.process.stderr.close()


def access_line(api, route, request_id, outcome):
    return (rf"access api={api} route={re.escape(route)} id=\"{re.escape(request_id)}\" "
            rf"model=\S+ stream=(true|false) prompt_tokens=(\d+) output_tokens=(\d+) "
            rf"ttft_ms=(\S+) duration_ms=([0-9.]+) outcome={outcome}\n")


def grpc_request(request_id, max_new_tokens):
    request = inference_pb2.GenerateRequest(text=PROMPT, request_id=request_id)
    request.stopping.max_new_tokens = max_new_tokens
    request.stopping.ignore_eos = True
    return request


class AccessLogTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--log_stats_interval_s=0")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        log = cls.server.log()
        assert PROMPT not in log, log  # whatever happened, never without --log_prompts

    def test_grpc_finished(self):
        self.server.stub.Generate(grpc_request("unary-ok", 3), timeout=DEADLINE_S)
        m = self.server.wait_for_log(access_line("grpc", "Generate", "unary-ok", "length"))
        self.assertEqual(m.group(1), "false")
        self.assertEqual(int(m.group(2)), len(PROMPT.encode()) + 1)  # the byte tokenizer's bos
        self.assertEqual(m.group(3), "3")
        self.assertRegex(m.group(4), r"^[0-9.]+$")
        list(self.server.stub.GenerateStream(grpc_request("stream-ok", 4), timeout=DEADLINE_S))
        m = self.server.wait_for_log(access_line("grpc", "GenerateStream", "stream-ok", "length"))
        self.assertEqual((m.group(1), m.group(3)), ("true", "4"))

    def test_grpc_refused(self):
        with self.assertRaises(grpc.RpcError) as caught:
            self.server.stub.Generate(grpc_request("too-long", 1 << 20), timeout=DEADLINE_S)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        m = self.server.wait_for_log(access_line("grpc", "Generate", "too-long", "invalid_argument"))
        self.assertEqual((m.group(3), m.group(4)), ("0", "-"))

    def test_grpc_cancelled(self):
        call = self.server.stub.GenerateStream(grpc_request("cancel-me", 2000), timeout=DEADLINE_S)
        next(call)
        call.cancel()
        m = self.server.wait_for_log(access_line("grpc", "GenerateStream", "cancel-me", "cancelled"))
        self.assertGreater(int(m.group(3)), 0)

    def test_http_finished_and_refused(self):
        conn, response = self.server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 5,
                                                              "ignore_eos": True})
        reply = json.loads(response.read())
        conn.close()
        m = self.server.wait_for_log(access_line("http", "/v1/completions", reply["id"], "length"))
        self.assertEqual((m.group(1), m.group(3)), ("false", "5"))
        self.assertEqual(int(m.group(2)), reply["usage"]["prompt_tokens"])

        conn, response = self.server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": -1})
        self.assertEqual(response.status, 400)
        conn.close()
        self.server.wait_for_log(r"access api=http route=/v1/completions id=\"\" .* "
                                 r"outcome=invalid_argument\n")

    def test_http_stream_cancelled(self):
        conn, response = self.server.post("/v1/completions", {
            "prompt": PROMPT, "max_tokens": 2000, "ignore_eos": True, "stream": True})
        first = json.loads(response.readline().decode().removeprefix("data: "))
        conn.close()  # the client goes away mid-stream
        m = self.server.wait_for_log(access_line("http", "/v1/completions", first["id"],
                                                 "cancelled"))
        self.assertEqual(m.group(1), "true")


class LogPromptsTest(unittest.TestCase):
    def test_prompt_logged_only_on_its_own_line_with_the_flag(self):
        server = Server("--log_stats_interval_s=0", "--log_prompts")
        try:
            server.stub.Generate(grpc_request("with-flag", 2), timeout=DEADLINE_S)
            server.wait_for_log(access_line("grpc", "Generate", "with-flag", "length"))
        finally:
            server.stop()
        prompt_lines = [l for l in server.log().splitlines() if PROMPT in l]
        self.assertEqual(len(prompt_lines), 1, prompt_lines)
        self.assertNotIn("access", prompt_lines[0])


class StatsLineTest(unittest.TestCase):
    def test_stats_lines_while_busy_then_quiet(self):
        server = Server("--log_stats_interval_s=0.2")
        try:
            list(server.stub.GenerateStream(grpc_request("busy", 200), timeout=DEADLINE_S))
            stats = r"stats: prompt [0-9.]+ tokens/s, generation ([0-9.]+) tokens/s, running (\d+) reqs"
            busy = server.wait_for_log(stats)
            self.assertIn("KV cache", server.log())
            # Once a line has said the server went idle, none follows.
            server.wait_for_log(r"generation [0-9.]+ tokens/s, running 0 reqs, waiting 0 reqs")
            count = len(re.findall(stats, server.log()))
            time.sleep(1.0)  # five intervals
            self.assertEqual(len(re.findall(stats, server.log())), count, server.log())
            self.assertGreater(float(busy.group(1)), 0)
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
