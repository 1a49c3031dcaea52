#!/usr/bin/env python3
"""The OpenAI-compatible HTTP API of a real kvserve process, over real HTTP on
loopback, with only the standard library: completions and chat, streaming
(server-sent events) and not, n > 1, logprobs, stop strings, every error
case (wrong model, wrong types, limits, queue full, draining), a client that
disconnects mid-stream (its KV blocks return to 0), body and header size
limits, and an idle connection closed after the limit.

Run by ctest with KVSERVE_BIN (the server) and KVSERVE_TEST_DATA_DIR."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time
import unittest

MODEL = "test-model"
DEADLINE_S = 60  # generous: CI runs this on a loaded 2-core machine


def start_server(*flags):
    """Starts kvserve on the built-in model; returns (process, http port, metrics port)."""
    process = subprocess.Popen(
        [os.environ["KVSERVE_BIN"], "--port=0", "--metrics_port=0", "--http_port=0",
         "--host=127.0.0.1", "--http_host=127.0.0.1", f"--served_model_name={MODEL}",
         *flags],
        stderr=subprocess.PIPE, text=True)
    http_port = metrics_port = None
    for line in process.stderr:
        match = re.search(r"HTTP API on http://[0-9.]+:(\d+)", line)
        if match:
            http_port = int(match.group(1))
        match = re.search(r"metrics on http://[0-9.]+:(\d+)/metrics", line)
        if match:
            metrics_port = int(match.group(1))
        if re.search(r"serving .* on [0-9.]+:\d+", line):
            break
    else:
        raise RuntimeError("kvserve exited before serving")
    # Keep draining stderr so the server never blocks on a full pipe.
    import threading
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
    return process, http_port, metrics_port


def stop_server(process):
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=DEADLINE_S)


class Client:
    def __init__(self, port):
        self.port = port

    def request(self, method, path, body=None, headers=None):
        """Returns (status, headers, parsed JSON or text)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE_S)
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        conn.request(method, path, body=data,
                     headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        raw = response.read().decode()
        conn.close()
        try:
            return response.status, response, json.loads(raw)
        except json.JSONDecodeError:
            return response.status, response, raw

    def post(self, path, body):
        return self.request("POST", path, body)

    def stream(self, path, body):
        """POSTs with stream: true; returns (status, [parsed chunks], saw [DONE])."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE_S)
        conn.request("POST", path, body=json.dumps({**body, "stream": True}),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        if response.status != 200:
            return response.status, json.loads(response.read()), False
        self_test = response.getheader("Content-Type")
        assert self_test == "text/event-stream", self_test
        chunks, done = [], False
        for line in response:
            line = line.decode().rstrip("\n")
            if not line:
                continue
            assert line.startswith("data: "), line
            payload = line[len("data: "):]
            if payload == "[DONE]":
                done = True
                break
            chunks.append(json.loads(payload))
        conn.close()
        return 200, chunks, done


def scrape(metrics_port, name):
    conn = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=DEADLINE_S)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def wait_for(predicate, what):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class HttpApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        template = os.path.join(os.environ["KVSERVE_TEST_DATA_DIR"], "chat", "chatml_strict.jinja")
        cls.server, cls.port, cls.metrics_port = start_server(
            f"--chat_template={template}", "--http_max_body_bytes=65536",
            "--http_max_header_bytes=2048", "--http_idle_timeout_s=1")
        cls.client = Client(cls.port)

    @classmethod
    def tearDownClass(cls):
        code = stop_server(cls.server)
        if code != 0:
            raise RuntimeError(f"kvserve exited with {code} on SIGTERM")

    def completion(self, **fields):
        return self.client.post("/v1/completions", {"model": MODEL, **fields})

    def assert_error(self, result, status, param, type_="invalid_request_error"):
        got_status, _, body = result
        self.assertEqual(got_status, status, body)
        self.assertEqual(body["error"]["type"], type_, body)
        self.assertEqual(body["error"]["param"], param, body)
        self.assertTrue(body["error"]["message"], body)
        return body["error"]

    # --- endpoints -----------------------------------------------------------

    def test_health_and_models(self):
        status, _, body = self.client.request("GET", "/health")
        self.assertEqual(status, 200)
        status, _, body = self.client.request("GET", "/v1/models")
        self.assertEqual(status, 200)
        self.assertEqual(body["object"], "list")
        self.assertEqual([m["id"] for m in body["data"]], [MODEL])
        self.assertEqual(body["data"][0]["object"], "model")

    def test_completion_non_streaming(self):
        status, _, body = self.completion(prompt="Hello", max_tokens=8, ignore_eos=True)
        self.assertEqual(status, 200, body)
        self.assertEqual(body["object"], "text_completion")
        self.assertEqual(body["model"], MODEL)
        self.assertTrue(body["id"].startswith("cmpl-"))
        self.assertIsInstance(body["created"], int)
        self.assertEqual(len(body["choices"]), 1)
        choice = body["choices"][0]
        self.assertEqual(choice["index"], 0)
        self.assertEqual(choice["finish_reason"], "length")
        self.assertIsInstance(choice["text"], str)
        self.assertEqual(body["usage"], {"prompt_tokens": 6, "completion_tokens": 8,
                                         "total_tokens": 14})  # BOS + 5 bytes

    def test_streaming_matches_non_streaming(self):
        request = {"prompt": [1, 40, 50, 60], "max_tokens": 12, "ignore_eos": True,
                   "temperature": 0}
        status, _, whole = self.completion(**request)
        self.assertEqual(status, 200, whole)
        status, chunks, done = self.client.stream(
            "/v1/completions", {"model": MODEL, **request,
                                "stream_options": {"include_usage": True}})
        self.assertEqual(status, 200)
        self.assertTrue(done)
        usage = chunks[-1]
        self.assertEqual(usage["choices"], [])
        self.assertEqual(usage["usage"]["completion_tokens"], 12)
        self.assertEqual(usage["usage"]["prompt_tokens"], 4)
        text = "".join(c["choices"][0]["text"] for c in chunks[:-1])
        self.assertEqual(text, whole["choices"][0]["text"])
        self.assertEqual(chunks[-2]["choices"][0]["finish_reason"], "length")
        for chunk in chunks[:-1]:
            self.assertIsNone(chunk["usage"])
            self.assertEqual(chunk["object"], "text_completion")

    def test_chat_non_streaming_and_streaming(self):
        request = {"model": MODEL, "max_tokens": 6, "ignore_eos": True, "temperature": 0,
                   "messages": [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": [{"type": "text", "text": "Hi"}]}]}
        status, _, body = self.client.post("/v1/chat/completions", request)
        self.assertEqual(status, 200, body)
        self.assertEqual(body["object"], "chat.completion")
        self.assertTrue(body["id"].startswith("chatcmpl-"))
        message = body["choices"][0]["message"]
        self.assertEqual(message["role"], "assistant")
        self.assertEqual(body["choices"][0]["finish_reason"], "length")
        self.assertEqual(body["usage"]["completion_tokens"], 6)

        status, chunks, done = self.client.stream("/v1/chat/completions", request)
        self.assertEqual(status, 200)
        self.assertTrue(done)
        self.assertEqual(chunks[0]["object"], "chat.completion.chunk")
        self.assertEqual(chunks[0]["choices"][0]["delta"]["role"], "assistant")
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
        self.assertEqual(text, message["content"])
        self.assertEqual(chunks[-1]["choices"][0]["finish_reason"], "length")

    def test_n_gives_independent_choices_and_seed_repeats(self):
        request = {"prompt": "Hello", "max_tokens": 16, "ignore_eos": True, "n": 3,
                   "temperature": 1.0, "seed": 7}
        status, _, first = self.completion(**request)
        self.assertEqual(status, 200, first)
        self.assertEqual([c["index"] for c in first["choices"]], [0, 1, 2])
        texts = [c["text"] for c in first["choices"]]
        self.assertGreater(len(set(texts)), 1, "three sampled choices came out identical")
        self.assertEqual(first["usage"]["completion_tokens"], 48)
        self.assertEqual(first["usage"]["prompt_tokens"], 6)
        status, _, again = self.completion(**request)
        self.assertEqual([c["text"] for c in again["choices"]], texts)

        status, chunks, done = self.client.stream("/v1/completions", {"model": MODEL, **request})
        self.assertTrue(done)
        streamed = ["", "", ""]
        for chunk in chunks:
            for choice in chunk["choices"]:
                streamed[choice["index"]] += choice["text"]
        self.assertEqual(streamed, texts)

    def test_completion_logprobs(self):
        status, _, body = self.completion(prompt="Hello", max_tokens=5, ignore_eos=True,
                                          logprobs=2)
        self.assertEqual(status, 200, body)
        logprobs = body["choices"][0]["logprobs"]
        self.assertEqual(len(logprobs["tokens"]), 5)
        self.assertEqual(len(logprobs["token_logprobs"]), 5)
        self.assertEqual(len(logprobs["text_offset"]), 5)
        for lp, top in zip(logprobs["token_logprobs"], logprobs["top_logprobs"]):
            self.assertLessEqual(lp, 0.0)
            self.assertLessEqual(len(top), 2)
            self.assertGreaterEqual(len(top), 1)

    def test_chat_logprobs(self):
        status, _, body = self.client.post("/v1/chat/completions", {
            "model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
            "ignore_eos": True, "logprobs": True, "top_logprobs": 3,
            # Greedy: sampled at the HTTP default of temperature 1, the end of
            # sequence (kept by ignore_eos) came up now and then, and its bytes
            # "</s>" are in logprobs but not in the content (special tokens).
            "temperature": 0})
        self.assertEqual(status, 200, body)
        content = body["choices"][0]["logprobs"]["content"]
        self.assertEqual(len(content), 4)
        # The tokens' raw bytes join into the content, partial characters included.
        joined = bytes(b for item in content for b in item["bytes"])
        self.assertEqual(joined.decode(errors="replace"),
                         body["choices"][0]["message"]["content"])
        for item in content:
            self.assertEqual(set(item), {"token", "logprob", "bytes", "top_logprobs"})
            self.assertEqual(len(item["top_logprobs"]), 3)
            self.assertTrue(all(0 <= b <= 255 for b in item["bytes"]), item)

    def test_stop_string_cuts_the_text(self):
        request = {"prompt": [1, 40, 50, 60], "max_tokens": 40, "ignore_eos": True,
                   "temperature": 0}
        status, _, whole = self.completion(**request)
        text = whole["choices"][0]["text"]
        # The built-in model's text is noise: pick two ASCII letters or digits.
        stop = next((text[i:i + 2] for i in range(1, len(text) - 2)
                     if text[i:i + 2].isascii() and text[i:i + 2].isalnum()
                     and text.find(text[i:i + 2]) == i), None)
        self.assertIsNotNone(stop, f"no usable stop string in {text!r}")
        status, _, cut = self.completion(**request, stop=[stop, "never-seen-stop"])
        self.assertEqual(status, 200, cut)
        self.assertEqual(cut["choices"][0]["text"], text[:text.find(stop)])
        self.assertEqual(cut["choices"][0]["finish_reason"], "stop")

    def test_unknown_fields_are_ignored(self):
        status, _, body = self.completion(prompt="Hi", max_tokens=2, user="someone",
                                          some_future_field={"x": 1})
        self.assertEqual(status, 200, body)

    def test_parameters_that_do_not_change_the_output_are_accepted(self):
        """OpenAI's bookkeeping fields, empty logit_bias and suffix, best_of
        equal to n, modalities ["text"], a developer message."""
        status, _, body = self.completion(
            prompt="Hi", max_tokens=2, user="u", metadata={"k": "v"}, store=False,
            service_tier="auto", logit_bias={}, suffix="", best_of=2, n=2)
        self.assertEqual(status, 200, body)
        status, _, body = self.client.post("/v1/chat/completions", {
            "model": MODEL, "max_tokens": 2, "modalities": ["text"], "prediction": None,
            "messages": [{"role": "developer", "content": "Be brief."},
                         {"role": "user", "content": "Hi"}]})
        self.assertEqual(status, 200, body)

    def test_unsupported_parameters_are_400_naming_them(self):
        chat = "/v1/chat/completions"
        user = [{"role": "user", "content": "Hi"}]
        cases = [
            ("/v1/completions", {"prompt": "Hi", "suffix": "end"}, "suffix"),
            ("/v1/completions", {"prompt": "Hi", "best_of": 3}, "best_of"),
            ("/v1/completions", {"prompt": "Hi", "best_of": 3, "n": 2}, "best_of"),
            ("/v1/completions", {"prompt": "Hi", "logit_bias": {"50": 100}}, "logit_bias"),
            ("/v1/completions", {"prompt": "Hi", "echo": True, "logprobs": 1}, "echo"),
            (chat, {"messages": user, "logit_bias": {"50": -100}}, "logit_bias"),
            (chat, {"messages": user, "functions": [{"name": "f"}]}, "functions"),
            (chat, {"messages": user, "function_call": "auto"}, "function_call"),
            (chat, {"messages": user, "audio": {"voice": "alloy"}}, "audio"),
            (chat, {"messages": user, "modalities": ["text", "audio"]}, "modalities"),
            (chat, {"messages": user, "web_search_options": {}}, "web_search_options"),
            (chat, {"messages": user, "reasoning_effort": "low"}, "reasoning_effort"),
            (chat, {"messages": user, "verbosity": "low"}, "verbosity"),
        ]
        for path, body, param in cases:
            with self.subTest(param=param, body=body):
                error = self.assert_error(self.client.post(path, {"model": MODEL, **body}), 400,
                                          param)
                self.assertEqual(error["code"], "unsupported_parameter")
                self.assertTrue(error["message"].startswith(param), error)

    def test_echo_puts_the_prompt_before_the_completion(self):
        request = {"prompt": "Hello", "max_tokens": 6, "ignore_eos": True, "temperature": 0}
        status, _, plain = self.completion(**request)
        self.assertEqual(status, 200, plain)
        status, _, echoed = self.completion(**request, echo=True, n=2)
        self.assertEqual(status, 200, echoed)
        for choice in echoed["choices"]:
            self.assertEqual(choice["text"], "Hello" + plain["choices"][0]["text"])
        self.assertEqual(echoed["usage"], {**plain["usage"], "completion_tokens": 12,
                                           "total_tokens": plain["usage"]["prompt_tokens"] + 12})
        status, chunks, done = self.client.stream("/v1/completions",
                                                  {"model": MODEL, **request, "echo": True})
        self.assertTrue(done)
        self.assertTrue(chunks[0]["choices"][0]["text"].startswith("Hello"), chunks[0])
        self.assertEqual("".join(c["choices"][0]["text"] for c in chunks),
                         "Hello" + plain["choices"][0]["text"])
        # Token ids are echoed as the tokenizer spells them (the byte tokenizer: bytes).
        status, _, ids = self.completion(prompt=[1, 72, 107], max_tokens=1, echo=True)
        self.assertEqual(status, 200, ids)
        self.assertTrue(ids["choices"][0]["text"].startswith("<s>Eh"), ids)

    def test_without_temperature_choices_are_sampled(self):
        """OpenAI's default temperature is 1: n choices differ (the built-in
        model has no sampling defaults of its own); temperature 0 is greedy."""
        request = {"prompt": "Hello", "max_tokens": 16, "ignore_eos": True, "n": 4}
        status, _, sampled = self.completion(**request)
        self.assertEqual(status, 200, sampled)
        self.assertGreater(len({c["text"] for c in sampled["choices"]}), 1, sampled)
        status, _, greedy = self.completion(**request, temperature=0)
        self.assertEqual(len({c["text"] for c in greedy["choices"]}), 1, greedy)

    def test_model_retrieve(self):
        status, _, body = self.client.request("GET", f"/v1/models/{MODEL}")
        self.assertEqual(status, 200, body)
        self.assertEqual(body["id"], MODEL)
        self.assertEqual(body["object"], "model")
        _, _, listed = self.client.request("GET", "/v1/models")
        self.assertEqual(body, listed["data"][0])
        status, _, body = self.client.request("GET", "/v1/models/test%2Dmodel")  # %2D: '-'
        self.assertEqual(status, 200, body)
        error = self.assert_error(self.client.request("GET", "/v1/models/gpt-4"), 404, "model")
        self.assertEqual(error["code"], "model_not_found")
        self.assertIn("gpt-4", error["message"])
        status, response, body = self.client.request("DELETE", f"/v1/models/{MODEL}")
        self.assertEqual(status, 405, body)
        self.assertEqual(response.getheader("Allow"), "GET, OPTIONS")

    def test_response_ids_are_random(self):
        ids = set()
        for path, body, prefix in [
                ("/v1/completions", {"prompt": "Hi", "max_tokens": 1}, "cmpl-"),
                ("/v1/chat/completions",
                 {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}, "chatcmpl-")]:
            for _ in range(3):
                status, _, reply = self.client.post(path, {"model": MODEL, **body})
                self.assertEqual(status, 200, reply)
                self.assertRegex(reply["id"], f"^{prefix}[0-9A-Za-z]{{29}}$")
                ids.add(reply["id"])
        self.assertEqual(len(ids), 6)

    # --- errors --------------------------------------------------------------

    def test_wrong_model_is_404(self):
        error = self.assert_error(self.completion(prompt="Hi", model="gpt-4"), 404, "model")
        self.assertEqual(error["code"], "model_not_found")

    def test_wrong_types_are_400_naming_the_field(self):
        cases = [({"temperature": "hot"}, "temperature"), ({"max_tokens": 1.5}, "max_tokens"),
                 ({"n": "2"}, "n"), ({"stop": 3}, "stop"), ({"seed": "x"}, "seed"),
                 ({"stream": "yes"}, "stream"), ({"top_k": 0.5}, "top_k"),
                 ({"ignore_eos": 1}, "ignore_eos"), ({"logprobs": True}, "logprobs"),
                 ({"prompt": {"a": 1}}, "prompt"), ({"prompt": [1, "x"]}, "prompt")]
        for fields, param in cases:
            with self.subTest(fields=fields):
                body = {"prompt": "Hi", **fields}
                self.assert_error(self.completion(**body), 400, param)
        self.assert_error(self.client.post("/v1/chat/completions",
                                           {"messages": "hello"}), 400, "messages")
        self.assert_error(self.client.post("/v1/chat/completions",
                                           {"messages": [{"role": "user", "content": 5}]}),
                          400, "messages")

    def test_limits_are_400_naming_the_field_and_the_limit(self):
        cases = [({"max_tokens": 100000}, "max_tokens", "2048"),
                 ({"max_completion_tokens": 100000}, "max_completion_tokens", "2048"),
                 ({"n": 0}, "n", "[1, 64]"), ({"n": 65}, "n", "[1, 64]"),
                 ({"temperature": -1}, "temperature", ">= 0"),
                 ({"top_p": 0}, "top_p", "(0, 1]"), ({"min_p": 2}, "min_p", "[0, 1]"),
                 ({"logprobs": 99}, "logprobs", "20"),
                 ({"presence_penalty": 5}, "presence_penalty", "2"),
                 ({"frequency_penalty": -5}, "frequency_penalty", "2"),
                 ({"repetition_penalty": 0}, "repetition_penalty", "> 0"),
                 ({"min_tokens": 50, "max_tokens": 10}, "min_tokens", "10"),
                 ({"stop": [""]}, "stop", "256"), ({"seed": -1}, "seed", "got -1"),
                 ({"prompt": [1, 99999]}, "prompt", "320"), ({"prompt": ""}, "prompt", "empty")]
        for fields, param, limit in cases:
            with self.subTest(fields=fields):
                error = self.assert_error(self.completion(**{"prompt": "Hi", **fields}), 400,
                                          param)
                self.assertIn(limit, error["message"])
        error = self.assert_error(self.client.post("/v1/chat/completions", {
            "messages": [{"role": "user", "content": "Hi"}], "logprobs": True,
            "top_logprobs": 50}), 400, "top_logprobs")
        self.assertIn("20", error["message"])

    def test_errors_doc_rows(self):
        """docs/errors.md's HTTP rows not covered by the tests above."""
        chat = "/v1/chat/completions"
        user = [{"role": "user", "content": "Hi"}]
        cases = [
            ("several_prompts", "/v1/completions", {"prompt": ["a", "b"]}, "prompt",
             "send one request per prompt"),
            ("max_tokens_zero", "/v1/completions", {"prompt": "Hi", "max_tokens": 0},
             "max_tokens", "[1, "),
            ("too_many_stop_strings", "/v1/completions", {"prompt": "Hi", "stop": ["x"] * 17},
             "stop", "at most 16"),
            ("stream_options_not_an_object", "/v1/completions",
             {"prompt": "Hi", "stream_options": 1}, "stream_options", "an object"),
            ("chat_no_messages", chat, {"messages": []}, "messages", "at least one"),
            ("chat_part_not_text", chat,
             {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
             "messages", "only text parts"),
            ("chat_unknown_role", chat,
             {"messages": [{"role": "user", "content": "x"}, {"role": "robot", "content": "x"}]},
             "messages", 'messages[1].role must be one of system, user, assistant, tool'),
            # chatml_strict.jinja knows no tool messages.
            ("chat_template_refuses", chat, {"messages": [{"role": "tool", "content": "x"}]},
             "messages", "Unknown role: tool"),
            ("top_logprobs_without_logprobs", chat, {"messages": user, "top_logprobs": 2},
             "top_logprobs", "needs logprobs: true"),
        ]
        for row, path, body, param, message in cases:
            with self.subTest(row=row):
                error = self.assert_error(self.client.post(path, {"model": MODEL, **body}), 400,
                                          param)
                self.assertIn(message, error["message"])
        # Invalid UTF-8 inside a JSON string: the body is not valid JSON.
        with self.subTest(row="invalid_utf8"):
            self.assert_error(self.client.post("/v1/completions", b'{"prompt": "\xc3\x28"}'),
                              400, "body")
        # A request line that is not HTTP/1.1: 400 and the connection closed.
        with self.subTest(row="malformed_http"):
            with socket.create_connection(("127.0.0.1", self.port), timeout=DEADLINE_S) as s:
                s.sendall(b"NOT HTTP\r\n\r\n")
                reply = b""
                while chunk := s.recv(4096):
                    reply += chunk
            self.assertTrue(reply.startswith(b"HTTP/1.1 400"), reply)
            self.assertIn(b"malformed HTTP request", reply)

    def test_malformed_bodies_and_paths(self):
        self.assert_error(self.client.post("/v1/completions", "{not json"), 400, "body")
        self.assert_error(self.client.post("/v1/completions", "[1, 2]"), 400, "body")
        self.assert_error(self.client.post("/v1/completions", {"max_tokens": 3}), 400, "prompt")
        status, _, body = self.client.request("GET", "/v1/nothing")
        self.assertEqual(status, 404, body)
        status, _, body = self.client.request("GET", "/v1/completions")
        self.assertEqual(status, 405, body)

    def test_body_and_header_size_limits(self):
        status, _, body = self.client.post("/v1/completions",
                                           json.dumps({"prompt": "x" * 70000}))
        self.assertEqual(status, 413, body)
        self.assertIn("65536", body["error"]["message"])
        status, _, body = self.client.request("GET", "/health", headers={"X-Big": "y" * 3000})
        self.assertEqual(status, 431, body)
        self.assertIn("2048", body["error"]["message"])

    def test_idle_connection_is_closed(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=DEADLINE_S) as s:
            self.assertEqual(s.recv(1), b"")  # the server closed it (after 1 s idle)
        # A connection that started a request and stalled is closed too.
        with socket.create_connection(("127.0.0.1", self.port), timeout=DEADLINE_S) as s:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            self.assertEqual(s.recv(1), b"")

    def test_expect_100_continue(self):
        body = json.dumps({"prompt": "Hi", "max_tokens": 2}).encode()
        with socket.create_connection(("127.0.0.1", self.port), timeout=DEADLINE_S) as s:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body))
            self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 100 Continue\r\n\r\n"))
            s.sendall(body)
            reply = b""
            while b"total_tokens" not in reply:
                data = s.recv(4096)
                self.assertTrue(data, reply)
                reply += data
            self.assertTrue(reply.startswith(b"HTTP/1.1 200 OK"), reply)

    def test_keep_alive_serves_several_requests_on_one_connection(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE_S)
        for _ in range(3):
            conn.request("POST", "/v1/completions",
                         body=json.dumps({"prompt": "Hi", "max_tokens": 3, "stream": True}))
            response = conn.getresponse()
            self.assertEqual(response.status, 200)
            self.assertTrue(response.read().decode().endswith("data: [DONE]\n\n"))
            conn.request("GET", "/health")
            self.assertEqual(conn.getresponse().read(), b'{"status":"ok"}')
        conn.close()

    def test_disconnect_mid_stream_frees_kv_blocks(self):
        cancelled = 'kvserve_requests_total{api="http",outcome="cancelled"}'
        before = scrape(self.metrics_port, cancelled)
        body = json.dumps({"prompt": "Hello", "max_tokens": 2000, "ignore_eos": True,
                           "stream": True})
        with socket.create_connection(("127.0.0.1", self.port), timeout=DEADLINE_S) as s:
            s.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                       f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
            received = b""
            while received.count(b"data: ") < 3:
                data = s.recv(4096)
                self.assertTrue(data, "the stream ended early")
                received += data
            self.assertIn(b"text/event-stream", received)
            self.assertGreater(scrape(self.metrics_port, "kvserve_kv_blocks_used"), 0)
        wait_for(lambda: scrape(self.metrics_port, "kvserve_kv_blocks_used") == 0,
                 "kvserve_kv_blocks_used to return to 0")
        wait_for(lambda: scrape(self.metrics_port, cancelled) == before + 1,
                 "the cancelled outcome to be counted")

    def test_outcomes_are_counted_by_api(self):
        name = 'kvserve_requests_total{api="http",outcome="length"}'
        before = scrape(self.metrics_port, name)
        self.completion(prompt="Hi", max_tokens=2, ignore_eos=True)
        self.assertEqual(scrape(self.metrics_port, name), before + 1)
        self.assertIsNotNone(scrape(self.metrics_port,
                                    'kvserve_requests_total{api="grpc",outcome="length"}'))


class ResponseIdsAcrossRestartsTest(unittest.TestCase):
    """Ids were "cmpl-1", "cmpl-2", ... again after every restart."""

    def test_two_runs_never_repeat_an_id(self):
        runs = []
        for _ in range(2):
            server, port, _ = start_server()
            try:
                client = Client(port)
                ids = []
                for _ in range(5):
                    status, _, reply = client.post("/v1/completions",
                                                   {"prompt": "Hi", "max_tokens": 1})
                    self.assertEqual(status, 200, reply)
                    self.assertRegex(reply["id"], "^cmpl-[0-9A-Za-z]{29}$")
                    ids.append(reply["id"])
                runs.append(ids)
            finally:
                self.assertEqual(stop_server(server), 0)
        self.assertEqual(len(set(runs[0]) | set(runs[1])), 10, runs)


class QueueFullAndDrainingTest(unittest.TestCase):
    """One running sequence and no queue: a second request is refused."""

    def test_queue_full_is_429_and_draining_is_503(self):
        server, port, metrics_port = start_server("--max_num_seqs=1", "--max_queued_requests=0",
                                                  "--shutdown_grace_s=30")
        client = Client(port)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE_S)
            conn.request("POST", "/v1/completions", body=json.dumps({
                "prompt": "Hello", "max_tokens": 2000, "ignore_eos": True, "stream": True}))
            holder = conn.getresponse()
            self.assertEqual(holder.status, 200)
            self.assertTrue(holder.readline().startswith(b"data: "))

            status, response, body = client.post("/v1/completions", {"prompt": "Hi"})
            self.assertEqual(status, 429, body)
            self.assertEqual(body["error"]["type"], "rate_limit_error")
            self.assertEqual(response.getheader("Retry-After"), "1")

            # This server has no chat template: chat is a 400 naming why.
            status, _, body = client.post("/v1/chat/completions",
                                          {"messages": [{"role": "user", "content": "Hi"}]})
            self.assertEqual(status, 400, body)
            self.assertIn("chat is not available", body["error"]["message"])

            # Draining: the held stream keeps the server in its grace period.
            server.send_signal(signal.SIGTERM)
            wait_for(lambda: client.request("GET", "/health")[0] == 503, "/health to say 503")
            status, _, body = client.post("/v1/completions", {"prompt": "Hi"})
            self.assertEqual(status, 503, body)
            self.assertEqual(body["error"]["type"], "service_unavailable")
            conn.close()  # the stream's cancellation ends the grace period early
            self.assertEqual(server.wait(timeout=DEADLINE_S), 0)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()


if __name__ == "__main__":
    unittest.main(verbosity=2)
