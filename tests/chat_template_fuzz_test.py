#!/usr/bin/python3
"""Random expressions and template structures: kvserve's Jinja interpreter
against Python jinja2.

Builds seeded random `{{ expression }}` templates from literals, variables,
operators, filters, tests and inline ifs (up to three levels deep), renders
each with kvserve-render-template and with jinja2 configured as transformers
configures it (chat_template_differential_test.make_environment), and requires
identical text or an error from both. Found: filters over falsy values,
int * list, `%` with a list argument, and (structures) jinja2's compile-time
scoping.

Usage: chat_template_fuzz_test.py --tool PATH [--structure] [--seeds 1 2 3] [--count 300]
"""
import argparse
import copy
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chat_template_differential_test as differential  # noqa: E402

ATOMS = ["1", "0", "-2", "2.5", "1.0", "'a'", "'ab c'", "''", "none", "true", "false", "[1, 2]", "[]",
         "{'k': 1}", "{}", "x", "s", "xs", "d", "missing", "d.k", "d['k']", "xs[0]", "xs[-1]", "s[1:]",
         "(1, 2)", "u", "s[::-2]", "d.n // 3", "s.split()", "s.upper()", "d.get('n')", "d.items() | list"]
BINARY = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">=", "in", "not in", "and", "or"]
FILTERS = ["length", "list", "first", "last", "upper", "lower", "trim", "string", "tojson", "join(',')",
           "default('z')", "reverse | list", "sort | list", "unique | list", "int", "float", "abs", "title",
           "capitalize", "items | list", "select | list", "dictsort", "sum", "max", "min",
           "replace('a', 'b')", "batch(2) | list", "map('string') | list", "tojson(indent=1)", "count",
           "selectattr('k') | list", "reject('none') | list", "round(1)", "indent(2)", "center"]
TESTS = ["defined", "none", "string", "number", "mapping", "iterable", "sequence", "odd", "even", "integer",
         "float", "boolean", "true", "callable", "lower", "upper", "in [1, 'a']", "eq 1", "divisibleby 2"]
CONTEXT = {"n": 2, "v": "V", "x": 3, "s": "héllo Wörld", "xs": [3, "b", 1.5, None], "d": {"k": "v", "n": 2}, "u": "  ß ǅ  "}


def expression(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.3:
        return rng.choice(ATOMS)
    if r < 0.55:
        return f"({expression(rng, depth + 1)} {rng.choice(BINARY)} {expression(rng, depth + 1)})"
    if r < 0.75:
        return f"({expression(rng, depth + 1)} | {rng.choice(FILTERS)})"
    if r < 0.85:
        return f"({expression(rng, depth + 1)} is {rng.choice(['', 'not '])}{rng.choice(TESTS)})"
    if r < 0.92:
        return f"({expression(rng, depth + 1)} if {expression(rng, depth + 1)} else {expression(rng, depth + 1)})"
    return f"(not {expression(rng, depth + 1)})"


WHITESPACE = ["", " ", "  ", "\n", "\n  ", "  \n", "\n\n", "\t", " \n \n  "]


def structure(rng, depth=0):
    """Random text, tags and comments with random whitespace and whitespace
    control ({%- -%} {%+ +%}), nested if/else and for: the lexer's trim_blocks
    and lstrip_blocks rules, and jinja2's compile-time scoping (`set n` where
    loops before and after read the caller's `n`)."""
    def ws():
        return rng.choice(WHITESPACE)

    def tag(kind, body):
        close = {"{": "}", "%": "%", "#": "#"}[kind]
        signs = ["", "", "-", "+"] if kind != "{" else ["", "", "-"]
        return ("{" + kind + rng.choice(signs) + rng.choice(["", " "]) + body + rng.choice(["", " "]) +
                rng.choice(signs) + close + "}")

    parts = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.25 or depth > 2:
            parts.append(ws() + rng.choice(["a", "b c", "x", ""]) + ws())
        elif r < 0.45:
            parts.append(ws() + tag("{", rng.choice(["v", "loop.index", "'t'", "n ~ '!'"]).replace(
                "loop.index", "loop.index" if depth else "n")) + ws())
        elif r < 0.55:
            parts.append(ws() + tag("#", " note ") + ws())
        elif r < 0.75:
            else_part = tag("%", "else") + structure(rng, depth + 1) if rng.random() < 0.4 else ""
            parts.append(ws() + tag("%", "if " + rng.choice(["true", "false", "n > 1"])) +
                         structure(rng, depth + 1) + else_part + tag("%", "endif") + ws())
        elif r < 0.9:
            parts.append(ws() + tag("%", "for v in [1, 2]") + structure(rng, depth + 1) + tag("%", "endfor") + ws())
        else:
            parts.append(ws() + tag("%", "set n = " + rng.choice(["1", "n", "3"])) + ws())
    return "".join(parts)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--structure", action="store_true",
                        help="random whitespace and tag structure instead of expressions")
    args = parser.parse_args()

    env = differential.make_environment()
    total = identical = both_error = 0
    failures = []
    with tempfile.TemporaryDirectory() as work:
        context_path = os.path.join(work, "context.json")
        with open(context_path, "w") as f:
            json.dump([CONTEXT], f)
        template_path = os.path.join(work, "t.jinja")
        for seed in args.seeds:
            rng = random.Random(seed)
            for _ in range(args.count):
                source = structure(rng) if args.structure else "{{ " + expression(rng) + " }}"
                with open(template_path, "w") as f:
                    f.write(source)
                proc = subprocess.run([args.tool, "--batch", template_path, context_path], capture_output=True,
                                      timeout=60)
                total += 1
                if proc.returncode != 0:
                    failures.append(f"{source}: tool failed: {proc.stderr.decode(errors='replace')}")
                    continue
                got = json.loads(proc.stdout)[0]
                try:
                    # A copy: `xs | indent` extends the list in place before failing.
                    want = {"text": env.from_string(source).render(**copy.deepcopy(CONTEXT))}
                except Exception as e:  # any jinja2 or Python error inside the template
                    want = {"error": f"{type(e).__name__}: {e}"}
                if "text" in want and "text" in got and want["text"] == got["text"]:
                    identical += 1
                elif "error" in want and "error" in got:
                    both_error += 1
                else:
                    failures.append(f"{source}\n  jinja2:  {want}\n  kvserve: {got}")
    kind = "templates" if args.structure else "expressions"
    print(f"chat template fuzz: {total} random {kind} (seeds {args.seeds}); identical text {identical}, "
          f"error from both {both_error}, mismatches {len(failures)}")
    for failure in failures[:20]:
        print("MISMATCH", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
