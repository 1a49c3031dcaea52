#!/usr/bin/env python3
"""The CPU backend's weight storage dtypes (docs/cpu_weight_dtypes.md)
against an independent NumPy reference (tests/reference/llama_gguf_numpy.py:
float64 over the weights as the `gguf` package reads them).

One random tiny Llama (tools/write_random_gguf.py: GQA, untied LM head) is
written as F32, BF16 and Q8_0 GGUF files, and kvserve-logits runs each with
the --dtype that keeps or converts it:

  file  --dtype    kvserve stores   reference over
  f32   float32    float32          the f32 file
  bf16  auto       bfloat16         the bf16 file (values widened exactly)
  q8_0  auto       Q8_0             the q8_0 file (d·q, exact in float32)
  f32   bfloat16   bfloat16         the bf16 file (gguf-py rounds to nearest
                                    even, as kvserve's FloatToBFloat16 does)
  q8_0  float32    float32          the q8_0 file

Two prompts: 7 tokens (every product through the small-M kernel) and 80
tokens (above every cut-over, 16 for float32 and 64 for bf16 / Q8_0 weights:
sgemm, over float32 panels converted from bf16 / Q8_0). The
weights kvserve reports (`weight bytes:` on stderr) show which storage it
chose: bf16 half of float32, Q8_0 34/128 of it, for the matrices.

Tolerance: both sides multiply the same stored values; kvserve accumulates in
float32 (k ≤ 256 terms per product: ~√k·ε ≈ 2e-6 relative per product,
through 2 layers), the reference in float64. Seen: max |Δ| ≤ 6e-6 on logits
of magnitude ~4; the bound is 2e-5 of the largest logit (~8e-5), 13× above
that, and the bf16 rounding of the weights moves the logits by more than
10× the bound (test_the_tolerance_separates_bf16_rounding).

Run by ctest with the reference venv's python, KVSERVE_LOGITS set."""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from llama_gguf_numpy import LlamaGgufReference  # noqa: E402
import write_random_gguf  # noqa: E402

PROMPTS = {"short": [1, 5, 300, 7, 9, 260, 11],
           "long": [1] + [(17 * i + 3) % 317 + 3 for i in range(79)]}
RELATIVE_TOLERANCE = 2e-5


class CpuWeightDTypesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.files, cls.refs = {}, {}
        for t in ("f32", "bf16", "q8_0"):
            cls.files[t] = os.path.join(cls.dir.name, f"tiny-{t}.gguf")
            write_random_gguf.write(cls.files[t], "tiny", t, seed=7)
            cls.refs[t] = LlamaGgufReference(cls.files[t])
        cls.expected = {}
        for t, ref in cls.refs.items():
            for name, ids in PROMPTS.items():
                cls.expected[t, name] = ref.forward(ids, ref.new_cache(), 0)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def kvserve(self, file_type, dtype, prompt):
        out = os.path.join(self.dir.name, f"{file_type}-{dtype}-{prompt}.npy")
        run = subprocess.run(
            # float32 activations: the storage dtypes' exact path (the default
            # rounds Q8_0's activations to int8: quantized_weights_test.py).
            [os.environ["KVSERVE_LOGITS"], f"--model={self.files[file_type]}", f"--dtype={dtype}",
             "--cpu_activations=float32",
             "--token_ids=" + ",".join(map(str, PROMPTS[prompt])), f"--out={out}"],
            capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        weight_bytes = int(run.stderr.split("weight bytes: ")[1].split()[0])
        return np.load(out).astype(np.float64), weight_bytes

    def check(self, file_type, dtype, reference_type):
        sizes = []
        for prompt in PROMPTS:
            got, weight_bytes = self.kvserve(file_type, dtype, prompt)
            want = self.expected[reference_type, prompt]
            err = np.abs(got - want).max()
            bound = RELATIVE_TOLERANCE * np.abs(want).max()
            print(f"{file_type} --dtype {dtype} {prompt}: max |Δ| {err:.2e} (bound {bound:.2e}), "
                  f"{weight_bytes} weight bytes")
            self.assertLessEqual(err, bound, f"{file_type} --dtype {dtype}, {prompt} prompt")
            sizes.append(weight_bytes)
        return sizes[0]

    def test_each_storage_matches_the_reference_over_its_values(self):
        f32 = self.check("f32", "float32", "f32")
        self.assertEqual(self.check("q8_0", "float32", "q8_0"), f32)
        bf16 = self.check("bf16", "auto", "bf16")
        self.assertEqual(self.check("f32", "bfloat16", "bf16"), bf16)
        q8_0 = self.check("q8_0", "auto", "q8_0")
        # The 5 norms (F32, 128 floats each) are kept as float32 by every mode.
        norms = 5 * 128 * 4
        self.assertEqual(bf16 - norms, (f32 - norms) // 2)
        self.assertEqual(q8_0 - norms, (f32 - norms) // 4 // 32 * 34)

    def test_the_tolerance_separates_bf16_rounding(self):
        # float32 weights against the bf16 reference must fail the bound, or
        # the checks above could not tell the storages apart.
        got, _ = self.kvserve("f32", "float32", "short")
        want = self.expected["bf16", "short"]
        self.assertGreater(np.abs(got - want).max(), 10 * RELATIVE_TOLERANCE * np.abs(want).max())


if __name__ == "__main__":
    unittest.main(verbosity=2)
