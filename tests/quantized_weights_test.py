#!/usr/bin/env python3
"""GGUF block-format weights kept as stored on the CPU and multiplied with
int8-rounded activations (docs/quantized_weights.md), against NumPy:

1. the kernel: each block format's tensors (tools/write_random_gguf.py files
   of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) times random rows,
   through kvserve-quant-linear with every instruction set this CPU runs,
   against float64 over gguf-py's dequantized weights and the activations
   rounded by the reference's own ggml rules (tests/reference/
   llama_gguf_numpy.py round_q8_0 / round_q8_k). Both sides round the same
   float32 rows, so the codes must agree exactly and the sums to float32
   accumulation error: bound 2·(k/4 + k/16 + 8)·ε·Σ|w·x̂| per output;
2. whole models (the same files, llama-quantize's Q4_K_M mix, and BF16,
   whose activations kvserve keeps in float32 where llama.cpp rounds them
   to bfloat16 on AVX512_BF16 CPUs): kvserve-
   logits keeps the weights as stored (its weight bytes are the file's) and
   its logits follow the NumPy forward that rounds the same way. Here the
   two sides' activations differ by float32 vs float64 rounding, so now and
   then one activation lands on the other side of a rounding boundary and
   moves the later logits by ~1-2% of their range (seen: ≤ 0.09 on logits of
   ~4.4, median 0.04); the bound is 5% of the largest logit (median 2.5%):
   loose for rounding, tight for any layout or scale error (O(100%));
3. --cpu_activations=float32 keeps the exact path: every format then matches
   the unrounded reference to 2e-5 of the largest logit, as
   cpu_weight_dtypes_test does for F32 / BF16 / Q8_0.

Run by ctest with the reference venv's python, KVSERVE_LOGITS and
KVSERVE_QUANT_LINEAR set."""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from llama_gguf_numpy import LlamaGgufReference, round_q8_0, round_q8_k  # noqa: E402
import write_random_gguf  # noqa: E402
from gguf import GGMLQuantizationType as Q, GGUFReader  # noqa: E402
from gguf.quants import dequantize  # noqa: E402

FILE_TYPES = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k",
              "q4_k_m"]
MODEL_TYPES = FILE_TYPES + ["bf16"]  # float32 activations (gemm_bf16_packed.h)
K_QUANTS = {Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K}
PROMPT = [1] + [(17 * i + 3) % 317 + 3 for i in range(79)]
EPS32 = 2.0 ** -24


class QuantizedWeightsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.files = {}
        for t in MODEL_TYPES:
            path = os.path.join(cls.dir.name, f"tiny256-{t}.gguf")
            write_random_gguf.write(path, "tiny256", t, seed=5)
            cls.files[t] = path

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def kernel_outputs(self, path, name, x):
        xfile = os.path.join(self.dir.name, "x.f32")
        x.astype(np.float32).tofile(xfile)
        prefix = os.path.join(self.dir.name, "y")
        out = subprocess.run([os.environ["KVSERVE_QUANT_LINEAR"], f"--model={path}",
                              f"--tensor={name}", f"--x={xfile}", f"--rows={x.shape[0]}",
                              f"--out={prefix}"], check=True, capture_output=True, text=True)
        return {isa: np.fromfile(f"{prefix}.{isa}.f32", dtype=np.float32).reshape(x.shape[0], -1)
                for isa in out.stdout.split()}

    def test_kernel_matches_numpy_for_every_format_and_instruction_set(self):
        rng = np.random.default_rng(11)
        seen = set()
        for t in FILE_TYPES:
            reader = GGUFReader(self.files[t])
            for tensor in reader.tensors:
                if tensor.tensor_type in (Q.F32, Q.F16, Q.BF16) or tensor.name.startswith("token_embd"):
                    continue
                key = (tensor.tensor_type, int(tensor.shape[0]))
                if key in seen:
                    continue
                seen.add(key)
                k = int(tensor.shape[0])
                w = np.asarray(dequantize(tensor.data, tensor.tensor_type), dtype=np.float64)
                w = w.reshape(-1, k)
                x = rng.standard_normal((5, k)).astype(np.float32)
                x[:, ::37] *= 9  # outliers set some blocks' scales
                x[3] = 0  # a zero row
                rounded = round_q8_k(x) if tensor.tensor_type in K_QUANTS else round_q8_0(x)
                ref = rounded @ w.T
                bound = 2 * (k / 4 + k / 16 + 8) * EPS32 * (np.abs(rounded) @ np.abs(w).T) + 1e-30
                outputs = self.kernel_outputs(self.files[t], tensor.name, x)
                self.assertIn("scalar", outputs)
                for isa, y in outputs.items():
                    err = np.abs(y - ref)
                    worst = float((err / bound).max())
                    print(f"{tensor.tensor_type.name} k={k} {isa}: max |Δ| {err.max():.2e}, "
                          f"{worst:.3f} of the bound")
                    self.assertTrue(np.all(err <= bound),
                                    f"{tensor.name} ({tensor.tensor_type.name}) with {isa}: "
                                    f"max |Δ| {err.max():.3e}")
        self.assertEqual({t for t, _ in seen},  # every format was checked
                         {Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K,
                          Q.Q6_K})

    def logits(self, path, activations):
        out = os.path.join(self.dir.name, "logits.npy")
        run = subprocess.run([os.environ["KVSERVE_LOGITS"], f"--model={path}", "--dtype=auto",
                              f"--cpu_activations={activations}",
                              "--token_ids=" + ",".join(map(str, PROMPT)), f"--out={out}"],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        weight_bytes = int([line for line in run.stderr.splitlines()
                            if line.startswith("weight bytes:")][0].split()[-1])
        return np.load(out), weight_bytes

    def test_models_keep_their_blocks_and_follow_the_rounding_reference(self):
        for t in MODEL_TYPES:
            path = self.files[t]
            stored = sum(int(x.n_bytes) if len(x.shape) == 2 else 4 * int(x.n_elements)
                         for x in GGUFReader(path).tensors)
            got, weight_bytes = self.logits(path, "auto")
            self.assertEqual(weight_bytes, stored, f"{t}: the matrices were not kept as stored")
            ref_model = LlamaGgufReference(path, round_activations=True, bf16_activations=False)
            ref = ref_model.forward(PROMPT, ref_model.new_cache(), 0)
            err = np.abs(got - ref).max(axis=1)
            scale = np.abs(ref).max()
            print(f"{t} auto: max |Δ| {err.max():.2e}, median {np.median(err):.2e}, "
                  f"largest logit {scale:.2f}, {weight_bytes} weight bytes")
            self.assertLessEqual(err.max(), 0.05 * scale, t)
            self.assertLessEqual(np.median(err), 0.025 * scale, t)

    def test_float32_activations_keep_the_exact_path(self):
        for t in MODEL_TYPES:
            got, _ = self.logits(self.files[t], "float32")
            ref_model = LlamaGgufReference(self.files[t])
            ref = ref_model.forward(PROMPT, ref_model.new_cache(), 0)
            err = np.abs(got - ref).max()
            print(f"{t} float32: max |Δ| {err:.2e}")
            self.assertLessEqual(err, 2e-5 * np.abs(ref).max(), t)


if __name__ == "__main__":
    unittest.main(verbosity=2)
