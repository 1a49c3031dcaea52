"""Shared by the deployment file checks: where the files are, YAML loading,
and the flags the real kvserve binary accepts."""
import os
import re
import subprocess

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY = os.path.join(REPO, "deploy")


def load_yaml_documents(path):
    with open(path) as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def load_yaml(path):
    docs = load_yaml_documents(path)
    if len(docs) != 1:
        raise ValueError(f"{path}: expected one YAML document, found {len(docs)}")
    return docs[0]


def kvserve_flags():
    """Every flag name `kvserve --helpfull` lists (KVSERVE_BIN)."""
    out = subprocess.run([os.environ["KVSERVE_BIN"], "--helpfull"], capture_output=True,
                         text=True, timeout=60)
    text = out.stdout + out.stderr
    return set(re.findall(r"^\s+--([A-Za-z0-9_]+) ", text, re.MULTILINE))


def flag_name(arg):
    """'--model=/x' -> 'model'; None for an argument that is not a flag."""
    match = re.match(r"--([A-Za-z0-9_]+)(=|$)", arg)
    return match.group(1) if match else None


def dockerfile_entrypoint():
    """The Dockerfile's ENTRYPOINT as a list (its JSON form)."""
    import json
    with open(os.path.join(REPO, "Dockerfile")) as f:
        for line in f:
            if line.startswith("ENTRYPOINT "):
                return json.loads(line[len("ENTRYPOINT "):])
    raise ValueError("Dockerfile has no ENTRYPOINT")


def entrypoint_flag(name):
    """The value the Dockerfile's entrypoint gives --name (as '--name', 'value')."""
    entry = dockerfile_entrypoint()
    return entry[entry.index(f"--{name}") + 1]
