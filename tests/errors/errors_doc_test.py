#!/usr/bin/env python3
"""Keeps docs/errors.md honest: every row of its tables with a "tests"
column names at least one test, and each named test exists.

  `Suite.Name`            a GoogleTest case: TEST(Suite, Name) or TEST_F/TEST_P
  `Suite.Name ("label")`  ... whose file also holds the label of a table-driven case
  `file.py:name`          a Python test file under tests/ holding `def name(` or "name"
  `file.py:Class.method`  ... holding `class Class` and `def method(`
  `file.py:method ("label")`  ... and the label as a string

A row whose tests are "pending" (work on another branch) is allowed.
Env: KVSERVE_SOURCE_DIR (the repository root)."""
import os
import pathlib
import re
import unittest

ROOT = pathlib.Path(os.environ.get("KVSERVE_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
REF = re.compile(r'`([^`]+)`')


def table_rows(text):
    """Yields (line number, last cell) of each body row in tables headed "... | tests |"."""
    lines = text.splitlines()
    in_tests_table = False
    for number, line in enumerate(lines, 1):
        if not line.startswith("|"):
            in_tests_table = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if number < len(lines) and lines[number].startswith("|---"):
            in_tests_table = cells[-1] == "tests"  # a header row
            continue
        if line.startswith("|---") or not in_tests_table:
            continue
        yield number, cells[-1]


class ErrorsDocTest(unittest.TestCase):
    def setUp(self):
        self.cc = {p: p.read_text(errors="replace") for p in (ROOT / "tests").rglob("*.cc")}
        self.py = {p.name: p.read_text(errors="replace") for p in (ROOT / "tests").rglob("*.py")}

    def check(self, ref):
        """Returns why `ref` names no existing test, or None."""
        label = None
        match = re.fullmatch(r'(.+?) \("([^"]+)"\)', ref)
        if match:
            ref, label = match.groups()
        if ":" in ref:
            file, name = ref.split(":", 1)
            text = self.py.get(file)
            if text is None:
                return f"no tests/**/{file}"
            if "." in name:
                cls, method = name.split(".", 1)
                if f"class {cls}" not in text or f"def {method}(" not in text:
                    return f"{file} has no {cls}.{method}"
            elif f"def {name}(" not in text and f'"{name}"' not in text:
                return f"{file} has neither def {name}( nor the row \"{name}\""
            if label and f'"{label}"' not in text:
                return f"{file} has no case \"{label}\""
            return None
        suite, _, name = ref.partition(".")
        pattern = re.compile(rf"TEST(_F|_P)?\(\s*{re.escape(suite)},\s*{re.escape(name)}\)")
        files = [text for text in self.cc.values() if pattern.search(text)]
        if not files:
            return f"no GoogleTest case {suite}.{name}"
        if label and not any(f'"{label}"' in text for text in files):
            return f"{suite}.{name}'s file has no case \"{label}\""
        return None

    def test_every_row_names_tests_that_exist(self):
        doc = (ROOT / "docs" / "errors.md").read_text()
        rows = list(table_rows(doc))
        self.assertGreater(len(rows), 30)
        for number, cell in rows:
            with self.subTest(line=number):
                if cell == "pending":
                    continue
                refs = REF.findall(cell)
                self.assertTrue(refs, f"docs/errors.md:{number} names no test")
                for ref in refs:
                    self.assertIsNone(self.check(ref), f"docs/errors.md:{number}: `{ref}`")


if __name__ == "__main__":
    unittest.main(verbosity=2)
