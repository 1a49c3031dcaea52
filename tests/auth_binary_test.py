#!/usr/bin/env python3
"""Authentication of the real kvserve binary (--auth_token_file): gRPC and
HTTP refuse a missing or wrong bearer token and serve a right one, health
stays open on both, and kvserve-cli, kvserve-bench and the Python examples
authenticate with a token file, a flag or $KVSERVE_AUTH_TOKEN. With
--tls_client_ca, kvserve-cli and kvserve-bench connect only with a client
certificate. A token file with no token is refused at start-up.

Run by ctest with KVSERVE_BIN, KVSERVE_CLI, KVSERVE_BENCH_BIN,
KVSERVE_PY_EXAMPLE, KVSERVE_PY_CHAT, KVSERVE_TEST_DATA_DIR, and PYTHONPATH
holding the generated stubs and tests/openai (kvserve_server.py)."""
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

import grpc
from kvserve.v1 import inference_pb2, inference_pb2_grpc
from kvserve_server import KvserveServer, scrape

TOKENS = ["tok-alpha", "tok-beta"]
TIMEOUT_S = 120


def data_path(*parts):
    return os.path.join(os.environ["KVSERVE_TEST_DATA_DIR"], *parts)


class AuthBinaryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.token_file = os.path.join(cls.tmp.name, "tokens")
        with open(cls.token_file, "w") as f:
            f.write("# kvserve test tokens\n\n" + "\n".join(TOKENS) + "\n")
        # World-readable on purpose: the server starts, with a warning.
        os.chmod(cls.token_file, 0o644)
        cls.server = KvserveServer(f"--model={data_path('tiny-qwen2')}",
                                   f"--chat_template={data_path('chat', 'chatml_strict.jinja')}",
                                   f"--auth_token_file={cls.token_file}")
        cls.server.start()
        log = "".join(cls.server.log)
        match = __import__("re").search(r"serving .* on [0-9.]+:(\d+)", log)
        cls.target = f"127.0.0.1:{match.group(1)}"
        cls.channel = grpc.insecure_channel(cls.target)
        cls.stub = inference_pb2_grpc.InferenceStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.stop()
        cls.tmp.cleanup()

    def tearDown(self):
        self.assertEqual(self.server.wait_for_metric("kvserve_kv_blocks_used", lambda v: v == 0), 0)

    def test_start_up_log_counts_tokens_and_warns_about_permissions(self):
        log = "".join(self.server.log)
        self.assertIn(f"authentication: 2 bearer tokens from {self.token_file}", log)
        self.assertIn("readable by every user", log)
        for token in TOKENS:
            self.assertNotIn(token, log)

    # --- HTTP ---

    def http(self, method, path, token=None, body=None, authorization=None):
        """(status, headers, parsed JSON body)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.server.http_port}{path}", method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Content-Type": "application/json"})
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        if authorization is not None:
            request.add_header("Authorization", authorization)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                return response.status, response.headers, json.loads(response.read())
        except urllib.error.HTTPError as e:
            return e.code, e.headers, json.loads(e.read())

    def test_http_health_is_open(self):
        status, _, body = self.http("GET", "/health")
        self.assertEqual((status, body), (200, {"status": "ok"}))

    def test_http_refuses_a_missing_token_like_openai(self):
        for method, path, body in [("GET", "/v1/models", None),
                                   ("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2}),
                                   ("GET", "/v1/no-such-endpoint", None)]:
            status, headers, reply = self.http(method, path, body=body)
            self.assertEqual(status, 401, path)
            self.assertEqual(headers["WWW-Authenticate"], "Bearer")
            self.assertEqual(reply["error"]["type"], "invalid_request_error")
            self.assertIsNone(reply["error"]["code"])
            self.assertIsNone(reply["error"]["param"])
            self.assertIn("Bearer <token>", reply["error"]["message"])

    def test_http_refuses_a_wrong_or_malformed_token(self):
        for kwargs in [{"token": "tok-gamma"}, {"token": "tok-alph"},
                       {"authorization": "Basic dG9rLWFscGhh"}]:
            status, headers, reply = self.http("GET", "/v1/models", **kwargs)
            self.assertEqual(status, 401, kwargs)
            self.assertTrue(headers["WWW-Authenticate"].startswith("Bearer"))
            self.assertEqual(reply["error"]["code"], "invalid_api_key")
            self.assertEqual(reply["error"]["type"], "invalid_request_error")

    def test_http_serves_every_configured_token(self):
        for token in TOKENS:
            status, _, reply = self.http("GET", "/v1/models", token=token)
            self.assertEqual(status, 200)
            model = reply["data"][0]["id"]
            status, _, reply = self.http("POST", "/v1/completions", token=token,
                                         body={"model": model, "prompt": "hi", "max_tokens": 2,
                                               "ignore_eos": True})
            self.assertEqual(status, 200, reply)
            self.assertEqual(reply["usage"]["completion_tokens"], 2)
            status, _, reply = self.http(
                "POST", "/v1/chat/completions", token=token,
                body={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
            self.assertEqual(status, 200, reply)
        status, _, _ = self.http("GET", "/v1/no-such-endpoint", token=TOKENS[0])
        self.assertEqual(status, 404)

    # --- gRPC ---

    def grpc_calls(self):
        """(name, call(metadata)) for each method family of kvserve.v1."""
        generate = inference_pb2.GenerateRequest()
        generate.token_ids.ids.extend([1, 2, 3])
        generate.stopping.max_new_tokens = 2
        chat = inference_pb2.ChatRequest()
        chat.messages.add(role="user", content="hi")
        chat.stopping.max_new_tokens = 2
        s, t = self.stub, TIMEOUT_S
        return [
            ("Generate", lambda md: s.Generate(generate, timeout=t, metadata=md)),
            ("GenerateStream", lambda md: list(s.GenerateStream(generate, timeout=t, metadata=md))),
            ("Chat", lambda md: s.Chat(chat, timeout=t, metadata=md)),
            ("ChatStream", lambda md: list(s.ChatStream(chat, timeout=t, metadata=md))),
            ("Tokenize", lambda md: s.Tokenize(inference_pb2.TokenizeRequest(text="hi"),
                                               timeout=t, metadata=md)),
            ("GetModelInfo", lambda md: s.GetModelInfo(inference_pb2.GetModelInfoRequest(),
                                                       timeout=t, metadata=md)),
        ]

    def test_grpc_refuses_a_missing_or_wrong_token_and_serves_a_right_one(self):
        for name, call in self.grpc_calls():
            for metadata in [(), (("authorization", "Bearer tok-gamma"),),
                             (("authorization", "tok-alpha"),)]:
                with self.subTest(method=name, metadata=metadata):
                    with self.assertRaises(grpc.RpcError) as caught:
                        call(metadata)
                    self.assertEqual(caught.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
            for token in TOKENS:
                with self.subTest(method=name, token=token):
                    self.assertTrue(call((("authorization", f"Bearer {token}"),)))

    def test_refusals_are_counted_by_api_and_reason(self):
        def failures():
            values = scrape(self.server.metrics_url)
            return {(api, reason): values[
                        f'kvserve_auth_failures_total{{api="{api}",reason="{reason}"}}']
                    for api in ("grpc", "http") for reason in ("missing", "malformed", "rejected")}
        before = failures()
        self.http("GET", "/v1/models")
        self.http("GET", "/v1/models", token="tok-gamma")
        self.http("GET", "/v1/models", token="tok-delta")
        self.http("GET", "/v1/models", authorization="Basic dG9rLWFscGhh")
        self.http("GET", "/v1/models", token="tok-alpha")  # accepted: not counted
        self.http("GET", "/health")  # open: not counted
        info = self.stub.GetModelInfo
        for metadata in [(), (), (("authorization", "tok-alpha"),),
                         (("authorization", "Bearer tok-gamma"),)]:
            with self.assertRaises(grpc.RpcError):
                info(inference_pb2.GetModelInfoRequest(), metadata=metadata, timeout=TIMEOUT_S)
        info(inference_pb2.GetModelInfoRequest(), timeout=TIMEOUT_S,
             metadata=(("authorization", "Bearer tok-beta"),))
        after = failures()
        delta = {key: after[key] - before[key] for key in after}
        self.assertEqual(delta, {("http", "missing"): 1, ("http", "rejected"): 2,
                                 ("http", "malformed"): 1, ("grpc", "missing"): 2,
                                 ("grpc", "malformed"): 1, ("grpc", "rejected"): 1})

    def test_grpc_health_and_reflection_are_open(self):
        # No Python stubs of grpc.health.v1 (a generated "grpc" package would
        # shadow grpcio): the messages by hand. Request: field 1 (service), a
        # string; response: field 1 (status) = 1, SERVING.
        check = self.channel.unary_unary("/grpc.health.v1.Health/Check")
        service = b"kvserve.v1.Inference"
        reply = check(b"\x0a" + bytes([len(service)]) + service, timeout=TIMEOUT_S)
        self.assertEqual(reply, b"\x08\x01")
        from reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
        stub = reflection_pb2_grpc.ServerReflectionStub(self.channel)
        replies = list(stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=TIMEOUT_S))
        names = {s.name for s in replies[0].list_services_response.service}
        self.assertIn("kvserve.v1.Inference", names)

    # --- the clients ---

    def run_tool(self, command, env_token=None):
        env = dict(os.environ)
        env.pop("KVSERVE_AUTH_TOKEN", None)
        if env_token is not None:
            env["KVSERVE_AUTH_TOKEN"] = env_token
        return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)

    def test_cli_takes_a_token_file_a_flag_or_the_environment(self):
        cli = [os.environ["KVSERVE_CLI"], f"--target={self.target}"]
        generate = ["generate", "--prompt-ids=1,2,3", "--max-tokens=2", "--json"]
        result = self.run_tool(cli + generate)
        self.assertEqual(result.returncode, 1)
        self.assertIn("UNAUTHENTICATED", result.stderr)
        result = self.run_tool(cli + [f"--auth-token-file={self.token_file}"] + generate)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(json.loads(result.stdout)["token_ids"]), 2)
        result = self.run_tool(cli + ["--auth-token=tok-beta", "info"])
        self.assertEqual(result.returncode, 0, result.stderr)
        result = self.run_tool(cli + ["chat", "--message=hi", "--max-tokens=2", "--json"],
                               env_token="tok-alpha")
        self.assertEqual(result.returncode, 0, result.stderr)
        result = self.run_tool(cli + ["health"])  # health needs no token
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_bench_takes_a_token(self):
        bench = [os.environ["KVSERVE_BENCH_BIN"], f"--target={self.target}", "--concurrency=1",
                 "--requests=2", "--warmup_requests=0", "--prompt_tokens=4", "--output_tokens=2",
                 "--progress=false"]
        result = self.run_tool(bench)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("GetModelInfo", result.stderr)
        result = self.run_tool(bench + [f"--auth_token_file={self.token_file}"])
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_python_examples_take_a_token(self):
        generate = [sys.executable, os.environ["KVSERVE_PY_EXAMPLE"], "--target", self.target,
                    "--prompt-ids", "1,2,3", "--max-tokens", "2", "--json"]
        self.assertNotEqual(self.run_tool(generate).returncode, 0)
        result = self.run_tool(generate + ["--auth-token-file", self.token_file])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(json.loads(result.stdout)["token_ids"]), 2)
        result = self.run_tool(generate + ["--unary"], env_token="tok-beta")
        self.assertEqual(result.returncode, 0, result.stderr)
        chat = [sys.executable, os.environ["KVSERVE_PY_CHAT"], "--target", self.target,
                "--message", "hi", "--max-tokens", "2", "--json", "--auth-token", "tok-alpha"]
        result = self.run_tool(chat)
        self.assertEqual(result.returncode, 0, result.stderr)


class MutualTlsTest(unittest.TestCase):
    """--tls_client_ca on the binary; kvserve-cli and kvserve-bench with and
    without a client certificate the CA signed."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
        subprocess.run(
            f"openssl req -x509 {ec} -days 1 -subj /CN=localhost "
            f"-addext subjectAltName=DNS:localhost -keyout server.key -out server.pem && "
            f"openssl req -x509 {ec} -days 1 -subj /CN=test-ca -keyout ca.key -out ca.pem && "
            f"openssl req {ec} -subj /CN=client -keyout client.key -out client.csr && "
            f"openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
            f"-days 1 -out client.pem",
            shell=True, cwd=d, check=True, capture_output=True)
        cls.server = KvserveServer(f"--tls_cert={d}/server.pem", f"--tls_key={d}/server.key",
                                   f"--tls_client_ca={d}/ca.pem")
        cls.server.start()
        match = __import__("re").search(r"serving .* on [0-9.]+:(\d+)", "".join(cls.server.log))
        cls.tls = [f"--target=127.0.0.1:{match.group(1)}", "--tls", f"--tls_ca={d}/server.pem"]
        cls.cert = [f"--tls_client_cert={d}/client.pem", f"--tls_client_key={d}/client.key"]

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.tmp.cleanup()

    def run_tool(self, command):
        return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)

    def test_cli_needs_a_client_certificate(self):
        cli = [os.environ["KVSERVE_CLI"], *self.tls, "--tls-server-name=localhost"]
        result = self.run_tool(cli + ["--timeout-s=30", "info"])
        self.assertEqual(result.returncode, 1)
        self.assertIn("UNAVAILABLE", result.stderr)
        result = self.run_tool(cli + self.cert + ["generate", "--prompt-ids=1,2", "--max-tokens=2",
                                                  "--json"])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(json.loads(result.stdout)["token_ids"]), 2)

    def test_bench_with_a_client_certificate(self):
        bench = [os.environ["KVSERVE_BENCH_BIN"], *self.tls, "--tls_server_name=localhost",
                 "--concurrency=1", "--requests=2", "--warmup_requests=0", "--prompt_tokens=4",
                 "--output_tokens=2", "--progress=false"]
        result = self.run_tool(bench + self.cert)
        self.assertEqual(result.returncode, 0, result.stderr)


class StartUpTest(unittest.TestCase):
    def test_a_token_file_without_tokens_is_refused(self):
        with tempfile.NamedTemporaryFile("w", suffix=".tokens") as f:
            f.write("# nothing yet\n\n")
            f.flush()
            result = subprocess.run(
                [os.environ["KVSERVE_BIN"], f"--auth_token_file={f.name}", "--port=0",
                 "--http_port=-1", "--metrics_port=-1"],
                capture_output=True, text=True, timeout=TIMEOUT_S)
        self.assertEqual(result.returncode, 2)
        self.assertIn(f"--auth_token_file {f.name} holds no token", result.stderr)


if __name__ == "__main__":
    unittest.main()
