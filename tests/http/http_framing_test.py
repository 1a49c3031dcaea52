#!/usr/bin/env python3
"""HTTP/1.1 message framing of the real kvserve binary, over raw sockets
(RFC 9112; issue 27 item 11, docs/security.md "Request framing"):

- a Transfer-Encoding other than a lone final `chunked` (gzip, identity,
  `chunked, gzip`, `gzip, chunked`, chunked twice), one together with
  Content-Length, or one in an HTTP/1.0 request is refused before its body is
  read, and the connection closed: a request smuggled in the body (a
  `GET /v1/models` that Beast once answered 200) is never answered;
- an HTTP/1.1 request without Host, or any request with two, is 400;
- an HTTP/1.0 client's stream comes without chunked encoding and ends where
  the connection does;
- chunked request bodies (curl's -H 'Transfer-Encoding: chunked') still work,
  and keep-alive goes on after them.

Run by ctest with KVSERVE_BIN (and KVSERVE_TEST_DATA_DIR, for http_api_test's
helpers)."""
import json
import socket
import unittest

from http_api_test import DEADLINE_S, start_server, stop_server

# What a smuggler appends to the body: answered, it would show the model list.
SMUGGLED = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
# ignore_eos: a sampled EOS must not end the two tokens the tests count.
BODY = json.dumps({"prompt": "Hi", "max_tokens": 2, "ignore_eos": True}).encode()


def exchange(port, data):
    """Sends `data`, then reads until the server closes; returns (bytes, closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S) as s:
        s.sendall(data)
        received = b""
        try:
            while chunk := s.recv(65536):
                received += chunk
        except socket.timeout:
            return received, False
        except ConnectionResetError:
            return received, True
    return received, True


def parse_responses(data):
    """Splits a byte stream of HTTP responses with Content-Length bodies (or one
    close-delimited one) into [(status, {lower-case header: value}, body)]."""
    responses = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep, f"an incomplete response: {data!r}"
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers["content-length"]) if "content-length" in headers else len(rest)
        responses.append((status, headers, rest[:length]))
        data = rest[length:]
    return responses


class FramingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.port, _ = start_server()

    @classmethod
    def tearDownClass(cls):
        if stop_server(cls.server) != 0:
            raise RuntimeError("kvserve did not exit cleanly on SIGTERM")

    def assert_refused_and_closed(self, request, status, message):
        """`request` gets one answer, `status` with `message`, then the
        connection closes: what followed its header was never a request."""
        received, closed = exchange(self.port, request)
        self.assertTrue(closed, f"the connection stayed open after {received!r}")
        responses = parse_responses(received)
        self.assertEqual(len(responses), 1, f"more than one answer: {received!r}")
        got_status, headers, body = responses[0]
        self.assertEqual(got_status, status, received)
        self.assertEqual(headers.get("connection"), "close", headers)
        error = json.loads(body)["error"]
        self.assertIn(message, error["message"])
        self.assertEqual(error["type"], "invalid_request_error")
        self.assertNotIn(b'"object":"list"', received)  # the smuggled GET's answer

    def test_transfer_codings_other_than_a_final_lone_chunked_are_refused(self):
        cases = [
            ("gzip", b"Transfer-Encoding: gzip\r\n", 400, "chunked must be the last"),
            ("identity", b"Transfer-Encoding: identity\r\n", 400, "chunked must be the last"),
            ("chunked_then_gzip", b"Transfer-Encoding: chunked, gzip\r\n", 400,
             "chunked must be the last"),
            ("chunked_twice", b"Transfer-Encoding: chunked, chunked\r\n", 400,
             "chunked may be applied only once"),
            ("gzip_then_chunked", b"Transfer-Encoding: gzip, chunked\r\n", 501,
             "only chunked is implemented"),
            ("two_fields_gzip_chunked", b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
             501, "only chunked is implemented"),
            ("empty", b"Transfer-Encoding: \r\n", 400, "chunked must be the last"),
        ]
        for label, header, status, message in cases:
            with self.subTest(label=label):
                # The "body" is the smuggled request itself, and then some more.
                request = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n" +
                           SMUGGLED + SMUGGLED)
                self.assert_refused_and_closed(request, status, message)

    def test_transfer_encoding_with_content_length_is_refused(self):
        smuggle_chunked = b"0\r\n\r\n" + SMUGGLED
        for label, headers in [
                ("te_then_cl", b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"),
                ("cl_then_te", b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"),
                ("gzip_then_cl", b"Transfer-Encoding: gzip\r\nContent-Length: 5\r\n")]:
            with self.subTest(label=label):
                request = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n" +
                           smuggle_chunked)
                received, closed = exchange(self.port, request)
                self.assertTrue(closed)
                responses = parse_responses(received)
                self.assertEqual(len(responses), 1, received)
                self.assertEqual(responses[0][0], 400, received)
                self.assertEqual(responses[0][1].get("connection"), "close")

    def test_transfer_encoding_in_http_1_0_is_refused(self):
        request = (b"POST /v1/completions HTTP/1.0\r\nConnection: keep-alive\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + SMUGGLED)
        self.assert_refused_and_closed(request, 400, "HTTP/1.0")

    def test_host_missing_or_repeated_is_400(self):
        self.assert_refused_and_closed(b"GET /health HTTP/1.1\r\n\r\n" + SMUGGLED, 400,
                                       "must have a Host header")
        self.assert_refused_and_closed(
            b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n" + SMUGGLED, 400,
            "2 Host headers")
        # HTTP/1.0 needs none.
        received, _ = exchange(self.port, b"GET /health HTTP/1.0\r\n\r\n")
        self.assertEqual(parse_responses(received)[0][0], 200, received)

    def test_chunked_request_bodies_work_and_keep_alive_goes_on(self):
        half = len(BODY) // 2
        chunked = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, BODY[:half], len(BODY) - half,
                                                         BODY[half:])
        request = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n" + chunked +
                   b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        received, closed = exchange(self.port, request)
        self.assertTrue(closed)
        responses = parse_responses(received)
        self.assertEqual([r[0] for r in responses], [200, 200], received)
        self.assertEqual(json.loads(responses[0][2])["usage"]["completion_tokens"], 2)
        self.assertEqual(json.loads(responses[1][2]), {"status": "ok"})
        # Transfer-Encoding's name and value are case-insensitive.
        request = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\ntransfer-encoding: Chunked\r\n"
                   b"Connection: close\r\n\r\n" + chunked)
        received, _ = exchange(self.port, request)
        self.assertEqual(parse_responses(received)[0][0], 200, received)

    def test_http_1_0_stream_is_close_delimited_without_chunked_encoding(self):
        body = json.dumps({"prompt": "Hi", "max_tokens": 5, "ignore_eos": True,
                           "stream": True}).encode()
        for connection in (b"", b"Connection: keep-alive\r\n"):
            with self.subTest(connection=connection):
                request = (b"POST /v1/completions HTTP/1.0\r\n" + connection +
                           b"Content-Length: %d\r\n\r\n" % len(body) + body)
                received, closed = exchange(self.port, request)
                self.assertTrue(closed, "the stream must end with the connection")
                head, _, events = received.partition(b"\r\n\r\n")
                headers = head.decode().lower()
                self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
                self.assertNotIn("transfer-encoding", headers)
                self.assertNotIn("content-length", headers)
                self.assertIn("connection: close", headers)
                self.assertIn("content-type: text/event-stream", headers)
                lines = [line for line in events.decode().split("\n\n") if line]
                self.assertEqual(lines[-1], "data: [DONE]", events)
                chunks = [json.loads(line[len("data: "):]) for line in lines[:-1]]
                self.assertEqual(len(chunks), 5, events)
                self.assertEqual(chunks[-1]["choices"][0]["finish_reason"], "length")


if __name__ == "__main__":
    unittest.main(verbosity=2)
