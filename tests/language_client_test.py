#!/usr/bin/env python3
"""One of the example clients in client/go, client/java, client/ruby against
a real kvserve process (SmolLM2 when tools/fetch-smollm2.sh has cached it,
else the built-in model with a ChatML template): a greedy request streams the
same tokens as the unary call returns; Chat answers a system and a user
message; a stream cancelled mid-way is counted as cancelled and frees its KV
blocks; a short deadline gives DEADLINE_EXCEEDED (and frees them too); a bad
request, a full server and a server that is down come back as
INVALID_ARGUMENT, RESOURCE_EXHAUSTED and UNAVAILABLE with their messages; a
bearer token is sent from a file or a flag; mutual TLS connects with a
client certificate and is refused without one.

Run by ctest with: KVSERVE_CLIENT_LANGUAGE (go, java or ruby),
KVSERVE_EXAMPLE (the example client the build made), KVSERVE_SKIP_REASON (set
when the build left it out: the test prints it and exits 77, a visible
SKIP), KVSERVE_BIN, KVSERVE_TEST_DATA_DIR, KVSERVE_SMOLLM2_GGUF, and
PYTHONPATH holding tests/openai (kvserve_server.py)."""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from kvserve_server import KvserveServer

LANGUAGE = os.environ.get("KVSERVE_CLIENT_LANGUAGE", "?")
SKIP = 77
CALL_TIMEOUT_S = 120
SUMMARY = re.compile(r"^token_ids=([0-9,]*) finish=(\w+) prompt_tokens=(\d+) "
                     r"completion_tokens=(\d+)$", re.MULTILINE)
TOKEN = "tok-clients"


def smollm2_path():
    path = os.environ.get("KVSERVE_SMOLLM2_GGUF", "")
    return path if path and os.path.isfile(path) else None


def dead_target():
    """A loopback HOST:PORT with nothing listening (a server that is down)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


class LanguageClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.token_file = os.path.join(cls.tmp.name, "tokens")
        with open(cls.token_file, "w") as f:
            f.write(f"# the test's bearer token\n{TOKEN}\n")
        os.chmod(cls.token_file, 0o600)
        model = smollm2_path()
        if model:
            flags = [f"--model={model}"]
        else:  # the built-in model has no chat template of its own
            flags = ["--chat_template=" + os.path.join(os.environ["KVSERVE_TEST_DATA_DIR"],
                                                       "chat", "chatml_strict.jinja")]
        # One running request and no queue: a second one is RESOURCE_EXHAUSTED.
        cls.server = KvserveServer(*flags, "--max_num_seqs=1", "--max_queued_requests=0",
                                   f"--auth_token_file={cls.token_file}")
        cls.server.start()
        log = "".join(cls.server.log)
        cls.target = "127.0.0.1:" + re.search(r"serving .* on [0-9.]+:(\d+)", log).group(1)
        cls.smollm2 = model is not None
        print(f"{LANGUAGE} client against {'SmolLM2' if model else 'the built-in model'}",
              file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.tmp.cleanup()

    def tearDown(self):
        self.assertEqual(self.server.wait_for_metric("kvserve_kv_blocks_used", lambda v: v == 0),
                         0, "KV blocks still held after the test")

    def run_example(self, *args, target=None, token=True, expect_ok=True):
        auth = [f"--auth-token-file={self.token_file}"] if token else []
        command = [os.environ["KVSERVE_EXAMPLE"], f"--target={target or self.target}", *auth,
                   *args]
        result = subprocess.run(command, capture_output=True, text=True, timeout=CALL_TIMEOUT_S,
                                env={**os.environ, "KVSERVE_AUTH_TOKEN": ""})
        print(f"$ {' '.join(command[1:])}\n{result.stdout}{result.stderr}", file=sys.stderr)
        if expect_ok:
            self.assertEqual(result.returncode, 0, result.stderr)
        else:
            self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        return result

    def summary(self, result):
        """(text before the summary line, token ids, finish reason, completion tokens)."""
        match = SUMMARY.search(result.stdout)
        self.assertIsNotNone(match, result.stdout)
        ids = [int(t) for t in match.group(1).split(",") if t]
        return result.stdout[:match.start()], ids, match.group(2), int(match.group(4))

    def outcome(self, name):
        return self.server.metric(f'kvserve_requests_total{{api="grpc",outcome="{name}"}}')

    def test_stream_matches_unary_for_a_greedy_request(self):
        args = ["--prompt=The capital of France is", "--max-tokens=12", "--ignore-eos"]
        unary_text, unary_ids, finish, completion = self.summary(
            self.run_example(*args, "generate"))
        stream_text, stream_ids, _, _ = self.summary(self.run_example(*args, "stream"))
        self.assertEqual(len(unary_ids), 12)
        self.assertEqual((finish, completion), ("FINISH_REASON_LENGTH", 12))
        self.assertEqual(stream_ids, unary_ids)
        self.assertEqual(stream_text, unary_text)
        if self.smollm2:
            self.assertIn("Paris", stream_text)

    def test_chat_with_a_system_and_a_user_message(self):
        text, ids, finish, _ = self.summary(self.run_example(
            "--system=You are a helpful assistant.", "--prompt=What is the capital of France?",
            "--max-tokens=24", "chat"))
        self.assertGreater(len(ids), 0)
        self.assertIn(finish, ("FINISH_REASON_EOS", "FINISH_REASON_STOP", "FINISH_REASON_LENGTH"))
        if self.smollm2:
            self.assertIn("Paris", text)

    def test_cancelled_stream_frees_its_kv_blocks(self):
        cancelled = self.outcome("cancelled")
        result = self.run_example("--prompt-ids=1,40,50,60", "--max-tokens=1500", "--ignore-eos",
                                  "--cancel-after=3", "cancel")
        self.assertRegex(result.stdout, r"cancelled after [3-9]\d* tokens \(CANCELLED\)")
        # Counted as cancelled (not finished), and its blocks are free (tearDown).
        self.assertEqual(self.server.wait_for_metric(
            'kvserve_requests_total{api="grpc",outcome="cancelled"}',
            lambda v: v == cancelled + 1), cancelled + 1)

    def test_deadline_gives_deadline_exceeded(self):
        # 1 s: past a cold JVM's connection set-up, so the server has the call
        # when the deadline passes (1,500 tokens take either model > 10 s).
        passed = self.outcome("deadline_exceeded")
        result = self.run_example("--prompt-ids=1,40,50,60", "--max-tokens=1500", "--ignore-eos",
                                  "--deadline-ms=1000", "stream", expect_ok=False)
        self.assertIn("error: DEADLINE_EXCEEDED", result.stderr)
        self.assertIn("hint: the deadline passed first", result.stderr)
        # The server ended it for the deadline; its blocks are free (tearDown).
        self.assertEqual(self.server.wait_for_metric(
            'kvserve_requests_total{api="grpc",outcome="deadline_exceeded"}',
            lambda v: v == passed + 1), passed + 1)

    def test_bad_request_gives_invalid_argument_with_the_servers_message(self):
        result = self.run_example("--max-tokens=0", "generate", expect_ok=False)
        self.assertIn("error: INVALID_ARGUMENT: stopping.max_new_tokens must be >= 1, got 0",
                      result.stderr)

    def test_full_server_gives_resource_exhausted(self):
        holder = subprocess.Popen(
            [os.environ["KVSERVE_EXAMPLE"], f"--target={self.target}",
             f"--auth-token-file={self.token_file}", "--prompt-ids=1,2", "--max-tokens=1500",
             "--ignore-eos", "stream"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # It holds the only slot once it runs.
            self.assertEqual(self.server.wait_for_metric("kvserve_requests_running",
                                                         lambda v: v == 1), 1)
            result = self.run_example("--prompt-ids=1,2", "--max-tokens=2", "generate",
                                      expect_ok=False)
            self.assertIn("error: RESOURCE_EXHAUSTED: ", result.stderr)
            self.assertIn("--max_num_seqs + --max_queued_requests", result.stderr)
        finally:
            holder.terminate()  # the server sees the connection go: a cancel
            holder.wait(timeout=30)

    def test_server_down_gives_unavailable(self):
        result = self.run_example("--max-tokens=2", "generate", target=dead_target(),
                                  expect_ok=False)
        self.assertIn("error: UNAVAILABLE: ", result.stderr)

    def test_mutual_tls(self):
        """--tls with a CA file, a server name and a client certificate."""
        d = self.tmp.name
        ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
        subprocess.run(
            f"openssl req -x509 {ec} -days 1 -subj /CN=localhost "
            f"-addext subjectAltName=DNS:localhost -keyout server.key -out server.pem && "
            f"openssl req -x509 {ec} -days 1 -subj /CN=test-ca -keyout ca.key -out ca.pem && "
            f"openssl req {ec} -subj /CN=client -keyout client.key -out client.csr && "
            f"openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
            f"-days 1 -out client.pem",
            shell=True, cwd=d, check=True, capture_output=True)
        # The built-in model: it starts at once.
        with KvserveServer(f"--tls_cert={d}/server.pem", f"--tls_key={d}/server.key",
                           f"--tls_client_ca={d}/ca.pem") as server:
            port = re.search(r"serving .* on [0-9.]+:(\d+)", "".join(server.log)).group(1)
            tls = ["--tls", f"--tls-ca={d}/server.pem", "--tls-server-name=localhost",
                   "--prompt-ids=1,2", "--max-tokens=3"]
            target = f"127.0.0.1:{port}"
            _, ids, _, _ = self.summary(self.run_example(
                *tls, f"--tls-client-cert={d}/client.pem", f"--tls-client-key={d}/client.key",
                "generate", target=target, token=False))
            self.assertEqual(len(ids), 3)
            refused = self.run_example(*tls, "--deadline-ms=30000", "generate", target=target,
                                       token=False, expect_ok=False)
            self.assertIn("error: UNAVAILABLE: ", refused.stderr)

    def test_bearer_token(self):
        result = self.run_example("--max-tokens=2", "generate", token=False, expect_ok=False)
        self.assertIn("error: UNAUTHENTICATED: ", result.stderr)
        self.run_example("--auth-token=" + TOKEN, "--max-tokens=2", "generate", token=False)


def main():
    reason = os.environ.get("KVSERVE_SKIP_REASON", "")
    if reason:
        print(f"SKIP: the {LANGUAGE} client example was not built: {reason}")
        return SKIP
    if not os.access(os.environ.get("KVSERVE_EXAMPLE", ""), os.X_OK):
        print(f"{LANGUAGE}: {os.environ.get('KVSERVE_EXAMPLE')} is missing: build the target")
        return 1
    program = unittest.main(exit=False, verbosity=2)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
