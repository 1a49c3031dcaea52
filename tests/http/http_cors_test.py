#!/usr/bin/env python3
"""Browser access to the real kvserve binary's HTTP API (--http_cors_origins;
issue 27 item 8, docs/api.md "Browsers (CORS)"), with bearer tokens on:

- a preflight from an allowed origin is 204 with the Access-Control-* headers
  and needs no token (browsers send none on it), the same for every path;
- the request that follows still needs its token, and every answer to an
  allowed origin (JSON, SSE, errors, 401) carries Access-Control-Allow-Origin
  and Vary: Origin; another origin gets no Access-Control-Allow-Origin;
- without --http_cors_origins no answer carries CORS headers, and OPTIONS is
  204 with Allow (after authentication) instead of 405;
- a malformed --http_cors_origins stops the server at start-up, naming it.

Run by ctest with KVSERVE_BIN (and KVSERVE_TEST_DATA_DIR)."""
import http.client
import json
import os
import subprocess
import tempfile
import unittest

from http_api_test import DEADLINE_S, start_server, stop_server

ALLOWED = "http://localhost:3000"
OTHER = "https://evil.example"
TOKEN = "cors-test-token"


def request(port, method, path, headers=None, body=None):
    """Returns (status, {lower-case header: value}, body text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE_S)
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers=headers or {})
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, text


def preflight_headers(origin, method="POST", requested="authorization, content-type"):
    return {"Origin": origin, "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": requested}


class CorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        tokens = os.path.join(cls.tmp.name, "tokens")
        with open(tokens, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(tokens, 0o600)
        cls.server, cls.port, _ = start_server(
            f"--http_cors_origins={ALLOWED}, http://127.0.0.1:8080", f"--auth_token_file={tokens}")

    @classmethod
    def tearDownClass(cls):
        code = stop_server(cls.server)
        cls.tmp.cleanup()
        if code != 0:
            raise RuntimeError(f"kvserve exited with {code}")

    def test_preflight_needs_no_token_and_is_the_same_for_every_path(self):
        for path in ("/v1/chat/completions", "/v1/models", "/v1/no-such-path"):
            with self.subTest(path=path):
                status, headers, body = request(
                    self.port, "OPTIONS", path,
                    preflight_headers(ALLOWED, requested="authorization, content-type, "
                                                         "x-stainless-os"))
                self.assertEqual(status, 204, body)
                self.assertEqual(body, "")
                self.assertEqual(headers["access-control-allow-origin"], ALLOWED)
                self.assertEqual(headers["vary"], "Origin")
                self.assertEqual(headers["access-control-allow-methods"], "GET, POST, OPTIONS")
                allowed = [h.strip() for h in headers["access-control-allow-headers"].split(",")]
                self.assertLessEqual({"authorization", "content-type", "x-stainless-os"},
                                     set(allowed))
                self.assertEqual(headers["access-control-max-age"], "3600")
                self.assertNotIn("access-control-allow-credentials", headers)
                self.assertNotIn("www-authenticate", headers)

    def test_preflight_from_another_origin_allows_nothing(self):
        status, headers, _ = request(self.port, "OPTIONS", "/v1/chat/completions",
                                     preflight_headers(OTHER))
        self.assertEqual(status, 204)
        self.assertEqual(headers["vary"], "Origin")
        self.assertFalse([h for h in headers if h.startswith("access-control-")], headers)

    def test_requests_still_need_the_token_and_carry_the_origin(self):
        body = {"prompt": "Hi", "max_tokens": 2}
        # No token: 401, readable by the page (else it could not tell why).
        status, headers, text = request(self.port, "POST", "/v1/completions",
                                        {"Origin": ALLOWED}, body)
        self.assertEqual(status, 401, text)
        self.assertEqual(headers["access-control-allow-origin"], ALLOWED)
        auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        for origin, expected in ((ALLOWED, ALLOWED), ("HTTP://LOCALHOST:3000", "HTTP://LOCALHOST:3000"),
                                 (OTHER, None)):
            with self.subTest(origin=origin):
                status, headers, text = request(self.port, "POST", "/v1/completions",
                                                {**auth, "Origin": origin}, body)
                self.assertEqual(status, 200, text)
                self.assertEqual(headers.get("access-control-allow-origin"), expected)
                self.assertEqual(headers["vary"], "Origin")
        # Errors and the model list too.
        status, headers, _ = request(self.port, "GET", "/v1/models/nope",
                                     {**auth, "Origin": ALLOWED})
        self.assertEqual(status, 404)
        self.assertEqual(headers["access-control-allow-origin"], ALLOWED)
        # A non-preflight OPTIONS is an ordinary request: it needs the token.
        status, headers, _ = request(self.port, "OPTIONS", "/v1/models", {"Origin": ALLOWED})
        self.assertEqual(status, 401)
        status, headers, _ = request(self.port, "OPTIONS", "/v1/models", auth)
        self.assertEqual(status, 204)
        self.assertEqual(headers["allow"], "GET, OPTIONS")

    def test_streams_carry_the_origin(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE_S)
        conn.request("POST", "/v1/completions",
                     body=json.dumps({"prompt": "Hi", "max_tokens": 3, "stream": True}),
                     headers={"Authorization": f"Bearer {TOKEN}", "Origin": ALLOWED})
        response = conn.getresponse()
        self.assertEqual(response.status, 200)
        self.assertEqual(response.getheader("Access-Control-Allow-Origin"), ALLOWED)
        self.assertEqual(response.getheader("Vary"), "Origin")
        self.assertTrue(response.read().decode().endswith("data: [DONE]\n\n"))
        conn.close()


class NoCorsTest(unittest.TestCase):
    def test_without_the_flag_no_cors_headers_and_options_is_204_with_allow(self):
        server, port, _ = start_server()
        try:
            status, headers, _ = request(port, "OPTIONS", "/v1/chat/completions",
                                         preflight_headers(ALLOWED))
            self.assertEqual(status, 204)
            status, headers, _ = request(port, "OPTIONS", "/v1/chat/completions")
            self.assertEqual(status, 204)
            self.assertEqual(headers["allow"], "POST, OPTIONS")
            status, headers, _ = request(port, "GET", "/v1/models", {"Origin": ALLOWED})
            self.assertEqual(status, 200)
            self.assertFalse([h for h in headers if h.startswith("access-control-")], headers)
            self.assertNotIn("vary", headers)
            status, _, _ = request(port, "OPTIONS", "/v1/nothing")
            self.assertEqual(status, 404)
        finally:
            self.assertEqual(stop_server(server), 0)

    def test_a_malformed_origin_list_stops_the_server_at_start_up(self):
        for flag, message in [("ftp://x", "must start with http:// or https://"),
                              ("https://a.example/path", "'/' has no place in an origin"),
                              ("*,https://a.example", "give * alone")]:
            with self.subTest(flag=flag):
                result = subprocess.run(
                    [os.environ["KVSERVE_BIN"], "--port=0", "--metrics_port=0", "--http_port=0",
                     "--host=127.0.0.1", "--http_host=127.0.0.1",
                     f"--http_cors_origins={flag}"],
                    capture_output=True, text=True, timeout=DEADLINE_S)
                self.assertNotEqual(result.returncode, 0)
                self.assertIn("--http_cors_origins", result.stderr)
                self.assertIn(message, result.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
