"""Tests of rust_kernels that need no GPU and no PyTorch: argument checks through objects that
implement __cuda_array_interface__, the variant lists, and the error a call gets past its checks
on a machine without the NVIDIA driver. Run from the installed wheel:
`python3 -m unittest discover -s host/python/tests`."""

import os
import unittest

import rust_kernels
from rust_kernels import native


class FakeCuda:
    """An object that says it is a CUDA array; its memory is never touched by these tests."""

    def __init__(self, shape, typestr="<f4", address=1 << 40, strides=None, readonly=False):
        self.__cuda_array_interface__ = {
            "version": 3,
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (address, readonly),
            "strides": strides,
            "stream": None,
        }


LAUNCH = {"stream": 0, "device": 0}
HAS_DRIVER = any(os.path.exists(p) for p in ("/dev/nvidiactl", "/proc/driver/nvidia/version"))


class ArgumentChecks(unittest.TestCase):
    def assert_refused(self, error, fragment, call, *args, **kwargs):
        with self.assertRaises(error) as caught:
            call(*args, **kwargs)
        self.assertIn(fragment, str(caught.exception))

    def test_host_objects_are_refused_with_what_to_do(self):
        self.assert_refused(TypeError, ".cuda()", native.transpose, [1.0, 2.0], FakeCuda((2, 1)), **LAUNCH)

    def test_a_wrong_element_type_is_named(self):
        self.assert_refused(TypeError, "<f8", native.softmax, FakeCuda((4, 4), "<f8"), FakeCuda((4, 4)), **LAUNCH)

    def test_a_wrong_rank_is_named(self):
        self.assert_refused(ValueError, "3 dimensions", native.transpose, FakeCuda((2, 3, 4)), FakeCuda((4, 3)), **LAUNCH)

    def test_output_shapes_must_match(self):
        self.assert_refused(ValueError, "[3, 2] expected", native.transpose, FakeCuda((2, 3)), FakeCuda((2, 3)), **LAUNCH)
        self.assert_refused(
            ValueError, "[4, 7] expected", native.matmul, FakeCuda((4, 5)), FakeCuda((5, 7)), FakeCuda((7, 4)), **LAUNCH
        )
        self.assert_refused(
            ValueError, "[5, 9] expected", native.matmul, FakeCuda((4, 5)), FakeCuda((6, 9)), FakeCuda((4, 9)), **LAUNCH
        )

    def test_bf16_is_taken_from_torch_tensors_only(self):
        # The array interface has no type string for bfloat16.
        self.assert_refused(
            TypeError, "torch.bfloat16", native.matmul_bf16, FakeCuda((4, 5), "<V2"), FakeCuda((5, 7), "<V2"), FakeCuda((4, 7)), **LAUNCH
        )
        self.assert_refused(TypeError, "<f4", native.histogram, FakeCuda((64,), "<f4"), FakeCuda((256,), "<i4"), **LAUNCH)
        self.assert_refused(ValueError, "[256] expected", native.histogram, FakeCuda((64,), "|u1"), FakeCuda((255,), "<i4"), **LAUNCH)
        qkv = [FakeCuda((1, 2, 8, 64), "<V2") for _ in range(4)]
        self.assert_refused(TypeError, "torch.bfloat16", native.attention, *qkv, **LAUNCH)
        self.assert_refused(TypeError, "torch.bfloat16", native.attention_decode, *qkv, FakeCuda((8,)), **LAUNCH)

    def test_strided_views_are_refused(self):
        transposed = FakeCuda((3, 5), strides=(4, 12))
        self.assert_refused(ValueError, ".contiguous()", native.softmax, transposed, FakeCuda((3, 5)), **LAUNCH)

    def test_read_only_outputs_are_refused(self):
        self.assert_refused(ValueError, "read-only", native.add, FakeCuda((8,)), FakeCuda((8,)), FakeCuda((8,), readonly=True), **LAUNCH)
        self.assert_refused(
            ValueError, "read-only", native.shared_mem_add, FakeCuda((8,)), FakeCuda((8,)), FakeCuda((8,), readonly=True), **LAUNCH
        )

    def test_empty_arrays_are_refused(self):
        self.assert_refused(ValueError, "no elements", native.add, FakeCuda((0,)), FakeCuda((0,)), FakeCuda((0,)), **LAUNCH)

    def test_filters_must_be_square_and_of_a_supported_size(self):
        self.assert_refused(
            ValueError, "[3, 3] expected", native.conv2d, FakeCuda((9, 9)), FakeCuda((3, 5)), FakeCuda((9, 9)), **LAUNCH
        )
        self.assert_refused(
            ValueError, "filter", native.conv2d, FakeCuda((9, 9)), FakeCuda((4, 4)), FakeCuda((9, 9)), **LAUNCH
        )

    def test_sums_check_their_scratch_and_ticket(self):
        self.assert_refused(
            TypeError, "<i4 or <u4", native.sum, FakeCuda((9,)), FakeCuda((4,)), FakeCuda((4,)), FakeCuda((1,)), **LAUNCH
        )
        self.assert_refused(
            ValueError, "[1] expected", native.sum, FakeCuda((9,)), FakeCuda((4,)), FakeCuda((4,)), FakeCuda((2,), "<i4"), **LAUNCH
        )
        self.assert_refused(
            ValueError, "2 dimensions", native.cumsum, FakeCuda((9,)), FakeCuda((9,)), FakeCuda((2, 2)), **LAUNCH
        )
        self.assertGreaterEqual(native.cumsum_scratch_len(1_000_003), 2 * 64)

    def test_norms_check_their_weights_statistics_and_eps(self):
        x, out, launch = FakeCuda((6, 10)), FakeCuda((6, 10)), {"eps": 1e-5, **LAUNCH}
        self.assert_refused(ValueError, "[10] expected", native.layer_norm, x, FakeCuda((9,)), None, out, None, None, **launch)
        self.assert_refused(ValueError, "[6] expected", native.layer_norm, x, None, None, out, FakeCuda((10,)), None, **launch)
        self.assert_refused(ValueError, "read-only", native.rms_norm, x, None, out, FakeCuda((6,), readonly=True), **launch)
        self.assert_refused(ValueError, "eps=", native.rms_norm, x, None, out, None, eps=float("nan"), **LAUNCH)
        self.assert_refused(ValueError, "[6, 10] expected", native.norm_backward, x, FakeCuda((10, 6)), None, None, FakeCuda((6,)), out, **LAUNCH)
        self.assert_refused(ValueError, "[10] expected", native.norm_weight_grad, x, out, None, FakeCuda((6,)), FakeCuda((6,)), None, **LAUNCH)
        self.assertEqual(rust_kernels.variants("layer_norm"), ["layer_norm_three_pass", "layer_norm_registers"])
        self.assertEqual(rust_kernels.variants("rms_norm"), ["rms_norm_three_pass", "rms_norm_registers"])

    def test_fused_norm_gradients_check_their_width_and_scratch(self):
        self.assertEqual(native.norm_partials_len(65536, 4096), 2 * 256 * 4096)
        self.assertEqual(native.norm_partials_len(5, 33), 2 * 5 * 33)
        self.assert_refused(ValueError, "at most 8192", native.norm_partials_len, 4, 8193)
        x, rstd, dw = FakeCuda((6, 10)), FakeCuda((6,)), FakeCuda((10,))
        call = native.norm_backward_fused
        self.assert_refused(ValueError, "[120] expected", call, x, x, None, None, rstd, x, FakeCuda((119,)), dw, None, **LAUNCH)
        wide = FakeCuda((2, 9000))
        self.assert_refused(ValueError, "at most 8192", call, wide, wide, None, None, FakeCuda((2,)), wide, dw, dw, None, **LAUNCH)

    def test_residual_norms_check_their_pairs_and_shapes(self):
        x, out = FakeCuda((6, 10)), FakeCuda((6, 10))
        flags = {"centered": False, "bf16": False, "eps": 1e-6, **LAUNCH}
        call = native.norm_residual
        self.assert_refused(ValueError, "give both", call, x, FakeCuda((6, 10)), None, None, None, out, None, None, **flags)
        self.assert_refused(ValueError, "[6, 10] expected", call, x, FakeCuda((6, 9)), FakeCuda((6, 10)), None, None, out, None, None, **flags)
        self.assert_refused(ValueError, "read-only", call, x, x, FakeCuda((6, 10), readonly=True), None, None, out, None, None, **flags)
        self.assert_refused(ValueError, "[10] expected", call, x, None, None, FakeCuda((6,)), None, out, None, None, **flags)
        self.assert_refused(TypeError, "torch.bfloat16", call, x, None, None, None, None, out, None, None, **{**flags, "bf16": True})

    def test_cross_entropy_checks_its_targets_reduction_and_total(self):
        rows = {"ignore_index": -100, **LAUNCH}
        logits, losses, stats = FakeCuda((6, 10)), FakeCuda((6,)), FakeCuda((6, 2))
        targets, total, ticket = FakeCuda((6,), "<i8"), FakeCuda((2,)), FakeCuda((1,), "<i4")
        forward = native.cross_entropy
        self.assert_refused(TypeError, "<i8", forward, logits, FakeCuda((6,), "<i4"), losses, stats, total, ticket, reduction="mean", **rows)
        self.assert_refused(ValueError, "[6] expected", forward, logits, FakeCuda((5,), "<i8"), losses, stats, total, ticket, reduction="mean", **rows)
        self.assert_refused(ValueError, "reduction=\"avg\"", forward, logits, targets, losses, stats, total, ticket, reduction="avg", **rows)
        self.assert_refused(ValueError, "needs both", forward, logits, targets, losses, stats, None, None, reduction="sum", **rows)
        self.assert_refused(ValueError, "[2] expected", forward, logits, targets, losses, stats, FakeCuda((1,)), ticket, reduction="sum", **rows)
        self.assert_refused(ValueError, "stats: 1 dimensions given", forward, logits, targets, losses, losses, total, ticket, reduction="sum", **rows)
        self.assert_refused(TypeError, "torch.bfloat16", forward, logits, targets, losses, stats, total, ticket, reduction="sum", bf16=True, **rows)
        backward = native.cross_entropy_backward
        self.assert_refused(ValueError, "[6, 2] expected", backward, logits, targets, FakeCuda((6, 3)), FakeCuda((1,)), None, logits, **rows)
        self.assert_refused(ValueError, "[6] expected", backward, logits, targets, stats, FakeCuda((3,)), None, logits, **rows)
        self.assert_refused(ValueError, "one element", backward, logits, targets, stats, FakeCuda((1,)), FakeCuda((2,)), logits, **rows)
        self.assert_refused(ValueError, "[6, 10] expected", backward, logits, targets, stats, FakeCuda((1,)), None, FakeCuda((10, 6)), **rows)
        self.assert_refused(TypeError, "torch.bfloat16", backward, logits, targets, stats, FakeCuda((1,)), None, logits, bf16=True, **rows)
        scale = native.cross_entropy_scale
        self.assert_refused(TypeError, "torch.bfloat16", scale, targets, FakeCuda((1,)), logits, bf16=True, **rows)

    def test_variants_are_listed_and_unknown_ones_refused(self):
        self.assertIn("transpose_vectorized_t64", rust_kernels.variants("transpose"))
        self.assertIn("softmax_registers", rust_kernels.variants("softmax"))
        self.assertIn("reduce_one_pass", rust_kernels.variants("sum"))
        self.assertIn("scan_look_back_ordered", rust_kernels.variants("cumsum"))
        self.assertEqual(rust_kernels.variants("add"), ["vec_add_vectorized", "vec_add"])
        self.assertIn("matmul_bf16_tma", rust_kernels.variants("matmul_bf16"))
        self.assertEqual(
            rust_kernels.variants("matmul_tf32"),
            [
                "matmul_tc_tf32",
                "matmul_tc_wgmma",
                "matmul_tc_small_m1",
                "matmul_tc_small_m4",
                "matmul_tc_small_m8",
                "matmul_tc_small_m16",
                "matmul_tc_wgmma_128x128",
            ],
        )
        self.assertEqual(rust_kernels.variants("row_sum"), ["row_sum_block", "row_sum_warp", "row_sum_split"])
        self.assertEqual(rust_kernels.variants("row_max"), ["row_max_block", "row_max_warp", "row_max_split"])
        self.assertIn("histogram_f32_warp_bins", rust_kernels.variants("histogram_f32"))
        self.assertIn("attention_specialized", rust_kernels.variants("attention"))
        self.assertIn("histogram_vectorized", rust_kernels.variants("histogram"))
        self.assertIn("attention_causal_flash", rust_kernels.variants("attention_causal"))
        self.assertEqual(rust_kernels.variants("attention_any_dim"), ["attention_flash_any_dim"])
        self.assertEqual(rust_kernels.variants("attention_any_dim_causal"), ["attention_causal_flash_any_dim"])
        self.assert_refused(ValueError, "not an operator", rust_kernels.variants, "fft")


@unittest.skipIf(HAS_DRIVER, "this machine has the NVIDIA driver: the GPU tests cover it")
class WithoutDriver(unittest.TestCase):
    def test_a_valid_call_says_the_driver_is_missing(self):
        with self.assertRaises(RuntimeError) as caught:
            native.transpose(FakeCuda((2, 3)), FakeCuda((3, 2)), **LAUNCH)
        self.assertIn("no NVIDIA driver", str(caught.exception))

    def test_the_operators_import_and_the_native_layer_works_without_pytorch(self):
        self.assertTrue(callable(rust_kernels.transpose))
        self.assertEqual(rust_kernels.ALIGNMENT, 256)


if __name__ == "__main__":
    unittest.main()
