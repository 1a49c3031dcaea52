#!/usr/bin/python3
"""Differential tests: JSON Schema to GBNF against Python's jsonschema, and
regular expressions to GBNF against Python's re.

For each schema below, a few hundred random JSON values (generated from the
schema so that about half are valid, then mutated), each serialized compactly
and with spaces, go through kvserve-grammar-check (the converter and the real
matcher). Two properties must hold:
  sound:    every text the grammar accepts is valid for jsonschema;
  complete: every valid value, serialized with properties in the schema's
            order, is accepted (the schemas here stay inside what the
            converter enforces exactly: no formats, anchored patterns,
            explicit additionalProperties).

Regular expressions: random strings over a small alphabet per expression; the
grammar must accept exactly those re.fullmatch (ASCII mode, where Python's
classes are ECMAScript's) accepts.

Usage: KVSERVE_GRAMMAR_CHECK=path grammar_schema_test.py
Run with Debian's /usr/bin/python3 (python3-jsonschema); exits 77 without it.
"""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed: skipped")
    sys.exit(77)

TOOL = os.environ.get("KVSERVE_GRAMMAR_CHECK", "build/tools/kvserve-grammar-check")
VALUES_PER_SCHEMA = 300

SCHEMAS = [
    {},
    {"type": "object"},
    {"type": "object", "additionalProperties": False,
     "properties": {"name": {"type": "string", "minLength": 1},
                    "age": {"type": "integer", "minimum": 0, "maximum": 150},
                    "address": {"type": "object", "additionalProperties": False,
                                "properties": {"street": {"type": "string"},
                                               "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                                "required": ["street"]}},
     "required": ["name", "age"]},
    {"type": "string", "minLength": 2, "maxLength": 4},
    {"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$"},
    {"type": "string", "pattern": "^[^a]{1,3}$"},
    {"type": "string", "pattern": "^(\"|\\\\|\\n|\u00e9)+$"},
    {"type": "integer", "minimum": -15, "maximum": 120},
    {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 1000},
    {"type": "integer", "minimum": 7},
    {"type": "number", "minimum": -1, "exclusiveMaximum": 2},
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "number", "minimum": -250, "maximum": -3},
    {"enum": ["red", "green", 3, None, True]},
    {"const": "say \"hi\"\n"},
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
    {"type": "array", "prefixItems": [{"const": "op"}], "items": {"type": "number"}, "minItems": 2},
    {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 10}]},
    {"type": ["boolean", "null"]},
    {"$defs": {"point": {"type": "object", "additionalProperties": False,
                         "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                         "required": ["x", "y"]}},
     "type": "object", "additionalProperties": False,
     "properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point"}},
     "required": ["from"]},
    {"definitions": {"node": {"type": "object", "additionalProperties": False,
                              "properties": {"value": {"type": "integer"},
                                             "children": {"type": "array",
                                                          "items": {"$ref": "#/definitions/node"}}},
                              "required": ["value"]}},
     "$ref": "#/definitions/node"},
    {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
     "additionalProperties": {"type": "string"}},
    {"type": "object", "additionalProperties": {"type": "number"}},
    {"type": "object", "additionalProperties": False,
     "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}, "c": {"type": "null"}}},
    {"type": "array", "items": {"type": "object", "additionalProperties": False,
                                "properties": {"color": {"enum": ["red", "blue"]},
                                               "n": {"type": "integer", "minimum": 0}},
                                "required": ["color"]}},
]

ALPHABET = ["a", "b", "z", "-", " ", "0", "7", "\"", "\\", "\n", "\t", "\x01", "\u00e9", "\U0001F600", "/"]
EXTRA_KEYS = ["x", "idx", "i", "name2", "\u00e9t\u00e9", ""]


def resolve(root, schema):
    while isinstance(schema, dict) and "$ref" in schema:
        node = root
        for token in schema["$ref"][2:].split("/") if schema["$ref"] != "#" else []:
            node = node[token.replace("~1", "/").replace("~0", "~")]
        schema = node
    return schema


def any_value(rng, depth=0):
    kind = rng.randrange(8 if depth < 2 else 6)
    if kind == 0:
        return rng.randint(-300, 300)
    if kind == 1:
        return round(rng.uniform(-300, 300), 3)
    if kind == 2:
        return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(5)))
    if kind == 3:
        return rng.choice([True, False])
    if kind == 4:
        return None
    if kind == 5:
        return rng.choice(["red", "op", "say \"hi\"\n", 3, 10])
    if kind == 6:
        return [any_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(EXTRA_KEYS + ["a", "name", "value"]): any_value(rng, depth + 1)
            for _ in range(rng.randrange(3))}


def number_near(rng, schema, integer):
    lo = schema.get("minimum", schema.get("exclusiveMinimum", -300))
    hi = schema.get("maximum", schema.get("exclusiveMaximum", 300))
    if integer or rng.random() < 0.3:
        return rng.randint(int(lo) - 3, int(hi) + 3)
    return round(rng.uniform(lo - 1, hi + 1), 3)


def gen(rng, root, schema, depth=0):
    """A value for `schema`, valid most of the time."""
    schema = resolve(root, schema)
    if schema is True or schema == {} or rng.random() < 0.06 or depth > 4:
        return any_value(rng)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "anyOf" in schema:
        return gen(rng, root, rng.choice(schema["anyOf"]), depth + 1)
    types = schema.get("type", "object")
    kind = rng.choice(types) if isinstance(types, list) else types
    if kind == "object":
        out = {}
        props = schema.get("properties", {})
        required = schema.get("required", [])
        for name, sub in props.items():
            if name in required and rng.random() < 0.97 or rng.random() < 0.5:
                out[name] = gen(rng, root, sub, depth + 1)
        extra = schema.get("additionalProperties", True)
        if extra is not False and (not props or rng.random() < 0.5):
            for key in rng.sample(EXTRA_KEYS, rng.randrange(3)):
                if key not in out and (key or not props):
                    out[key] = any_value(rng) if extra is True else gen(rng, root, extra, depth + 1)
        return out
    if kind == "array":
        prefix = schema.get("prefixItems", [])
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems", len(prefix) + 3)
        if schema.get("items") is False:
            hi = min(hi, len(prefix))
        n = max(0, rng.randint(lo - 1, hi + 1))
        items = schema.get("items", True)
        return [gen(rng, root, prefix[i] if i < len(prefix) else (items if items is not False else True),
                    depth + 1) for i in range(n)]
    if kind == "string":
        if "pattern" in schema:
            return "".join(rng.choice(["a", "b", "-", "z", "0", "\"", "\\", "\n", "\u00e9"])
                           for _ in range(rng.randrange(1, 6)))
        lo = schema.get("minLength", 0)
        hi = schema.get("maxLength", lo + 6)
        return "".join(rng.choice(ALPHABET) for _ in range(max(0, rng.randint(lo - 1, hi + 1))))
    if kind == "integer":
        return number_near(rng, schema, True)
    if kind == "number":
        return number_near(rng, schema, False)
    if kind == "boolean":
        return rng.choice([True, False])
    return None


def ecma_pattern(validator, pattern, instance, schema):
    """jsonschema's pattern with ECMAScript's '$' (Python's also matches before a final newline)."""
    if not validator.is_type(instance, "string"):
        return
    python = pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith("\\$") else pattern
    if not re.search(python, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": ecma_pattern})


def check(tool, schema, texts):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(schema, f)
        path = f.name
    try:
        stdin = "".join(json.dumps(t) + "\n" for t in texts)
        run = subprocess.run([tool, "--json_schema", path], input=stdin, capture_output=True,
                             text=True, timeout=120)
    finally:
        os.unlink(path)
    if run.returncode != 0:
        raise AssertionError(f"{schema}: kvserve-grammar-check failed: {run.stderr}")
    verdicts = run.stdout.split()
    assert len(verdicts) == len(texts), (len(verdicts), len(texts))
    return [v == "match" for v in verdicts]


# (regex, alphabet of the random strings[, strings always tried])
REGEXES = [
    ("[a-z]+(-[a-z]+)*", "ab-z"),
    ("\\d{3}-\\d{2,4}", "019-"),
    ("(ab|c)*d?", "abcd"),
    ("(?:a|bc)+?c{1,2}", "abc"),
    ("[^ab]{2,3}", "abc\n"),
    ("\\w+\\s\\W", "a_1 \t-\n"),
    ("\\D\\S.", "a1 \n-"),
    ("[\\d\\s]*x", "1 \tx"),
    (".{0,3}", "a\n\u00e9"),
    ("a{0}b{2,}c?", "abc"),
    ("(a*)*b", "ab"),
    ("(a|b?)+c", "abc"),
    ("^(x|yz)$|^w+$", "xyzw"),
    ("[+\\-]?\\d+(\\.\\d+)?([eE][+\\-]?\\d+)?", "1.-+e5"),
    ("[\\u00e0-\\u00ff]\\u00e9\\x41", "\u00e0\u00e9A\u00ff"),
    ("\\.\\*\\(\\)[\\]\\-]", ".*()]-", [".*()]", ".*()-", ".*()"]),
]


def check_regexes(rng, failures):
    for regex, alphabet, *always in REGEXES:
        texts = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
                        for _ in range(400)} | set(always[0] if always else []))
        run = subprocess.run([TOOL, "--regex", regex], input="".join(json.dumps(t) + "\n" for t in texts),
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            failures.append(f"regex {regex!r}: kvserve-grammar-check failed: {run.stderr}")
            continue
        verdicts = [v == "match" for v in run.stdout.split()]
        expected = [re.fullmatch(regex, t, re.ASCII) is not None for t in texts]
        for text, got, want in zip(texts, verdicts, expected):
            if got != want:
                failures.append(f"regex {regex!r} on {text!r}: grammar {got}, re {want}")
        print(f"{sum(expected):4d} of {len(texts)} match: regex {regex}")
        if not 0 < sum(expected) < len(texts):
            failures.append(f"regex {regex!r}: the strings do not test both sides")


def main():
    rng = random.Random(24)
    failures = []
    check_regexes(random.Random(25), failures)
    for schema in SCHEMAS:
        validator = Validator(schema)
        values, texts = [], []
        for _ in range(VALUES_PER_SCHEMA):
            value = gen(rng, schema, schema)
            for separators in ((",", ":"), (", ", ": ")):
                values.append(value)
                texts.append(json.dumps(value, ensure_ascii=False, separators=separators))
        matches = check(TOOL, schema, texts)
        valid_count = 0
        for value, text, matched in zip(values, texts, matches):
            valid = validator.is_valid(value)
            valid_count += valid
            if matched and not valid:
                failures.append(f"UNSOUND: {json.dumps(schema)} accepts invalid {text!r}")
            if valid and not matched:
                failures.append(f"INCOMPLETE: {json.dumps(schema)} rejects valid {text!r}")
        share = valid_count / len(values)
        print(f"{share:5.0%} valid, {len(values)} texts: {json.dumps(schema)[:90]}")
        if not 0.1 <= share <= 0.99 and schema not in ({}, {"type": "object"}):
            failures.append(f"{json.dumps(schema)}: {share:.0%} of the values are valid: "
                            "the generator does not test both sides")
    for f in failures[:40]:
        print(f)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print(f"{len(SCHEMAS)} schemas agree with jsonschema, {len(REGEXES)} regexes with re")
    return 0


if __name__ == "__main__":
    sys.exit(main())
