"""The model-shape suite that bench_models.py reads: it loads, every product is a valid shape, and
the shapes the matrix-product issue names are in it. Needs no GPU and no PyTorch."""

import importlib.util
import tempfile
import unittest
from pathlib import Path

# Loaded from its file, not through sys.path: host/python on the path would shadow the installed
# rust_kernels (the wheel, with its native module) for the tests that run after these.
_spec = importlib.util.spec_from_file_location("bench_models", Path(__file__).resolve().parents[1] / "bench_models.py")
bench_models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_models)


class ModelShapes(unittest.TestCase):
    def test_the_suite_loads_with_its_models_layers(self):
        path = bench_models.shapes_file()
        self.assertIsNotNone(path, "benches/shapes/models.json (or model_shapes.json beside the script)")
        shapes = bench_models.load_shapes(path)
        self.assertGreaterEqual(len(shapes), 60)
        for (m, n, k), uses in shapes.items():
            self.assertTrue(m >= 1 and n >= 1 and k >= 1, (m, n, k))
            self.assertTrue(uses)
        # Decode and prefill, an LM head with a vocabulary that is not a multiple of 8, a ViT batch.
        for shape in [(1, 6144, 4096), (8192, 28672, 4096), (1024, 50257, 768), (12608, 768, 768), (16, 4096, 14336)]:
            self.assertIn(shape, shapes)

    def test_a_malformed_suite_is_refused(self):
        with tempfile.TemporaryDirectory() as folder:
            bad = Path(folder) / "bad.json"
            bad.write_text('{"models": [{"name": "x", "tokens": [0], "layers": [{"name": "y", "n": 8, "k": 8}]}]}')
            with self.assertRaises(ValueError):
                bench_models.load_shapes(bad)

    def test_dtypes_are_checked(self):
        self.assertEqual(bench_models.parse_dtypes("bf16, f32"), ["bf16", "f32"])
        with self.assertRaises(Exception):
            bench_models.parse_dtypes("fp8")

    def test_tokens_are_checked(self):
        self.assertEqual(bench_models.parse_tokens("16, 1"), [16, 1])
        for bad in ["x", ",", "1.5"]:
            with self.assertRaises(Exception, msg=bad):
                bench_models.parse_tokens(bad)


if __name__ == "__main__":
    unittest.main()
