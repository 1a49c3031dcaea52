#!/usr/bin/env python3
"""deploy/compose.yaml and what it mounts, checked offline:

- compose.yaml and compose.gpu.yaml against the compose specification's
  JSON schema (from the docker-compose 1.29.2 wheel,
  tests/tools/setup_deploy_venv.sh), and with `docker compose config` where
  the compose plugin exists (not on the build machines: skipped there;
  deploy/docker-check.sh --compose runs the file with docker-compose 1.29);
- the GPU reservation (compose.gpu.yaml), the flags (they exist in the real
  binary), the ports (the image's), the stop grace period (longer than the
  drain), the files it mounts and the Prometheus build context exist;
- prometheus.yml by structure (Debian's prometheus package, for promtool, is
  96 MB installed: not worth it for one file), or with `promtool check
  config` where promtool exists;
- the Grafana provisioning files and the dashboard JSON by structure (the
  metric names its expressions use are checked against a running server by
  dashboard_metrics_test.py).

Env: KVSERVE_BIN, KVSERVE_COMPOSE_SCHEMA. Runs in the deploy venv."""
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

import jsonschema

sys.path.insert(0, os.path.dirname(__file__))
from deploy_files import DEPLOY, entrypoint_flag, flag_name, kvserve_flags, load_yaml  # noqa: E402

COMPOSE = os.path.join(DEPLOY, "compose.yaml")
COMPOSE_GPU = os.path.join(DEPLOY, "compose.gpu.yaml")
PROMETHEUS = os.path.join(DEPLOY, "prometheus", "prometheus.yml")
GRAFANA = os.path.join(DEPLOY, "grafana")
DASHBOARD = os.path.join(GRAFANA, "kvserve-dashboard.json")


def duration_s(text):
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", text)
    if not match or not text:
        raise ValueError(f"not a compose duration: {text!r}")
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


class ComposeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.compose = load_yaml(COMPOSE)
        cls.kvserve = cls.compose["services"]["kvserve"]
        cls.gpu = load_yaml(COMPOSE_GPU)["services"]["kvserve"]

    def arg(self, name, service=None):
        for a in (service or self.kvserve)["command"]:
            if flag_name(a) == name:
                return a.split("=", 1)[1]
        return None

    def test_matches_the_compose_spec_schema(self):
        with open(os.environ["KVSERVE_COMPOSE_SCHEMA"]) as f:
            schema = json.load(f)
        validator = jsonschema.Draft201909Validator(schema)
        for path in (COMPOSE, COMPOSE_GPU):
            errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(load_yaml(path))]
            self.assertEqual(errors, [], path)
        # And the schema does catch a misspelt key.
        bad = json.loads(json.dumps(self.compose))
        bad["services"]["kvserve"]["stop_grace_periods"] = "1s"
        self.assertTrue(list(validator.iter_errors(bad)))

    def test_docker_compose_config(self):
        docker = shutil.which("docker")
        if not docker or subprocess.run([docker, "compose", "version"], capture_output=True,
                                        timeout=60).returncode != 0:
            self.skipTest("no `docker compose` here: checked against the schema only")
        out = subprocess.run([docker, "compose", "-f", COMPOSE, "-f", COMPOSE_GPU, "config",
                              "--quiet"],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_gpu_override_reserves_one_gpu(self):
        devices = self.gpu["deploy"]["resources"]["reservations"]["devices"]
        self.assertEqual(len(devices), 1)
        self.assertEqual(devices[0]["driver"], "nvidia")
        self.assertEqual(devices[0]["count"], 1)
        self.assertIn("gpu", devices[0]["capabilities"])
        self.assertEqual(self.arg("device", self.gpu), "cuda")
        # The base file runs anywhere (the CPU check of deploy/docker-check.sh).
        self.assertNotIn("deploy", self.kvserve)
        # The override's command replaces the base one: it keeps its settings.
        for name in ("model", "shutdown_grace_s", "http_port"):
            self.assertEqual(self.arg(name, self.gpu), self.arg(name), name)

    def test_every_flag_exists_in_the_binary(self):
        known = kvserve_flags()
        self.assertIn("model", known)
        for service in (self.kvserve, self.gpu):
            for a in service["command"]:
                self.assertIn(flag_name(a), known, f"compose passes {a}")

    def test_ports_and_grace(self):
        published = {int(p.rsplit(":", 1)[1]) for p in self.kvserve["ports"]}
        self.assertEqual(published, {int(entrypoint_flag("port")),
                                     int(entrypoint_flag("metrics_port")),
                                     int(self.arg("http_port"))})
        self.assertGreater(duration_s(self.kvserve["stop_grace_period"]),
                           float(self.arg("shutdown_grace_s")))
        _, target, mode = self.kvserve["volumes"][0].rsplit(":", 2)
        self.assertEqual((target, mode), ("/models", "ro"))

    def test_mounted_files_exist(self):
        for name in ("prometheus", "grafana"):
            for volume in self.compose["services"][name]["volumes"]:
                source = volume.split(":")[0]
                self.assertTrue(os.path.exists(os.path.join(DEPLOY, source)), source)
        context = self.compose["services"]["prometheus"]["build"]["context"]
        self.assertTrue(os.path.isfile(os.path.join(DEPLOY, context, "Dockerfile")))
        self.assertTrue(os.path.isfile(os.path.join(DEPLOY, self.kvserve["build"]["context"],
                                                    self.kvserve["build"]["dockerfile"])))


class PrometheusConfigTest(unittest.TestCase):
    def test_scrapes_kvserve_metrics_port(self):
        config = load_yaml(PROMETHEUS)
        self.assertTrue(set(config) <= {"global", "scrape_configs", "rule_files", "alerting"})
        jobs = {job["job_name"]: job for job in config["scrape_configs"]}
        for job in jobs.values():
            self.assertTrue(set(job) <= {"job_name", "metrics_path", "static_configs",
                                         "scrape_interval", "scrape_timeout"}, job)
        kvserve = jobs["kvserve"]
        self.assertEqual(kvserve.get("metrics_path", "/metrics"), "/metrics")
        targets = [t for c in kvserve["static_configs"] for t in c["targets"]]
        self.assertEqual(targets, [f"kvserve:{entrypoint_flag('metrics_port')}"])
        self.assertIn("kvserve", load_yaml(COMPOSE)["services"])

    def test_promtool(self):
        promtool = shutil.which("promtool")
        if not promtool:
            self.skipTest("no promtool here: checked by structure only")
        out = subprocess.run([promtool, "check", "config", "--syntax-only", PROMETHEUS],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)


class GrafanaTest(unittest.TestCase):
    def test_datasource_and_provider(self):
        datasources = load_yaml(os.path.join(GRAFANA, "provisioning", "datasources",
                                             "prometheus.yml"))["datasources"]
        self.assertEqual([(d["uid"], d["type"], d["url"]) for d in datasources],
                         [("prometheus", "prometheus", "http://prometheus:9090")])
        providers = load_yaml(os.path.join(GRAFANA, "provisioning", "dashboards",
                                           "kvserve.yml"))["providers"]
        mounts = self.dashboard_mounts()
        self.assertTrue(any(m.startswith(providers[0]["options"]["path"] + "/") for m in mounts))

    def dashboard_mounts(self):
        grafana = load_yaml(COMPOSE)["services"]["grafana"]
        return [v.split(":")[1] for v in grafana["volumes"] if v.endswith(".json:ro")]

    def test_dashboard_structure(self):
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        self.assertEqual(dashboard["uid"], "kvserve")
        ids = [p["id"] for p in dashboard["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        titles = {p["title"] for p in dashboard["panels"]}
        for wanted in ("Time to first token", "Inter-token latency", "Queue", "KV cache usage",
                       "Prefix-cache hit rate", "Errors by outcome"):
            self.assertIn(wanted, titles)
        for panel in dashboard["panels"]:
            self.assertEqual(panel["datasource"]["uid"], "prometheus", panel["title"])
            self.assertTrue(panel["targets"], panel["title"])
            for target in panel["targets"]:
                expr = target["expr"]
                self.assertEqual(expr.count("("), expr.count(")"), expr)
                self.assertRegex(expr, r"kvserve_[a-z_]+")


if __name__ == "__main__":
    unittest.main()
