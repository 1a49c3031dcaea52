#!/usr/bin/env python3
"""The Python client example against a real kvserve process: streamed and
unary greedy generation agree, text input works on the default model, and a
bad request comes back as INVALID_ARGUMENT; the sampling flags and
--logprobs reach the server and come back aligned with the tokens; a
--target list fails over past a replica that is down (Python and C++ CLIs).

Run by ctest with: KVSERVE_BIN (the server binary), KVSERVE_PY_EXAMPLE
(client/python/generate.py), PYTHONPATH holding the generated stubs."""
import json
import os
import re
import socket
import subprocess
import sys
import unittest


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = subprocess.Popen(
            [os.environ["KVSERVE_BIN"], "--port=0", "--http_port=-1", "--metrics_port=-1", "--host=127.0.0.1"],
            stderr=subprocess.PIPE, text=True)
        for line in cls.server.stderr:
            match = re.search(r"serving .* on [0-9.]+:(\d+)", line)
            if match:
                cls.target = f"127.0.0.1:{match.group(1)}"
                break
        else:
            raise RuntimeError("kvserve exited before serving")

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        code = cls.server.wait(timeout=30)
        if code != 0:
            raise RuntimeError(f"kvserve exited with {code} on SIGTERM")

    def run_example(self, *args, expect_ok=True):
        result = subprocess.run(
            [sys.executable, os.environ["KVSERVE_PY_EXAMPLE"], "--target", self.target, *args],
            capture_output=True, text=True, timeout=120)
        if expect_ok:
            self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def test_stream_and_unary_agree(self):
        args = ["--prompt-ids", "1,40,50,60", "--max-tokens", "12", "--ignore-eos", "--json"]
        stream = json.loads(self.run_example(*args).stdout)
        unary = json.loads(self.run_example(*args, "--unary").stdout)
        self.assertEqual(len(stream["token_ids"]), 12)
        self.assertEqual(stream["token_ids"], unary["token_ids"])
        self.assertEqual(stream["finish_reason"], "FINISH_REASON_LENGTH")
        self.assertEqual(stream["completion_tokens"], 12)

    def test_text_prompt_streams_text(self):
        out = json.loads(self.run_example("--prompt", "Hello", "--max-tokens", "8",
                                          "--ignore-eos", "--json").stdout)
        self.assertEqual(out["prompt_tokens"], 6)  # BOS + 5 bytes
        self.assertEqual(len(out["token_ids"]), 8)

    def test_reflection_describes_the_api(self):
        """What grpcurl-style tools see: the services, and the full API schema."""
        import grpc
        from google.protobuf import descriptor_pb2
        from reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
        with grpc.insecure_channel(self.target) as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            requests = [reflection_pb2.ServerReflectionRequest(list_services=""),
                        reflection_pb2.ServerReflectionRequest(
                            file_containing_symbol="kvserve.v1.Inference")]
            responses = list(stub.ServerReflectionInfo(iter(requests), timeout=10))
        services = {s.name for s in responses[0].list_services_response.service}
        self.assertTrue({"kvserve.v1.Inference", "grpc.health.v1.Health"} <= services, services)
        files = [descriptor_pb2.FileDescriptorProto.FromString(raw)
                 for raw in responses[1].file_descriptor_response.file_descriptor_proto]
        api = next(f for f in files if f.package == "kvserve.v1")
        methods = {m.name for s in api.service for m in s.method}
        self.assertEqual(methods, {"Generate", "GenerateStream", "GetModelInfo", "Tokenize",
                                   "Detokenize", "ApplyChatTemplate", "Chat", "ChatStream"})
        request = next(m for m in api.message_type if m.name == "GenerateRequest")
        self.assertEqual({f.name for f in request.field},
                         {"request_id", "text", "token_ids", "sampling", "stopping"})

    def test_sampling_flags_and_logprobs(self):
        args = ["--prompt-ids", "1,40,50,60", "--max-tokens", "10", "--ignore-eos", "--json",
                "--temperature", "0.8", "--seed", "3", "--top-k", "40", "--min-p", "0.05",
                "--repetition-penalty", "1.3", "--presence-penalty", "0.5",
                "--frequency-penalty", "0.2", "--min-tokens", "4", "--logprobs", "3"]
        stream = json.loads(self.run_example(*args).stdout)
        unary = json.loads(self.run_example(*args, "--unary").stdout)
        self.assertEqual(stream["token_ids"], unary["token_ids"])
        self.assertEqual(len(stream["logprobs"]), 10)
        for token, entry in zip(stream["token_ids"], stream["logprobs"]):
            self.assertEqual(entry["token_id"], token)
            self.assertLessEqual(entry["logprob"], 0.0)
            tops = [t["logprob"] for t in entry["top"]]
            self.assertEqual(len(tops), 3)
            self.assertEqual(tops, sorted(tops, reverse=True))
        self.assertEqual(stream["logprobs"], unary["logprobs"])

    def test_logprobs_above_twenty_are_refused(self):
        result = self.run_example("--prompt-ids", "1,2", "--logprobs", "21", expect_ok=False)
        self.assertIn("INVALID_ARGUMENT", result.stderr)
        self.assertIn("sampling.logprobs must be in [0, 20], got 21", result.stderr)

    def test_target_list_fails_over_past_a_dead_replica(self):
        dead, dead2 = dead_target(), dead_target()
        args = ["--prompt-ids", "1,2", "--max-tokens", "4", "--ignore-eos", "--json"]
        # The first call starts at the first target: the dead one.
        for mode in ([], ["--unary"]):
            out = json.loads(self.run_example("--target", f"{dead},{self.target}", *args, *mode).stdout)
            self.assertEqual(len(out["token_ids"]), 4)
            self.assertEqual(out["target"], self.target)
        nobody = self.run_example("--target", f"{dead},{dead2}", *args, expect_ok=False)
        self.assertEqual(nobody.returncode, 1)
        self.assertIn("error: UNAVAILABLE", nobody.stderr)
        bad = self.run_example("--target", f"{self.target},", *args, expect_ok=False)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("no empty entry", bad.stderr)
        # The C++ CLI takes the same list.
        cli = subprocess.run([os.environ["KVSERVE_CLI"], f"--target={dead},{self.target}", "generate",
                              "--prompt-ids=1,2", "--max-tokens=3", "--ignore-eos", "--json"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(len(json.loads(cli.stdout)["token_ids"]), 3)

    def test_invalid_argument(self):
        result = self.run_example("--prompt-ids", "1,2", "--max-tokens", "0", expect_ok=False)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("INVALID_ARGUMENT", result.stderr)
        self.assertIn("stopping.max_new_tokens", result.stderr)


def dead_target():
    """A loopback HOST:PORT with nothing listening (a replica that is down)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def start_server(*flags):
    """A kvserve process on a free port; returns (process, target)."""
    server = subprocess.Popen(
        [os.environ["KVSERVE_BIN"], "--port=0", "--http_port=-1", "--metrics_port=-1", "--host=127.0.0.1", *flags],
        stderr=subprocess.PIPE, text=True)
    for line in server.stderr:
        match = re.search(r"serving .* on [0-9.]+:(\d+)", line)
        if match:
            return server, f"127.0.0.1:{match.group(1)}"
    raise RuntimeError("kvserve exited before serving")


class ChatClientTest(unittest.TestCase):
    """client/python/chat.py and `kvserve-cli chat` against the tiny Qwen2
    fixture served with a ChatML template given by --chat_template; the
    rendered prompt is checked against Python jinja2."""

    @classmethod
    def setUpClass(cls):
        data = os.environ["KVSERVE_TEST_DATA_DIR"]
        cls.template_path = os.path.join(data, "chat", "chatml_strict.jinja")
        cls.server, cls.target = start_server(
            f"--model={os.path.join(data, 'tiny-qwen2')}", f"--chat_template={cls.template_path}")

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(timeout=30)

    def chat(self, *args, stdin=None, expect_ok=True):
        result = subprocess.run(
            [sys.executable, os.environ["KVSERVE_PY_CHAT"], "--target", self.target, *args],
            input=stdin, capture_output=True, text=True, timeout=120)
        if expect_ok:
            self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def test_prompt_is_what_jinja2_renders(self):
        import jinja2
        from jinja2.sandbox import ImmutableSandboxedEnvironment
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        with open(self.template_path) as f:
            template = env.from_string(f.read())
        expected = template.render(
            messages=[{"role": "system", "content": "Be brief. ✓"},
                      {"role": "user", "content": "Grüße, 世界"}],
            add_generation_prompt=True)
        out = json.loads(self.chat("--system", "Be brief. ✓", "--message", "Grüße, 世界",
                                   "--show-prompt", "--json").stdout)
        self.assertEqual(out["text"], expected)
        self.assertEqual(out["token_ids"][0], 998)  # <|im_start|>

    def test_one_shot_and_multi_turn(self):
        one = json.loads(self.chat("--message", "Hello", "--max-tokens", "8", "--json").stdout)
        self.assertIn(one["finish_reason"], {"FINISH_REASON_LENGTH", "FINISH_REASON_EOS",
                                             "FINISH_REASON_STOP"})
        self.assertLessEqual(one["completion_tokens"], 8)
        lines = self.chat("--max-tokens", "4", "--json", stdin="Hello\nAnd again\n").stdout
        turns = [json.loads(line) for line in lines.splitlines()]
        self.assertEqual(len(turns), 2)
        # The second turn's prompt holds the first turn and its answer.
        self.assertGreater(turns[1]["prompt_tokens"], turns[0]["prompt_tokens"] + 4)
        self.assertEqual(turns[0]["text"], one["text"][:len(turns[0]["text"])])

    def test_template_error_is_invalid_argument_with_its_message(self):
        import grpc
        sys.path.insert(0, os.path.dirname(os.environ["KVSERVE_PY_CHAT"]))
        from chat import Chat
        from kvserve.v1 import inference_pb2, inference_pb2_grpc
        with grpc.insecure_channel(self.target) as channel:
            chat = Chat(inference_pb2_grpc.InferenceStub(channel), max_tokens=4)
            chat.history.append(inference_pb2.ChatMessage(role="robot", content="beep"))
            with self.assertRaises(grpc.RpcError) as caught:
                list(chat.send("Hi"))
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("Unknown role: robot", caught.exception.details())
        self.assertEqual(len(chat.history), 1)  # the failed turn is not kept

    def test_cli_chat_transcript(self):
        result = subprocess.run(
            [os.environ["KVSERVE_CLI"], "--target", self.target, "chat", "--max-tokens", "4"],
            input="Hello\n/reset\nBye\n", capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.count("you> "), 2, result.stdout)
        self.assertEqual(result.stdout.count("assistant> "), 2, result.stdout)
        self.assertIn("(conversation reset)", result.stdout)
        self.assertIn("tokens/s", result.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
