"""A real kvserve-server process for the `openai` client tests: gRPC, metrics
and the OpenAI HTTP API on free loopback ports, ready once GET /health is 200.

Waits are on conditions (a log line, /health, a metric's value) with generous
deadlines, never on sleeps of a fixed length: CI runs on a loaded machine."""
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

START_DEADLINE_S = 120
DRAIN_DEADLINE_S = 60


def scrape(metrics_url):
    """Prometheus text → {series: value}."""
    text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            values[series] = float(value)
    return values


class KvserveServer:
    """kvserve-server with the given extra flags. Use as a context manager."""

    def __init__(self, *flags):
        self.flags = list(flags)
        self.process = None
        self.log = []  # the server's stderr lines, for failure messages

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.http_port}/v1"

    @property
    def metrics_url(self):
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def start(self):
        # Port 0 everywhere: the server picks free ports and logs them.
        self.process = subprocess.Popen(
            [os.environ["KVSERVE_BIN"], "--host=127.0.0.1", "--port=0", "--metrics_port=0",
             "--http_host=127.0.0.1", "--http_port=0", *self.flags],
            stderr=subprocess.PIPE, text=True)
        if not self._wait_until_serving():
            self.process.kill()
            self.process.wait()
            raise RuntimeError("kvserve-server did not start:\n" + "".join(self.log[-30:]))

    def _wait_until_serving(self):
        """True once the HTTP and metrics ports are logged and /health is 200."""
        self.http_port = self.metrics_port = None
        for line in self.process.stderr:
            self.log.append(line)
            match = re.search(r"HTTP API on http://[0-9.]+:(\d+)/", line)
            if match:
                self.http_port = int(match.group(1))
            match = re.search(r"metrics on http://[0-9.]+:(\d+)/", line)
            if match:
                self.metrics_port = int(match.group(1))
                break  # the last of the start-up lines
        if self.http_port is None or self.metrics_port is None:
            return False
        # Keep draining stderr so that the server never blocks on a full pipe.
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline and self.process.poll() is None:
            if self.health_status() == 200:
                return True
            time.sleep(0.05)
        return False

    def _drain_stderr(self):
        for line in self.process.stderr:
            self.log.append(line)

    def health_status(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/health",
                                        timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return None

    def metric(self, name):
        """The sum of a metric's series (0 if absent)."""
        values = scrape(self.metrics_url)
        return sum(v for k, v in values.items() if k == name or k.startswith(name + "{"))

    def wait_for_metric(self, name, predicate, deadline_s=DRAIN_DEADLINE_S):
        """Polls until predicate(value) holds; returns the last value seen."""
        deadline = time.monotonic() + deadline_s
        value = self.metric(name)
        while not predicate(value) and time.monotonic() < deadline:
            time.sleep(0.05)
            value = self.metric(name)
        return value

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
