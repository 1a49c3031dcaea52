#!/usr/bin/env python3
"""SIGTERM with streams that outlast the drain grace (issue 27 item 4): the
real binary with --shutdown_grace_s=1 holds a gRPC stream, an SSE stream and
a non-streaming HTTP completion, all long; on SIGTERM each ends, once the
grace has run out, with kvserve's own message: the gRPC status UNAVAILABLE
(not gRPC's "Cancelling all calls"), an SSE error event followed by
`data: [DONE]`, and a 503 JSON error. The process then exits 0.

Env: KVSERVE_BIN, PYTHONPATH holding the generated stubs."""
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
from kvserve.v1 import inference_pb2, inference_pb2_grpc

DEADLINE_S = 60
MESSAGE = "server shutting down: the drain grace of 1 s ran out (--shutdown_grace_s)"


def in_flight(metrics_port):
    """Requests the engine holds, running or waiting (its gauges)."""
    conn = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    return sum(float(m) for m in re.findall(
        r"^kvserve_requests_(?:running|waiting)(?:\{[^}]*\})? ([0-9.e+]+)$", text, re.M))


class DrainGraceTest(unittest.TestCase):
    def test_streams_cut_by_the_grace_get_kvserves_error(self):
        server = subprocess.Popen(
            [os.environ["KVSERVE_BIN"], "--host=127.0.0.1", "--port=0", "--metrics_port=0",
             "--http_host=127.0.0.1", "--http_port=0", "--shutdown_grace_s=1",
             "--log_stats_interval_s=0"], stderr=subprocess.PIPE, text=True)
        log = []
        try:
            for line in server.stderr:
                log.append(line)
                if m := re.search(r"HTTP API on http://[0-9.]+:(\d+)/v1", line):
                    http_port = int(m.group(1))
                if m := re.search(r"serving .* on [0-9.]+:(\d+)", line):
                    grpc_port = int(m.group(1))
                    metrics_port = int(re.search(r"metrics on http://[0-9.]+:(\d+)", line).group(1))
                    break
            reader = threading.Thread(target=lambda: log.extend(server.stderr), daemon=True)
            reader.start()

            # gRPC: a stream long past the grace, read on a thread of its own.
            channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
            stub = inference_pb2_grpc.InferenceStub(channel)
            request = inference_pb2.GenerateRequest(text="Hello")
            request.stopping.max_new_tokens = 2000
            request.stopping.ignore_eos = True
            grpc_end = {}
            first_grpc = threading.Event()

            def read_grpc():
                try:
                    for _ in stub.GenerateStream(request, timeout=DEADLINE_S):
                        first_grpc.set()
                    grpc_end["code"] = grpc.StatusCode.OK
                except grpc.RpcError as e:
                    grpc_end["code"], grpc_end["details"] = e.code(), e.details()
                first_grpc.set()

            grpc_thread = threading.Thread(target=read_grpc)
            grpc_thread.start()

            body = {"prompt": "Hello", "max_tokens": 2000, "ignore_eos": True}
            sse = http.client.HTTPConnection("127.0.0.1", http_port, timeout=DEADLINE_S)
            sse.request("POST", "/v1/completions", body=json.dumps({**body, "stream": True}))
            sse_response = sse.getresponse()
            self.assertEqual(sse_response.status, 200)
            self.assertTrue(sse_response.readline().startswith(b"data: {"))
            unary = http.client.HTTPConnection("127.0.0.1", http_port, timeout=DEADLINE_S)
            unary.request("POST", "/v1/completions", body=json.dumps(body))
            self.assertTrue(first_grpc.wait(DEADLINE_S))
            # All three in the engine before the signal: a request still in
            # its socket when the drain starts is refused at once ("the server
            # is shutting down"), which is right but not what this test is about.
            deadline = time.monotonic() + DEADLINE_S
            while in_flight(metrics_port) < 3:
                self.assertLess(time.monotonic(), deadline, "3 requests never in flight")
                time.sleep(0.02)

            server.send_signal(signal.SIGTERM)

            events = [l for l in sse_response.read().decode().split("\n\n") if l]
            self.assertEqual(events[-1], "data: [DONE]", events[-3:])
            error = json.loads(events[-2].removeprefix("data: "))["error"]
            self.assertEqual((error["type"], error["message"]), ("service_unavailable", MESSAGE))

            unary_response = unary.getresponse()
            self.assertEqual(unary_response.status, 503)
            error = json.loads(unary_response.read())["error"]
            if error["message"] != MESSAGE:
                server.wait(timeout=DEADLINE_S)
                reader.join(DEADLINE_S)
            self.assertEqual((error["type"], error["message"]), ("service_unavailable", MESSAGE),
                             "".join(log))

            grpc_thread.join(DEADLINE_S)
            self.assertEqual(grpc_end.get("code"), grpc.StatusCode.UNAVAILABLE, grpc_end)
            self.assertEqual(grpc_end.get("details"), MESSAGE)
            channel.close()

            self.assertEqual(server.wait(timeout=DEADLINE_S), 0)
            reader.join(DEADLINE_S)
            self.assertEqual(len(re.findall(r"access .* outcome=unavailable", "".join(log))), 3,
                             "".join(log))
        finally:
            server.kill()
            server.wait()
            server.stderr.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
