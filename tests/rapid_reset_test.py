#!/usr/bin/env python3
"""HTTP/2 rapid reset against the real kvserve binary (issue 13 item 1), at a
size CI can afford (3 x 3,000 streams; the full-size figures are in
docs/limits.md): the server's RSS comes back near its baseline (the
malloc_trim thread), a connection is closed with GOAWAY when it reaches
--grpc_max_connection_age_s, and SIGTERM with a client connected but idle
exits at once (issue 13 item 4).

Env: KVSERVE_BIN. Exits 77 (skipped) without Python `h2` (Debian python3-h2)."""
import os
import re
import signal
import subprocess
import sys
import time
import unittest

try:
    import h2  # noqa: F401
except ImportError:
    print("python3-h2 is not installed: skipped")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "tools"))
import rapid_reset  # noqa: E402


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS")


def wait_until(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


class RapidResetTest(unittest.TestCase):
    def start_server(self, *flags):
        server = subprocess.Popen(
            [os.environ["KVSERVE_BIN"], "--port=0", "--metrics_port=-1", "--http_port=-1", "--host=127.0.0.1",
             *flags], stderr=subprocess.PIPE, text=True)
        for line in server.stderr:
            match = re.search(r"serving .* on [0-9.]+:(\d+)", line)
            if match:
                self.addCleanup(server.kill)
                return server, f"127.0.0.1:{match.group(1)}"
        raise RuntimeError("kvserve exited before serving")

    def test_memory_comes_back_and_old_connections_are_closed(self):
        server, target = self.start_server("--malloc_trim_interval_s=1",
                                           "--grpc_max_connection_age_s=3",
                                           "--grpc_max_connection_age_grace_s=1")
        baseline = rss_mb(server.pid)
        attacks = []
        for _ in range(3):
            attack = rapid_reset.Attack(target)
            attack.open_streams(3000, reset=True)
            attacks.append(attack)
        self.assertTrue(all(a.sent == 3000 or a.goaway or a.closed for a in attacks))
        # The last connection stays open: its age runs out and the server
        # sends GOAWAY, then closes it.
        last = attacks[-1]
        for attack in attacks[:-1]:
            attack.close()
        deadline = time.monotonic() + 60
        while not (last.goaway or last.closed) and time.monotonic() < deadline:
            last.read_available(timeout=0.5)
        self.assertTrue(last.goaway or last.closed, "the attacker's connection stayed open")
        last.close()
        # Generous bound for CI (the growth before trimming is ~1/3 of this
        # per 3,000 streams; docs/limits.md has the full-size numbers).
        self.assertTrue(wait_until(lambda: rss_mb(server.pid) < baseline + 100, 60),
                        f"RSS {rss_mb(server.pid):.0f} MB, baseline {baseline:.0f} MB")
        server.send_signal(signal.SIGTERM)
        self.assertEqual(server.wait(timeout=30), 0)

    def test_sigterm_with_an_idle_client_exits_at_once(self):
        server, target = self.start_server("--shutdown_grace_s=10")
        idle = rapid_reset.Attack(target)  # a connected client with nothing in flight
        idle.read_available(timeout=0.5)
        start = time.monotonic()
        server.send_signal(signal.SIGTERM)
        self.assertEqual(server.wait(timeout=30), 0)
        # The bug waited the whole 10 s grace; generous for a loaded machine.
        self.assertLess(time.monotonic() - start, 5.0)
        idle.close()


if __name__ == "__main__":
    unittest.main()
