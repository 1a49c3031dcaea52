#!/usr/bin/env python3
"""Every metric name that the Grafana dashboard (deploy/grafana/
kvserve-dashboard.json) and docs/deploy.md use is one a running kvserve
exports: scrapes the real /metrics of the real binary after one request, so a
renamed metric fails here, not on someone's empty panel.

Env: KVSERVE_BIN. Debian's python3, standard library only."""
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DASHBOARD = os.path.join(REPO, "deploy", "grafana", "kvserve-dashboard.json")
DEPLOY_DOC = os.path.join(REPO, "docs", "deploy.md")
METRIC = re.compile(r"\bkvserve_[a-z0-9_]+")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def start_server():
    """kvserve on the built-in model; returns (process, http port, metrics port)."""
    process = subprocess.Popen(
        [os.environ["KVSERVE_BIN"], "--port=0", "--metrics_port=0", "--http_port=0",
         "--host=127.0.0.1", "--http_host=127.0.0.1"], stderr=subprocess.PIPE, text=True)
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
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
    return process, http_port, metrics_port


def http_request(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(method, path, body=json.dumps(body) if body else None,
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    return response.status, text


def exported_names(exposition):
    """Sample names in a Prometheus text exposition, plus each histogram's base name."""
    names = set()
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
        elif line and not line.startswith("#"):
            names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return names


class DashboardMetricsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, http_port, metrics_port = start_server()
        # One finished request and one rejected one: labelled series appear.
        models = json.loads(http_request(http_port, "GET", "/v1/models")[1])
        name = models["data"][0]["id"]
        status, body = http_request(http_port, "POST", "/v1/completions",
                                    {"model": name, "prompt": "hi", "max_tokens": 4})
        assert status == 200, body
        http_request(http_port, "POST", "/v1/completions", {"model": name, "prompt": "hi", "max_tokens": -1})
        cls.names = exported_names(http_request(metrics_port, "GET", "/metrics")[1])

    @classmethod
    def tearDownClass(cls):
        cls.server.send_signal(signal.SIGTERM)
        cls.server.wait(timeout=60)

    def check_names(self, used, where):
        self.assertTrue(used, f"no kvserve_ metric found in {where}")
        for name in sorted(used):
            with self.subTest(metric=name, where=where):
                self.assertIn(name, self.names,
                              f"{where} uses {name}, which kvserve does not export")

    def test_dashboard_metrics_exist(self):
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        used = {m for panel in dashboard["panels"] for target in panel["targets"]
                for m in METRIC.findall(target["expr"])}
        self.check_names(used, "kvserve-dashboard.json")

    def test_deploy_doc_metrics_exist(self):
        with open(DEPLOY_DOC) as f:
            used = set(METRIC.findall(f.read()))
        # A histogram may be named by its base name in prose.
        self.check_names({m for m in used if not m.endswith("_")}, "docs/deploy.md")

    def test_the_scrape_is_real(self):
        self.assertIn("kvserve_kv_blocks_used", self.names)
        self.assertIn("kvserve_time_to_first_token_seconds_bucket", self.names)


if __name__ == "__main__":
    unittest.main()
