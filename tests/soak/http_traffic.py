"""The soak's HTTP requests to the OpenAI-compatible API (standard library
only), each ending in exactly one terminal status in the ledger:
completions and chat completions, streamed (server-sent events) and not, a
client that closes its connection mid-stream, and malformed requests
(400/404 with an OpenAI error body)."""
import http.client
import json

from grpc_traffic import LONG, prompt

TIMEOUT_S = 300
FINISH_OUTCOME = {"length": "length", "stop": "stop"}  # "stop": EOS or a stop string
ERROR_OUTCOME = {400: "invalid_argument", 404: "not_found", 429: "resource_exhausted",
                 503: "unavailable"}


class HttpTraffic:
    def __init__(self, port, model, ledger):
        self.port = port
        self.model = model
        self.ledger = ledger

    def scenarios(self):
        return {"http_completion": (8, self.completion), "http_chat": (6, self.chat),
                "http_completion_stream": (8, self.completion_stream),
                "http_chat_stream": (6, self.chat_stream),
                "http_disconnect": (4, self.disconnect), "http_malformed": (6, self.malformed)}

    def connect(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT_S)

    def post(self, conn, path, body):
        data = body if isinstance(body, str) else json.dumps(body)
        conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        return conn.getresponse()

    def completion_body(self, rng, **extra):
        return {"model": self.model, "prompt": prompt(rng), "max_tokens": rng.randint(4, 24),
                "temperature": rng.choice([0.0, 0.8]), **extra}

    def chat_body(self, rng, role="user", **extra):
        return {"model": self.model, "max_tokens": rng.randint(4, 24),
                "messages": [{"role": "system", "content": "Be brief."},
                             {"role": role, "content": prompt(rng)}], **extra}

    def end_error(self, request, status, body, expected):
        try:
            error = json.loads(body)["error"]
            if not error.get("message"):
                request.violation(f"HTTP {status} without an error message")
        except (ValueError, KeyError, TypeError):
            request.violation(f"HTTP {status} without an OpenAI error body: {body[:200]!r}")
        request.end(f"HTTP {status}", ERROR_OUTCOME.get(status, "error"), expected=expected)

    def unary(self, rng, scenario, path, body):
        request = self.ledger.begin(scenario, "http")
        conn = self.connect()
        try:
            response = self.post(conn, path, body)
            text = response.read().decode()
        finally:
            conn.close()
        if response.status != 200:
            self.end_error(request, response.status, text, expected=False)
            return
        finish = json.loads(text)["choices"][0]["finish_reason"]
        request.end("HTTP 200", FINISH_OUTCOME.get(finish, "error"), expected=finish in FINISH_OUTCOME)

    def completion(self, rng):
        self.unary(rng, "http_completion", "/v1/completions", self.completion_body(rng))

    def chat(self, rng):
        self.unary(rng, "http_chat", "/v1/chat/completions", self.chat_body(rng))

    def streamed(self, rng, scenario, path, body, close_after=None):
        """Reads server-sent events to `data: [DONE]`: exactly one chunk has a
        finish reason, nothing follows [DONE]. With close_after, closes the
        connection after that many chunks instead."""
        request = self.ledger.begin(scenario, "http")
        conn = self.connect()
        try:
            response = self.post(conn, path, {**body, "stream": True,
                                              "stream_options": {"include_usage": True}})
            if response.status != 200:
                self.end_error(request, response.status, response.read().decode(), False)
                return
            finishes, done, chunks = [], False, 0
            while True:
                line = response.readline()
                if not line:
                    break
                line = line.decode().rstrip("\r\n")
                if not line.startswith("data: "):
                    continue
                if done:
                    request.violation("an event after [DONE]")
                if line == "data: [DONE]":
                    done = True
                    continue
                chunk = json.loads(line[len("data: "):])
                if "error" in chunk:
                    request.violation(f"an error event in a 200 stream: {chunk['error']}")
                chunks += 1
                finishes += [c["finish_reason"] for c in chunk.get("choices", [])
                             if c.get("finish_reason")]
                if close_after is not None and chunks == close_after and not finishes:
                    conn.sock.close()  # the client goes away mid-stream
                    request.end("disconnected", "cancelled")
                    return
        finally:
            conn.close()
        if not done or len(finishes) != 1:
            request.violation(f"stream ended with {len(finishes)} finish reasons, [DONE] {done}")
        request.end("HTTP 200", FINISH_OUTCOME.get(finishes[0] if finishes else None, "error"))

    def completion_stream(self, rng):
        self.streamed(rng, "http_completion_stream", "/v1/completions", self.completion_body(rng))

    def chat_stream(self, rng):
        self.streamed(rng, "http_chat_stream", "/v1/chat/completions", self.chat_body(rng))

    def disconnect(self, rng):
        body = self.completion_body(rng, max_tokens=LONG, ignore_eos=True)
        self.streamed(rng, "http_disconnect", "/v1/completions", body,
                      close_after=rng.randint(1, 3))

    def malformed(self, rng):
        """Each bad request must come back 400 (404 for an unknown model)."""
        request = self.ledger.begin("http_malformed", "http")
        kind = rng.randrange(6)
        path, expected_status = "/v1/completions", 400
        if kind == 0:
            body = '{"model": "' + self.model + '", "prompt": "unterminated'
        elif kind == 1:
            body = self.completion_body(rng, max_tokens=-1)
        elif kind == 2:
            body = self.completion_body(rng, temperature="hot")
        elif kind == 3:
            body = {**self.completion_body(rng), "model": "no-such-model"}
            expected_status = 404
        elif kind == 4:
            path, body = "/v1/chat/completions", self.chat_body(rng, role="robot")
        else:
            path, body = "/v1/chat/completions", self.chat_body(rng, top_p=7)
        conn = self.connect()
        try:
            response = self.post(conn, path, body)
            text = response.read().decode()
        finally:
            conn.close()
        if response.status == 200:
            request.end("HTTP 200", "length", expected=False)
        else:
            self.end_error(request, response.status, text,
                           expected=response.status == expected_status)
