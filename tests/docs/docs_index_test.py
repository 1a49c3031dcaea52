#!/usr/bin/env python3
"""docs/README.md is the index of the documentation (issue 27 item 10): every
page under docs/ is listed there, every page it links exists, and every
relative link of the README and the docs pages points at a file that exists
(a renamed page otherwise leaves dead links behind)."""
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def links(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # Code blocks hold shell and JSON, not links.
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return [m.group(1) for m in LINK.finditer(text) if "://" not in m.group(1)
            and not m.group(1).startswith("mailto:")]


class DocsIndexTest(unittest.TestCase):
    def test_every_page_is_in_the_index(self):
        listed = {os.path.normpath(l) for l in links(os.path.join(DOCS, "README.md"))}
        pages = {p for p in os.listdir(DOCS) if p.endswith(".md") and p != "README.md"}
        self.assertEqual(sorted(pages - listed), [], "pages missing from docs/README.md")

    def test_relative_links_resolve(self):
        sources = [os.path.join(ROOT, "README.md")] + [
            os.path.join(DOCS, p) for p in sorted(os.listdir(DOCS)) if p.endswith(".md")]
        dead = []
        for source in sources:
            for target in links(source):
                if not os.path.exists(os.path.join(os.path.dirname(source), target)):
                    dead.append(f"{os.path.relpath(source, ROOT)} -> {target}")
        self.assertEqual(dead, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
