#!/usr/bin/env python3
"""deploy/gpu_profile_table.py on a synthetic Nsight Compute raw CSV shaped
like `ncu --csv --page raw --metrics gpu__time_duration.sum` output: steps
are cut at SampleKernel, the first two dropped, the median step tabulated
and split into GEMM, attention and the rest; --whole sums everything."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy",
                      "gpu_profile_table.py")
HEADER = '"ID","Process ID","Kernel Name","Grid Size","Block Size","gpu__time_duration.sum"\n'
UNITS = '"","","","","","nsecond"\n'


def launch(i, name, ns, grid="(1, 1, 1)"):
    return f'"{i}","1","{name}","{grid}","(128, 1, 1)","{ns:,}"\n'


def step(i, attention_ns):
    rows = [launch(i, "nvjet_sm90_tst_128x8_64x12_2x1_v_bz_TNT", 20000, "(2, 64, 1)"),
            launch(i + 1, "void kvserve::cuda::flash::FlashDecodeKernel<__nv_bfloat16, 64, 16>"
                   "(kvserve::cuda::flash::Args<__nv_bfloat16>)", attention_ns),
            launch(i + 2, "void kvserve::(anonymous namespace)::RmsNormRowKernel<__nv_bfloat16>"
                   "(int)", 1500),
            launch(i + 3, "void kvserve::(anonymous namespace)::SampleKernel(SampleKernelArgs)",
                   4000)]
    return rows


class GpuProfileTableTest(unittest.TestCase):
    def run_table(self, text, *flags):
        with tempfile.TemporaryDirectory() as tmp:
            csv_path, json_path = os.path.join(tmp, "p.csv"), os.path.join(tmp, "p.json")
            with open(csv_path, "w") as f:
                f.write("==PROF== Connected to process\n" + text)
            out = subprocess.run([sys.executable, SCRIPT, csv_path, "--json", json_path, *flags],
                                 capture_output=True, text=True)
            report = json.load(open(json_path)) if os.path.exists(json_path) else None
            return out, report

    def test_median_step_split_into_categories(self):
        rows = [HEADER, UNITS]
        # Prefill-ish first step and the first decode are dropped; then
        # steps with attention 3, 5 and 9 us: the median is 5.
        for i, attention_ns in enumerate([900000, 50000, 3000, 9000, 5000]):
            rows += step(10 * i, attention_ns)
        out, report = self.run_table("".join(rows))
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual(report["steps"], 3)
        self.assertEqual(report["split_us"], {"gemm": 20.0, "attention": 5.0, "other": 5.5})
        self.assertAlmostEqual(report["total_us"], 30.5)
        names = [k["kernel"] for k in report["kernels"]]
        self.assertIn("cuda::flash::FlashDecodeKernel<__nv_bfloat16, 64, 16>", names)

    def test_whole_capture_and_empty_input(self):
        rows = [HEADER, UNITS] + step(0, 7000)
        out, report = self.run_table("".join(rows), "--whole")
        self.assertEqual(out.returncode, 0, out.stdout)
        self.assertAlmostEqual(report["total_us"], 32.5)
        out, report = self.run_table("no csv here\n")
        self.assertEqual(out.returncode, 1)
        self.assertIn("no kernel rows", out.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
