"""One kvserve process for the soak: started on loopback with every port
chosen by the kernel, its log written to a file, and what the soak reads
from it: ports, RSS (/proc), /metrics, log lines."""
import http.client
import re
import signal
import subprocess
import time


class ServerProcess:
    def __init__(self, binary, log_path, flags):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            [binary, "--host=127.0.0.1", "--http_host=127.0.0.1", "--port=0", "--http_port=0",
             "--metrics_port=0", *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.grpc_port = self.http_port = self.metrics_port = None
        self._wait_until_serving(timeout_s=300)

    @property
    def pid(self):
        return self.process.pid

    def _wait_until_serving(self, timeout_s):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with open(self.log_path) as f:
                text = f.read()
            http = re.search(r"HTTP API on http://[0-9.]+:(\d+)", text)
            serving = re.search(r"serving .* on [0-9.]+:(\d+) .*metrics on http://[0-9.]+:(\d+)",
                                text)
            if http and serving:
                self.http_port = int(http.group(1))
                self.grpc_port = int(serving.group(1))
                self.metrics_port = int(serving.group(2))
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"kvserve exited with {self.process.returncode}:\n{text}")
            time.sleep(0.1)
        raise RuntimeError(f"kvserve did not serve within {timeout_s} s")

    def _status(self, field):
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise RuntimeError(f"no {field} in /proc/PID/status")

    def rss_mb(self):
        return self._status("VmRSS") / 1024.0

    def threads(self):
        return self._status("Threads")

    def metrics(self):
        """{(name, frozenset(labels)): value} from /metrics."""
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=60)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        samples = {}
        for line in text.splitlines():
            match = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$", line)
            if match:
                labels = frozenset(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
                samples[(match.group(1), labels)] = float(match.group(3))
        return samples

    def outcomes(self):
        """{(api, outcome): count} from kvserve_requests_total."""
        return {tuple(v for _, v in sorted(labels)): value
                for (name, labels), value in self.metrics().items()
                if name == "kvserve_requests_total"}

    def gauge(self, name):
        return self.metrics()[(name, frozenset())]

    def log_lines(self):
        with open(self.log_path, errors="replace") as f:
            return f.read().splitlines()

    def stop(self, timeout_s=120):
        """SIGTERM; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout_s)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.log.close()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if not self.log.closed:
            self.log.close()


def wait_until(predicate, timeout_s, interval_s=0.2):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()

