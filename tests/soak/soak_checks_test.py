#!/usr/bin/env python3
"""The soak's verdicts on made-up inputs, so that a soak that passes means
something: the ledger catches a second terminal status, a request that never
ended, a miscounted error and an early end the server never saw; it accepts
the two races it documents; the log check fails error lines and crashes and
passes info lines. Standard library only, no server."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from ledger import Ledger  # noqa: E402
from log_check import unexplained_lines  # noqa: E402


def server(**counts):
    """{(api, outcome): n} from grpc_length=3, http_cancelled=1, ..."""
    return {tuple(key.split("_", 1)): n for key, n in counts.items()}


class LedgerTest(unittest.TestCase):
    def ledger(self, *ends):
        ledger = Ledger()
        for scenario, api, status, outcome in ends:
            ledger.begin(scenario, api).end(status, outcome)
        return ledger

    def test_agreement_passes(self):
        ledger = self.ledger(("g", "grpc", "OK", "length"), ("g", "grpc", "CANCELLED", "cancelled"),
                             ("h", "http", "HTTP 400", "invalid_argument"))
        failures, _ = ledger.compare_with_server(
            {}, server(grpc_length=1, grpc_cancelled=1, http_invalid_argument=1), 0)
        self.assertEqual(failures, [])

    def test_races_are_accepted_within_bounds(self):
        # The cancel arrived after the request finished; two burst streams counted.
        ledger = self.ledger(("g", "grpc", "CANCELLED", "cancelled"))
        failures, figures = ledger.compare_with_server(
            {}, server(grpc_length=1, grpc_cancelled=2), burst_streams=5)
        self.assertEqual(failures, [])
        self.assertEqual(figures["grpc"]["finished_before_cancel"], 1)
        self.assertEqual(figures["grpc"]["burst_streams_counted"], 2)
        failures, _ = ledger.compare_with_server({}, server(grpc_cancelled=9), burst_streams=5)
        self.assertTrue(failures)

    def test_miscounts_fail(self):
        ledger = self.ledger(("h", "http", "HTTP 400", "invalid_argument"),
                             ("h", "http", "HTTP 200", "length"))
        for counts in (server(http_length=1), server(http_length=1, http_invalid_argument=2),
                       server(http_invalid_argument=1, http_cancelled=1),
                       server(http_length=1, http_invalid_argument=1, http_error=1)):
            failures, _ = ledger.compare_with_server({}, counts, burst_streams=100)
            self.assertTrue(failures, counts)

    def test_second_terminal_status_and_unended_requests_fail(self):
        ledger = Ledger()
        request = ledger.begin("g", "grpc")
        request.end("OK", "length")
        request.end("CANCELLED", "cancelled")
        ledger.begin("g", "grpc")
        self.assertEqual(len(ledger.failures), 1)
        failures, _ = ledger.compare_with_server({}, server(grpc_length=1), 0)
        self.assertIn("1 requests never ended on the client", failures)

    def test_unexpected_status_fails(self):
        ledger = Ledger()
        ledger.begin("g", "grpc").end("UNAVAILABLE", "unavailable", expected=False)
        self.assertEqual(ledger.failures, ["g: unexpected status UNAVAILABLE"])


class LogCheckTest(unittest.TestCase):
    def test_errors_and_crashes_fail(self):
        lines = ["I 20:00:29.142 main.cc:97] serving",
                 "W 20:00:29.142 chat_setup.cc:33] chat is unavailable",
                 "E 20:00:30.001 engine.cc:10] step failed: INTERNAL",
                 "E1124 20:00:30.001000  1234 chttp2_transport.cc:99] transport error",
                 "terminate called after throwing an instance of 'std::bad_alloc'"]
        self.assertEqual(unexplained_lines(lines), lines[2:])


if __name__ == "__main__":
    unittest.main()
