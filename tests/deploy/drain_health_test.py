#!/usr/bin/env python3
"""What the Kubernetes readiness probe (deploy/k8s/base/deployment.yaml)
relies on, against the real binary: grpc.health.v1 says SERVING once kvserve
serves, and NOT_SERVING (for "" and for kvserve.v1.Inference) from SIGTERM
on, while a gRPC stream is still in flight and the process still runs; new
gRPC calls then get UNAVAILABLE; with only an HTTP stream in flight the same
(the gRPC server stops last); the process exits 0 once the last request is
gone.

Env: KVSERVE_BIN. Debian's python3 (python3-grpcio); the two messages it
needs are encoded by hand, so no generated stubs."""
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time
import unittest

import grpc

DEADLINE_S = 60  # generous: CI runs this on a loaded 2-core machine
SERVING, NOT_SERVING = 1, 2  # grpc.health.v1.HealthCheckResponse.ServingStatus
# kvserve.v1.GenerateRequest{token_ids{ids:[1,2,3]}, stopping{max_new_tokens:32}}
GENERATE_REQUEST = bytes([0x1a, 0x05, 0x0a, 0x03, 0x01, 0x02, 0x03, 0x2a, 0x02, 0x08, 0x20])
# The same with max_new_tokens 2000 (varint d0 0f) and ignore_eos.
LONG_REQUEST = bytes([0x1a, 0x05, 0x0a, 0x03, 0x01, 0x02, 0x03,
                      0x2a, 0x05, 0x08, 0xd0, 0x0f, 0x20, 0x01])


def encode_health_request(service):
    data = service.encode()
    assert len(data) < 128
    return b"\x0a" + bytes([len(data)]) + data if data else b""


def decode_health_status(data):
    """HealthCheckResponse{status = 1 (varint)}; an empty message is UNKNOWN (0)."""
    return data[1] if len(data) >= 2 and data[0] == 0x08 else 0


class DrainHealthTest(unittest.TestCase):
    def setUp(self):
        self.server = subprocess.Popen(
            [os.environ["KVSERVE_BIN"], "--port=0", "--http_port=0", "--metrics_port=-1",
             "--host=127.0.0.1", "--http_host=127.0.0.1", "--shutdown_grace_s=60"],
            stderr=subprocess.PIPE, text=True)
        self.addCleanup(self.kill_server)
        for line in self.server.stderr:
            match = re.search(r"HTTP API on http://[0-9.]+:(\d+)", line)
            if match:
                self.http_port = int(match.group(1))
            match = re.search(r"serving .* on [0-9.]+:(\d+)", line)
            if match:
                self.grpc_port = int(match.group(1))
                break
        else:
            raise RuntimeError("kvserve exited before serving")
        # Keep reading the log, so that the server never blocks on a full pipe.
        self.reader = threading.Thread(target=lambda: [None for _ in self.server.stderr],
                                       daemon=True)
        self.reader.start()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.grpc_port}")
        self.addCleanup(self.channel.close)
        self.check = self.channel.unary_unary(
            "/grpc.health.v1.Health/Check", request_serializer=encode_health_request,
            response_deserializer=decode_health_status)
        self.generate = self.channel.unary_unary(
            "/kvserve.v1.Inference/Generate", request_serializer=lambda b: b,
            response_deserializer=lambda b: b)

    def kill_server(self):
        if self.server.poll() is None:
            self.server.kill()
        self.server.wait()
        if hasattr(self, "reader"):
            self.reader.join(timeout=DEADLINE_S)
        self.server.stderr.close()

    def statuses(self):
        return [self.check(service, timeout=DEADLINE_S) for service in ("", "kvserve.v1.Inference")]

    def probe_fails(self):
        """What the kubelet's gRPC probe sees: anything but SERVING fails it."""
        try:
            return self.check("kvserve.v1.Inference", timeout=DEADLINE_S) != SERVING
        except grpc.RpcError:
            return True

    def wait_for(self, predicate, what):
        deadline = time.monotonic() + DEADLINE_S
        while not predicate():
            self.assertLess(time.monotonic(), deadline, f"timed out waiting for {what}")
            time.sleep(0.05)

    def test_not_serving_while_a_grpc_stream_drains(self):
        self.assertEqual(self.statuses(), [SERVING, SERVING])
        # A 2,000-token stream keeps the server draining (tens of seconds on
        # the CPU; the grace period is 60 s).
        holder = self.channel.unary_stream(
            "/kvserve.v1.Inference/GenerateStream", request_serializer=lambda b: b,
            response_deserializer=lambda b: b)(LONG_REQUEST, timeout=DEADLINE_S * 2)
        next(holder)

        self.server.send_signal(signal.SIGTERM)
        self.wait_for(lambda: self.statuses() == [NOT_SERVING, NOT_SERVING], "NOT_SERVING")
        self.assertIsNone(self.server.poll(), "still running: the stream holds the drain")
        next(holder)  # and the stream still streams
        with self.assertRaises(grpc.RpcError) as refused:
            self.generate(GENERATE_REQUEST, timeout=DEADLINE_S)
        self.assertEqual(refused.exception.code(), grpc.StatusCode.UNAVAILABLE)

        holder.cancel()  # the last request goes: the drain ends early
        self.assertEqual(self.server.wait(timeout=DEADLINE_S), 0)

    def test_not_serving_while_an_http_stream_drains(self):
        # The gRPC server stops last: with only an HTTP request in flight the
        # probe still gets an answer, NOT_SERVING, not a refused connection.
        self.assertEqual(self.statuses(), [SERVING, SERVING])
        holder = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=DEADLINE_S)
        models = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=DEADLINE_S)
        models.request("GET", "/v1/models")
        model = json.loads(models.getresponse().read())["data"][0]["id"]
        models.close()
        holder.request("POST", "/v1/completions", body=json.dumps(
            {"model": model, "prompt": "Hello", "max_tokens": 2000, "ignore_eos": True,
             "stream": True}), headers={"Content-Type": "application/json"})
        response = holder.getresponse()
        self.assertEqual(response.status, 200)
        self.assertTrue(response.readline().startswith(b"data: "))

        self.server.send_signal(signal.SIGTERM)
        self.wait_for(lambda: self.statuses() == [NOT_SERVING, NOT_SERVING], "NOT_SERVING")
        self.assertTrue(self.probe_fails())
        self.assertIsNone(self.server.poll(), "still running: the stream holds the drain")
        line = response.readline()
        while line.strip() == b"":  # the blank line that ends each SSE event
            line = response.readline()
        self.assertTrue(line.startswith(b"data: "), f"the stream still streams: {line!r}")
        with self.assertRaises(grpc.RpcError) as refused:
            self.generate(GENERATE_REQUEST, timeout=DEADLINE_S)
        self.assertEqual(refused.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(self.statuses(), [NOT_SERVING, NOT_SERVING], "answered after the refusal")
        holder.close()
        self.assertEqual(self.server.wait(timeout=DEADLINE_S), 0)


if __name__ == "__main__":
    unittest.main()
