#!/usr/bin/env python3
"""Prompts are logged only with --log_prompts (issue 13 item 12): the real
binary at --log_level=debug serves a text request and stops; its log holds
the prompt text only when the flag is given.

Env: KVSERVE_BIN, PYTHONPATH holding the generated stubs."""
import os
import re
import subprocess
import unittest

import grpc
from kvserve.v1 import inference_pb2, inference_pb2_grpc

PROMPT = "secret prompt 4711"


def serve_one_request(*flags):
    server = subprocess.Popen(
        [os.environ["KVSERVE_BIN"], "--port=0", "--metrics_port=-1", "--http_port=-1", "--host=127.0.0.1",
         "--log_level=debug", *flags], stderr=subprocess.PIPE, text=True)
    log = []
    try:
        for line in server.stderr:
            log.append(line)
            match = re.search(r"serving .* on [0-9.]+:(\d+)", line)
            if match:
                break
        with grpc.insecure_channel(f"127.0.0.1:{match.group(1)}") as channel:
            stub = inference_pb2_grpc.InferenceStub(channel)
            request = inference_pb2.GenerateRequest(text=PROMPT, request_id="log-test")
            request.stopping.max_new_tokens = 2
            stub.Generate(request, timeout=60)
            list(stub.GenerateStream(request, timeout=60))
        server.terminate()
        log.extend(server.stderr)
        assert server.wait(timeout=30) == 0
    finally:
        server.kill()
    return "".join(log)


class LogPromptsTest(unittest.TestCase):
    def test_prompt_not_logged_by_default(self):
        self.assertNotIn(PROMPT, serve_one_request())

    def test_prompt_logged_with_the_flag(self):
        log = serve_one_request("--log_prompts")
        self.assertIn(f'Generate request_id="log-test" prompt: {PROMPT}', log)
        self.assertIn(f'GenerateStream request_id="log-test" prompt: {PROMPT}', log)


if __name__ == "__main__":
    unittest.main()
