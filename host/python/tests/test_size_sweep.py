"""The size sweep that bench_sizes.py runs: its sizes, its summary over the issue's domain and its
refusals. Needs no GPU and no PyTorch."""

import importlib.util
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

# Loaded from its file, not through sys.path: host/python on the path would shadow the installed
# rust_kernels (the wheel, with its native module) for the tests that run after these.
_script = Path(__file__).resolve().parents[1] / "bench_sizes.py"
_spec = importlib.util.spec_from_file_location("bench_sizes", _script)
bench_sizes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_sizes)


class SizeSweep(unittest.TestCase):
    def test_whole_array_sizes_are_every_power_of_two_and_an_odd_size_between(self):
        sizes = bench_sizes.whole_sizes(30)
        self.assertEqual(sizes[:3], [1 << 10, 3 * 512 + 1, 1 << 11])
        self.assertEqual(sizes[-1], 1 << 30)
        self.assertEqual(len(sizes), 2 * 21 - 1)
        self.assertTrue(all(n % 2 == 1 for n in sizes[1::2]))

    def test_row_shapes_cover_widths_1_to_256k_at_each_total_that_fits(self):
        shapes = bench_sizes.row_shapes(30)
        for total_log2 in bench_sizes.ROW_TOTALS_LOG2:
            total = 1 << total_log2
            widths = {c for r, c in shapes if total // 2 < r * c <= total}
            self.assertIn(1, widths)
            self.assertIn(50_257, widths)
            if total >= 1 << 18:
                self.assertIn(1 << 18, widths)
        # A smaller largest size drops the totals above it.
        self.assertTrue(all(r * c <= 1 << 20 for r, c in bench_sizes.row_shapes(20)))

    def test_the_summary_keeps_to_the_domain_and_counts_points_below_parity(self):
        def row(op, rows, cols, speed):
            return {"op": op, "rows": rows, "cols": cols, "speed": speed}

        summary = bench_sizes.summary(
            [
                row("sum", 1, 1 << 10, 0.1),  # below 2^16 elements: outside
                row("sum", 1, 1 << 16, 0.9),
                row("sum", 1, 1 << 20, 1.6),
                row("row_sum", 1 << 16, 16, 0.2),  # narrower than 32: outside
                row("row_sum", 1 << 11, 32, 1.2),
            ]
        )
        self.assertEqual(summary["sum"]["points"], 2)
        self.assertAlmostEqual(summary["sum"]["geomean_speed"], 1.2)
        self.assertEqual(summary["sum"]["worst_shape"], [1, 1 << 16])
        self.assertEqual(summary["sum"]["below_1"], 1)
        self.assertEqual(summary["row_sum"]["points"], 1)
        self.assertEqual(summary["row_sum"]["below_1"], 0)

    def test_bad_flags_and_a_file_it_did_not_write_are_refused_before_any_work(self):
        with tempfile.TemporaryDirectory() as folder:
            theirs = Path(folder) / "theirs.json"
            theirs.write_text(json.dumps({"mine": True}))
            for args, message in [
                (["--ops", "sum,max"], "--ops takes"),
                (["--max-log2", "31"], "--max-log2 takes"),
                (["--json", str(theirs)], "is not this script's"),
            ]:
                run = subprocess.run([sys.executable, str(_script), *args], capture_output=True, text=True)
                self.assertEqual(run.returncode, 2, args)
                self.assertIn(message, run.stderr)
            self.assertEqual(json.loads(theirs.read_text()), {"mine": True})


if __name__ == "__main__":
    unittest.main()
