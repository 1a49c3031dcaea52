#!/usr/bin/env python3
"""The Dockerfiles checked offline, in seconds; deploy/docker-check.sh builds
and runs them (no Docker engine in CI, docs/testing.md).

- every FROM resolves, for each value of the build arguments that choose a
  stage (KVSERVE_CUDA ON/OFF, WITH_DEMO_MODEL 0/1), and stage names are
  lowercase (BuildKit rejects others);
- the entrypoint's flags exist in the real kvserve (`--helpfull`), the
  HEALTHCHECK's in the real kvserve-cli, and it probes the entrypoint's port;
- EXPOSE is the entrypoint's three ports; STOPSIGNAL is SIGTERM and the drain
  (--shutdown_grace_s) fits in Docker's default 10 s stop timeout;
- the runtime stage runs as a non-root user; the CUDA wheels are pinned;
- every COPY source exists and .dockerignore does not exclude it, while it
  does exclude build trees; the deploy scripts parse (bash -n).

Env: KVSERVE_BIN, KVSERVE_CLI. Debian's python3 alone."""
import fnmatch
import json
import os
import re
import shlex
import subprocess
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCKER_STOP_TIMEOUT_S = 10  # `docker stop` without -t, `docker run` without --stop-timeout
STAGE_ARGS = {"KVSERVE_CUDA": ["ON", "OFF"], "WITH_DEMO_MODEL": ["0", "1"]}


def instructions(path):
    """[(KEYWORD, rest)] with comments dropped and continuation lines joined."""
    out, pending = [], ""
    with open(path) as f:
        for line in f:
            stripped = line.strip()
            if stripped.startswith("#") or not stripped:
                continue
            if stripped.endswith("\\"):
                pending += stripped[:-1] + " "
                continue
            text = pending + stripped
            pending = ""
            keyword, _, rest = text.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def flags_of(binary):
    text = subprocess.run([binary, "--helpfull"], capture_output=True, text=True,
                          timeout=60).stdout
    return set(re.findall(r"^\s+--([A-Za-z0-9_]+) ", text, re.MULTILINE))


def flag_values(args):
    """{'port': '50051', ...} from ['--port', '50051', '--x=y', ...]."""
    values, i = {}, 0
    while i < len(args):
        match = re.fullmatch(r"--([A-Za-z0-9_]+)(?:=(.*))?", args[i])
        if match and match.group(2) is not None:
            values[match.group(1)] = match.group(2)
        elif match and i + 1 < len(args) and not args[i + 1].startswith("--"):
            values[match.group(1)] = args[i + 1]
            i += 1
        elif match:
            values[match.group(1)] = ""
        i += 1
    return values


class DockerfileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.steps = instructions(os.path.join(REPO, "Dockerfile"))
        first_from = next(i for i, (k, _) in enumerate(cls.steps) if k == "FROM")
        cls.global_args = dict(
            (rest.split("=", 1) + [""])[:2] for k, rest in cls.steps[:first_from] if k == "ARG")
        # The final stage: the instructions after the runtime stage's FROM.
        runtime = next(i for i, (k, rest) in enumerate(cls.steps)
                       if k == "FROM" and rest.endswith(" AS runtime"))
        cls.runtime = cls.steps[runtime:]
        cls.entrypoint = json.loads(cls.one("ENTRYPOINT"))
        cls.entry_flags = flag_values(cls.entrypoint[1:])

    @classmethod
    def one(cls, keyword):
        found = [rest for k, rest in cls.runtime if k == keyword]
        assert len(found) == 1, f"{keyword}: {found}"
        return found[0]

    def test_every_from_resolves_for_each_stage_argument(self):
        for name in STAGE_ARGS:
            self.assertIn(name, self.global_args, "declared before the first FROM")
        for cuda in STAGE_ARGS["KVSERVE_CUDA"]:
            for demo in STAGE_ARGS["WITH_DEMO_MODEL"]:
                args = dict(self.global_args, KVSERVE_CUDA=cuda, WITH_DEMO_MODEL=demo)
                stages = set()
                for keyword, rest in self.steps:
                    if keyword != "FROM":
                        continue
                    parts = rest.split()
                    image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], parts[0])
                    self.assertTrue(image in stages or ":" in image, f"FROM {image} ({args})")
                    if len(parts) == 3:
                        self.assertEqual(parts[1].upper(), "AS")
                        self.assertEqual(parts[2], parts[2].lower(), "stage names are lowercase")
                        stages.add(parts[2])
                for keyword, rest in self.steps:
                    for source in re.findall(r"--from=(\S+)", rest):
                        self.assertIn(source, stages, f"{keyword} {rest}")

    def test_entrypoint_flags_exist_in_kvserve(self):
        self.assertEqual(self.entrypoint[0], "kvserve")
        known = flags_of(os.environ["KVSERVE_BIN"])
        for name in self.entry_flags:
            self.assertIn(name, known, f"ENTRYPOINT passes --{name}")
        self.assertEqual(self.entry_flags["host"], "0.0.0.0")
        self.assertEqual(self.entry_flags["metrics_host"], "0.0.0.0")

    def test_healthcheck_probes_the_grpc_port_with_real_flags(self):
        text = self.one("HEALTHCHECK")
        cmd = json.loads(text[text.index("CMD ") + 4:])
        self.assertEqual(cmd[0], "kvserve-cli")
        self.assertEqual(cmd[-1], "health")
        known = flags_of(os.environ["KVSERVE_CLI"])
        values = flag_values(cmd[1:-1])
        for name in values:
            self.assertIn(name, known, f"HEALTHCHECK passes --{name}")
        self.assertEqual(values["target"], f"127.0.0.1:{self.entry_flags['port']}")
        # The probe's own deadline ends before Docker's.
        timeout = re.search(r"--timeout=(\d+)s", text).group(1)
        self.assertLess(float(values["timeout_s"]), float(timeout))

    def test_ports_and_stop(self):
        exposed = {int(p) for p in self.one("EXPOSE").split()}
        self.assertEqual(exposed, {int(self.entry_flags[f])
                                   for f in ("port", "http_port", "metrics_port")})
        self.assertEqual(self.one("STOPSIGNAL"), "SIGTERM")
        # Drain, then the engine's stop: a few seconds of margin under SIGKILL.
        self.assertLessEqual(float(self.entry_flags["shutdown_grace_s"]) + 3,
                             DOCKER_STOP_TIMEOUT_S)

    def test_runs_as_non_root(self):
        user = self.one("USER")
        self.assertNotIn(user, ("root", "0"))

    def test_cuda_wheels_are_pinned(self):
        text = " ".join(rest for k, rest in self.steps if k == "RUN")
        wheels = re.findall(r"\b(nvidia-[a-z-]+)(==[\d.]+)?", text)
        self.assertTrue(wheels)
        for name, pin in wheels:
            self.assertTrue(pin, f"{name} is not pinned")
        self.assertTrue(all(pin.startswith("==13.") for name, pin in wheels
                            if name.startswith("nvidia-cuda-")), wheels)

    def test_copy_sources_exist_and_are_sent(self):
        with open(os.path.join(REPO, ".dockerignore")) as f:
            ignored = [l.strip().rstrip("/") for l in f if l.strip() and not l.startswith("#")]
        for pattern in (".git", "build*"):
            self.assertIn(pattern, ignored)
        for keyword, rest in self.steps:
            if keyword != "COPY" or "--from=" in rest:
                continue
            source = shlex.split(rest)[0]
            self.assertTrue(os.path.exists(os.path.join(REPO, source)), source)
            for pattern in ignored:
                self.assertFalse(fnmatch.fnmatch(source, pattern), f"{source} is ignored")


class PrometheusDockerfileTest(unittest.TestCase):
    def test_reads_the_mounted_config(self):
        steps = dict(instructions(os.path.join(REPO, "deploy", "prometheus", "Dockerfile")))
        self.assertIn("prometheus", steps["RUN"])
        self.assertIn("--config.file=/etc/prometheus/prometheus.yml", steps["CMD"])
        self.assertNotIn(steps["USER"], ("root", "0"))


class ScriptsTest(unittest.TestCase):
    def test_deploy_scripts_parse(self):
        for name in ("docker-check.sh", "run-docker.sh", "install-deps.sh"):
            path = os.path.join(REPO, "deploy", name)
            out = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, f"{name}: {out.stderr}")

    def test_install_deps_knows_ubuntu_2404(self):
        script = os.path.join(REPO, "deploy", "install-deps.sh")
        release = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"os-release-{os.getpid()}")
        with open(release, "w") as f:
            f.write('ID=ubuntu\nVERSION_ID="24.04"\n')
        try:
            env = dict(os.environ, OS_RELEASE=release)
            ubuntu = subprocess.run(["bash", script, "--print"], env=env, capture_output=True,
                                    text=True, check=True).stdout.split()
            runtime = subprocess.run(["bash", script, "--runtime"], env=env,
                                     capture_output=True, text=True, check=True).stdout.split()
        finally:
            os.unlink(release)
        self.assertIn("libboost1.83-dev", ubuntu)
        self.assertNotIn("libboost1.81-dev", ubuntu)
        self.assertIn("libicu74", runtime)
        debian = subprocess.run(["bash", script, "--print"], capture_output=True, text=True,
                                check=True, env=dict(os.environ, OS_RELEASE="/nonexistent"))
        self.assertIn("libboost1.81-dev", debian.stdout.split())


if __name__ == "__main__":
    unittest.main()
