#!/usr/bin/env python3
"""The Kubernetes manifests (deploy/k8s/) checked offline:

- every core resource against the Kubernetes OpenAPI schemas with PyPI's
  kubernetes-validate in strict mode (unknown fields are errors), for the
  oldest version the manifests support (1.27: gRPC probes are GA) and the
  newest the package ships;
- each kustomization lists exactly the YAML files beside it;
- what the schemas cannot see: the pod's flags exist in the real binary, the
  probes are gRPC on the gRPC port, the grace period covers the drain, the
  Services and the PodDisruptionBudget select the pods, the model volume is
  read-only, the GPU is requested;
- the ServiceMonitor (a CRD: no schema in kubernetes-validate) by structure;
- the whole resources that docs/deploy.md shows, against the schemas;
- `kubectl kustomize` builds both kustomizations, where kubectl exists.

Env: KVSERVE_BIN. Runs in the venv of tests/tools/setup_deploy_venv.sh."""
import os
import re
import shutil
import subprocess
import sys
import textwrap
import unittest

import kubernetes_validate
import yaml

sys.path.insert(0, os.path.dirname(__file__))
from deploy_files import DEPLOY, entrypoint_flag, flag_name, kvserve_flags, load_yaml, \
    load_yaml_documents  # noqa: E402

K8S = os.path.join(DEPLOY, "k8s")
BASE = os.path.join(K8S, "base")
OPERATOR = os.path.join(K8S, "prometheus-operator")
OLDEST_VERSION = "1.27.0"  # gRPC probes GA


def kustomization(directory):
    return load_yaml(os.path.join(directory, "kustomization.yaml"))


def base_resources():
    """{(kind, name): resource} over every file the base kustomization lists."""
    resources = {}
    for name in kustomization(BASE)["resources"]:
        for doc in load_yaml_documents(os.path.join(BASE, name)):
            resources[(doc["kind"], doc["metadata"]["name"])] = doc
    return resources


def parse_seconds(text):
    match = re.fullmatch(r"(\d+(?:\.\d+)?)s?", str(text))
    if not match:
        raise ValueError(f"not a duration in seconds: {text!r}")
    return float(match.group(1))


class KustomizationTest(unittest.TestCase):
    def check_lists_every_file(self, directory, extra=()):
        listed = [r for r in kustomization(directory)["resources"] if r not in extra]
        present = sorted(f for f in os.listdir(directory)
                         if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml")
        self.assertEqual(sorted(listed), present,
                         f"{directory}/kustomization.yaml resources vs the files beside it")

    def test_base_lists_every_file(self):
        self.check_lists_every_file(BASE)

    def test_operator_overlay_lists_base_and_servicemonitor(self):
        self.assertIn("../base", kustomization(OPERATOR)["resources"])
        self.check_lists_every_file(OPERATOR, extra=("../base",))

    def test_kubectl_kustomize_builds(self):
        kubectl = shutil.which("kubectl")
        if not kubectl:
            self.skipTest("no kubectl here: kustomize builds not checked")
        for directory, kinds in ((BASE, {"Namespace", "Deployment", "Service",
                                         "PodDisruptionBudget", "PersistentVolumeClaim"}),
                                 (OPERATOR, {"ServiceMonitor", "Deployment"})):
            out = subprocess.run([kubectl, "kustomize", directory], capture_output=True,
                                 text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            built = {doc["kind"] for doc in yaml.safe_load_all(out.stdout) if doc}
            self.assertTrue(kinds <= built, f"{directory}: {built}")


class SchemaTest(unittest.TestCase):
    def test_core_resources_validate_strictly(self):
        versions = (OLDEST_VERSION, kubernetes_validate.utils.latest_version())
        count = 0
        for (kind, name), doc in base_resources().items():
            for version in versions:
                with self.subTest(kind=kind, name=name, version=version):
                    try:
                        kubernetes_validate.validate(doc, version, strict=True)
                    except kubernetes_validate.ValidationError as e:
                        path = ".".join(str(p) for p in e.path)
                        self.fail(f"{kind}/{name} against {version}: {path}: {e.message}")
                    count += 1
        self.assertGreaterEqual(count, 2 * 6)

    def test_strict_mode_rejects_an_unknown_field(self):
        # The check above would be worthless if strict mode let typos through.
        deployment = base_resources()[("Deployment", "kvserve")]
        container = dict(deployment["spec"]["template"]["spec"]["containers"][0])
        container["readinesProbe"] = container.pop("readinessProbe")
        bad = {**deployment, "spec": {**deployment["spec"], "template": {
            **deployment["spec"]["template"], "spec": {
                **deployment["spec"]["template"]["spec"], "containers": [container]}}}}
        with self.assertRaises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(bad, OLDEST_VERSION, strict=True)


class DocExamplesTest(unittest.TestCase):
    def test_complete_resources_in_deploy_md_validate(self):
        """docs/deploy.md's YAML blocks that are whole resources (apiVersion)."""
        with open(os.path.join(DEPLOY, "..", "docs", "deploy.md")) as f:
            text = f.read()
        blocks = [textwrap.dedent(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)]
        resources = [doc for b in blocks for doc in yaml.safe_load_all(b)
                     if isinstance(doc, dict) and "apiVersion" in doc]
        self.assertTrue(resources, "docs/deploy.md has a complete resource")
        for doc in resources:
            with self.subTest(kind=doc["kind"]):
                kubernetes_validate.validate(doc, OLDEST_VERSION, strict=True)


class DeploymentContractTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.resources = base_resources()
        cls.deployment = cls.resources[("Deployment", "kvserve")]
        cls.pod = cls.deployment["spec"]["template"]
        cls.container = cls.pod["spec"]["containers"][0]
        cls.args = cls.container.get("args", [])
        cls.ports = {p["name"]: p["containerPort"] for p in cls.container["ports"]}

    def arg(self, name):
        for a in self.args:
            if flag_name(a) == name:
                return a.split("=", 1)[1]
        return None

    def test_every_flag_exists_in_the_binary(self):
        known = kvserve_flags()
        self.assertIn("model", known)  # the --helpfull parse works
        for a in self.args:
            self.assertIn(flag_name(a), known, f"deployment.yaml passes {a}")

    def test_ports_match_the_image_and_flags(self):
        self.assertEqual(self.ports["grpc"], int(entrypoint_flag("port")))
        self.assertEqual(self.ports["metrics"], int(entrypoint_flag("metrics_port")))
        self.assertEqual(self.ports["http"], int(self.arg("http_port") or 8000))
        # Prometheus scrapes from outside the pod: /metrics must not stay on
        # loopback (--metrics_host defaults to 127.0.0.1).
        self.assertEqual(self.arg("metrics_host") or entrypoint_flag("metrics_host"), "0.0.0.0")

    def test_probes_are_grpc_health_on_the_grpc_port(self):
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            self.assertEqual(self.container[probe]["grpc"]["port"], self.ports["grpc"], probe)
        # Readiness names the service kvserve marks NOT_SERVING while draining.
        self.assertEqual(self.container["readinessProbe"]["grpc"].get("service"),
                         "kvserve.v1.Inference")

    def test_grace_period_covers_the_drain(self):
        grace = float(self.arg("shutdown_grace_s"))
        pre_stop = self.container["lifecycle"]["preStop"]["exec"]["command"]
        self.assertEqual(pre_stop[0], "sleep")
        budget = self.pod["spec"]["terminationGracePeriodSeconds"]
        # Engine stop and process exit after the drain: a few seconds.
        self.assertGreater(budget, float(pre_stop[1]) + grace + 10)
        liveness = self.container["livenessProbe"]
        self.assertGreater(liveness["periodSeconds"] * liveness["failureThreshold"], grace,
                           "a draining server (NOT_SERVING) must not be restarted by liveness")

    def test_gpu_and_resources(self):
        resources = self.container["resources"]
        for kind in ("requests", "limits"):
            self.assertEqual(int(resources[kind]["nvidia.com/gpu"]), 1, kind)
            self.assertIn("cpu", resources[kind])
            self.assertIn("memory", resources[kind])
        self.assertEqual(self.arg("device"), "cuda")

    def test_model_comes_from_a_read_only_volume(self):
        model = self.arg("model")
        self.assertTrue(model, "--model is set")
        mounts = [m for m in self.container["volumeMounts"]
                  if model.startswith(m["mountPath"].rstrip("/") + "/")]
        self.assertEqual(len(mounts), 1, f"one mount holds {model}")
        self.assertTrue(mounts[0].get("readOnly"))
        volume = next(v for v in self.pod["spec"]["volumes"] if v["name"] == mounts[0]["name"])
        claim = volume["persistentVolumeClaim"]["claimName"]
        self.assertIn(("PersistentVolumeClaim", claim), self.resources)

    def test_runs_as_the_image_user(self):
        self.assertEqual(self.pod["spec"]["securityContext"]["runAsUser"], 10001)

    def test_services_and_budget_select_the_pods(self):
        labels = self.pod["metadata"]["labels"]
        self.assertTrue(set(self.deployment["spec"]["selector"]["matchLabels"].items())
                        <= set(labels.items()))
        grpc = self.resources[("Service", "kvserve-grpc")]
        http = self.resources[("Service", "kvserve-http")]
        self.assertEqual(grpc["spec"]["clusterIP"], "None", "headless, for client-side balancing")
        self.assertEqual(http["spec"].get("type", "ClusterIP"), "ClusterIP")
        for service in (grpc, http):
            self.assertTrue(set(service["spec"]["selector"].items()) <= set(labels.items()))
            for port in service["spec"]["ports"]:
                self.assertIn(port["targetPort"], self.ports, service["metadata"]["name"])
        self.assertEqual({p["targetPort"] for p in grpc["spec"]["ports"]}, {"grpc", "metrics"})
        self.assertEqual({p["targetPort"] for p in http["spec"]["ports"]}, {"http"})
        pdb = self.resources[("PodDisruptionBudget", "kvserve")]
        self.assertTrue(set(pdb["spec"]["selector"]["matchLabels"].items()) <= set(labels.items()))

    def test_prometheus_annotations_name_the_metrics_port(self):
        annotations = self.pod["metadata"]["annotations"]
        self.assertEqual(annotations["prometheus.io/scrape"], "true")
        self.assertEqual(int(annotations["prometheus.io/port"]), self.ports["metrics"])
        self.assertEqual(annotations["prometheus.io/path"], "/metrics")


class ServiceMonitorTest(unittest.TestCase):
    """A CRD: kubernetes-validate has no schema for it, so its structure and
    its references are checked here."""

    def test_selects_the_headless_service_and_its_metrics_port(self):
        monitor = load_yaml(os.path.join(OPERATOR, "servicemonitor.yaml"))
        self.assertEqual(monitor["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(monitor["kind"], "ServiceMonitor")
        self.assertEqual(set(monitor), {"apiVersion", "kind", "metadata", "spec"})
        self.assertTrue(set(monitor["spec"]) <= {"selector", "namespaceSelector", "endpoints"})
        grpc = base_resources()[("Service", "kvserve-grpc")]
        self.assertTrue(set(monitor["spec"]["selector"]["matchLabels"].items())
                        <= set(grpc["metadata"]["labels"].items()))
        namespace = kustomization(BASE)["namespace"]
        self.assertEqual(monitor["spec"]["namespaceSelector"]["matchNames"], [namespace])
        port_names = {p["name"] for p in grpc["spec"]["ports"]}
        for endpoint in monitor["spec"]["endpoints"]:
            self.assertTrue(set(endpoint) <= {"port", "path", "interval", "scrapeTimeout"})
            self.assertIn(endpoint["port"], port_names)
            self.assertEqual(endpoint["path"], "/metrics")
            parse_seconds(endpoint["interval"])


if __name__ == "__main__":
    unittest.main()
