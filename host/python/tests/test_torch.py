"""The operators on a GPU, against PyTorch's own results (run on the GPU runner; elsewhere every
test is reported as skipped, with the reason). Inputs are random, outputs compared in float64 with
error bounds that follow the arithmetic; transposes move bits and must be exact."""

import unittest

try:
    import torch
except ImportError:
    torch = None

import rust_kernels

GPU = torch is not None and torch.cuda.is_available()
REASON = "needs PyTorch with a CUDA GPU" if torch is not None else "needs PyTorch (not installed)"
#: float32's unit roundoff.
U = 2.0**-24


def rand(*shape, seed=0):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return torch.rand(*shape, device="cuda", generator=generator) * 2 - 1


def grid(n, seed=0):
    """Random multiples of 2^-7 in [-1, 1): every partial sum of fewer than 2^17 of them is exact."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randint(-128, 128, (n,), device="cuda", generator=generator).float() / 128


def softmax_bound(x, want):
    """The host's tolerance (host/src/families/softmax.rs, check_rows): each e^x within 2^-21 plus
    |x - max|·2u, the row's sum within its chain of additions · 9u, 10u for the rest."""
    cols = x.shape[-1]
    share = max(-(-cols // 256), -(-min(cols, 1024) // 32))
    below_max = x.double().amax(dim=-1, keepdim=True) - x.double()
    return want * ((share + 40) * 9 * U + below_max * 2 * U + 10 * U) + torch.finfo(torch.float32).tiny


@unittest.skipUnless(GPU, REASON)
class AgainstPyTorch(unittest.TestCase):
    SHAPES = [(1, 1), (1, 37), (37, 1), (31, 33), (33, 31), (64, 64), (257, 509), (1024, 520), (1000, 3)]

    def test_transpose_is_exact_on_edge_shapes_in_every_variant(self):
        for variant in ["auto"] + rust_kernels.variants("transpose"):
            for rows, cols in self.SHAPES:
                x = rand(rows, cols, seed=rows * cols)
                self.assertTrue(torch.equal(rust_kernels.transpose(x, variant=variant), x.T), f"{variant} {rows}x{cols}")

    def test_softmax_within_its_bound(self):
        for variant in ["auto"] + rust_kernels.variants("softmax"):
            for rows, cols in self.SHAPES + [(3, 8192), (2, 8193), (2, 16385), (1, 40000), (3, 50257), (2, 65536), (3, 70001), (2, 128256)]:
                x = rand(rows, cols, seed=cols) * 8
                got = rust_kernels.softmax(x, variant=variant).double()
                want = torch.softmax(x.double(), dim=-1)
                self.assertTrue(bool(((got - want).abs() <= softmax_bound(x, want)).all()), f"{variant} {rows}x{cols}")

    def test_matmul_within_its_bound(self):
        for variant in ["auto"] + rust_kernels.variants("matmul"):
            for m, n, k in [(1, 1, 1), (31, 33, 17), (64, 48, 32), (129, 65, 257), (97, 1, 1000), (1, 513, 77), (256, 256, 4096)]:
                a, b = rand(m, k, seed=m), rand(k, n, seed=n)
                got = rust_kernels.matmul(a, b, variant=variant).double()
                want = a.double() @ b.double()
                bound = (k + 2) * U * (a.double().abs() @ b.double().abs())
                self.assertTrue(bool(((got - want).abs() <= bound).all()), f"{variant} {m}x{n}x{k}")

    def test_matmul_bf16_within_its_bound(self):
        # Products of two bf16 are exact in f32: only the f32 sums are allowed for. On an H100/H200
        # the TMA kernels read shapes with k or n not a multiple of 8 from row-padded copies.
        shapes = [(1, 1, 1), (31, 33, 17), (64, 136, 200), (130, 72, 256), (129, 65, 257), (8, 200, 96), (256, 512, 4096)]
        for variant in ["auto"] + rust_kernels.variants("matmul_bf16"):
            for m, n, k in shapes:
                a = rand(m, k, seed=m).to(torch.bfloat16)
                b = rand(k, n, seed=n).to(torch.bfloat16)
                try:
                    got = rust_kernels.matmul_bf16(a, b, variant=variant).double()
                except RuntimeError as e:
                    # The wgmma kernels run on compute capability 9.0 alone, and say so.
                    self.assertIn("sm_90a", str(e))
                    self.assertNotEqual(torch.cuda.get_device_capability(), (9, 0), f"{variant} refused on sm_90")
                    continue
                want = a.double() @ b.double()
                bound = (k + 2) * U * (a.double().abs() @ b.double().abs())
                self.assertTrue(bool(((got - want).abs() <= bound).all()), f"{variant} {m}x{n}x{k}")

    def test_matmul_bf16_rounded_within_its_bound(self):
        # C rounded to bf16: the f32 sums' bound, then one rounding of bf16 (2^-8 of the value).
        # The last three cut k into runs that meet in f32 partial sums on an H100/H200, rounded by
        # the last to arrive; n of 515 and 1030 leave C's rows unaligned.
        shapes = [(1, 1, 1), (31, 33, 17), (64, 136, 200), (129, 65, 257), (8, 200, 96), (256, 512, 4096),
                  (16, 520, 3000), (33, 515, 2051), (130, 1030, 1100)]
        for variant in ["auto"] + rust_kernels.variants("matmul_bf16_rounded"):
            for m, n, k in shapes:
                a = (rand(m, k, seed=m) - 0.5).to(torch.bfloat16)
                b = (rand(k, n, seed=n) - 0.5).to(torch.bfloat16)
                try:
                    got = rust_kernels.matmul_bf16(a, b, variant=variant, out_dtype=torch.bfloat16)
                except RuntimeError as e:
                    self.assertIn("sm_90a", str(e))
                    self.assertNotEqual(torch.cuda.get_device_capability(), (9, 0), f"{variant} refused on sm_90")
                    continue
                self.assertEqual(got.dtype, torch.bfloat16)
                want = a.double() @ b.double()
                summed = (k + 2) * U * (a.double().abs() @ b.double().abs())
                bound = summed + 2.0**-8 * (want.abs() + summed)
                self.assertTrue(bool(((got.double() - want).abs() <= bound).all()), f"{variant} {m}x{n}x{k}")

    def test_matmul_fp8_within_its_bound(self):
        # torch._scaled_mm's contract (bf16 out), per-tensor scales, row-wise ((m, 1) and (1, n))
        # and block scales ((m, ⌈k/128⌉) and (⌈k/128⌉, ⌈n/128⌉)): the host's bound
        # (host/library/src/families/matmul_fp8.rs). Per block of k (all of k but for block scales):
        # 2^-12 of the sums at each wgmma's 32 products and of their magnitudes (the FP8 tensor cores'
        # narrower sums), an f32 sum's len + 2 unit roundoffs, the factor's two roundings; with
        # blocks, the f32 totals' additions; then bf16's rounding. b column-major (read in place)
        # and row-major (copied).
        shapes = [(1, 1, 1), (31, 33, 17), (64, 136, 200), (129, 65, 257), (33, 515, 2051), (130, 1030, 1100),
                  (256, 512, 4096), (129, 255, 9)]
        subnormal = lambda x: x.abs() * ((x != 0) & (x.abs() < 2.0**-6))
        # Per-tensor scales with use_fast_accum=False run the row-wise tiles over float32 totals,
        # every row's and column's factor the same.
        kinds = (("matmul_fp8", "tensor", True), ("matmul_fp8_rowwise_promoted", "tensor", False),
                 ("matmul_fp8_rowwise", "row", True), ("matmul_fp8_rowwise_promoted", "row", False),
                 ("matmul_fp8_blockwise", "block", False))
        for op, kind, fast in kinds:
            for variant in ["auto"] + rust_kernels.variants(op):
                for m, n, k in shapes:
                    a = (rand(m, k, seed=m) * 300).to(torch.float8_e4m3fn)
                    b = (rand(n, k, seed=n) * 300).to(torch.float8_e4m3fn).t()
                    blocks, column_blocks = -(-k // 128), -(-n // 128)
                    if kind == "block":
                        scale_a = rand(m, blocks, seed=m + 2).abs() + 0.25
                        scale_b = rand(blocks, column_blocks, seed=n + 2).abs() + 0.25
                        # Block i's factors for every element of c.
                        columns = torch.arange(n, device="cuda") // 128
                        factors = [scale_a[:, i:i + 1].double() * scale_b[i, columns].double() for i in range(blocks)]
                        block_k = 128
                    else:
                        if kind == "row":
                            scale_a = rand(m, 1, seed=m + 1).abs() + 0.25
                            scale_b = rand(1, n, seed=n + 1).abs() + 0.25
                        else:
                            scale_a = torch.tensor(0.75, device="cuda")
                            scale_b = torch.tensor(1.5, device="cuda")
                        factors, block_k = [scale_a.double() * scale_b.double()], k
                        if not fast:
                            factors, block_k = factors * blocks, 128
                    for b_given in (b, b.contiguous()):
                        try:
                            got = rust_kernels.matmul_fp8(a, b_given, scale_a, scale_b, use_fast_accum=fast,
                                                          variant=variant)
                        except RuntimeError as e:
                            self.assertIn("sm_90a", str(e))
                            self.assertNotEqual(torch.cuda.get_device_capability(), (9, 0), f"{variant} refused on sm_90")
                            break
                        self.assertEqual(got.dtype, torch.bfloat16)
                        a64, b64 = a.double(), b.double()
                        want, tolerance, totals = 0.0, 0.0, 0.0
                        for i, factor in enumerate(factors):
                            lo, hi = i * block_k, min(k, (i + 1) * block_k)
                            chunks = [a64[:, j:min(j + 32, hi)] @ b64[j:min(j + 32, hi), :] for j in range(lo, hi, 32)]
                            sum_ = sum(chunks)
                            running = torch.stack(chunks).cumsum(0).abs().sum(0)
                            magnitude = a64[:, lo:hi].abs() @ b64[lo:hi, :].abs()
                            # Products of a subnormal e4m3, which the tensor cores may drop (as
                            # _scaled_mm's do), allowed whole.
                            sub_a, sub_b = subnormal(a64[:, lo:hi]), subnormal(b64[lo:hi, :])
                            lost = sub_a @ b64[lo:hi, :].abs() + a64[:, lo:hi].abs() @ sub_b
                            sums = 2.0**-12 * (running + magnitude) + (hi - lo + 2) * U * magnitude + lost
                            want = want + factor * sum_
                            tolerance = tolerance + factor.abs() * sums + 2 * U * (factor * sum_).abs()
                            totals = totals + factor.abs() * (sum_.abs() + sums)
                        if len(factors) > 1:
                            tolerance = tolerance + (len(factors) + 1) * U * totals
                        bound = tolerance + 2.0**-8 * (want.abs() + tolerance)
                        self.assertTrue(bool(((got.double() - want).abs() <= bound).all()),
                                        f"{variant} {kind} fast={fast} {m}x{n}x{k}")

    def test_quantize_fp8_matches_its_definition_exactly(self):
        # Each group's scale max(amax, 1e-12) / 448 and codes x * (448 / max(amax, 1e-12)) to the
        # nearest e4m3, clamped to +-448 (PyTorch's cast after the clamp is the same rounding),
        # bit for bit, special values included: a NaN spoils its group, an infinity its finite
        # neighbours (their factor is 0: codes 0, the infinity's NaN), zeros get the floor's scale.
        for rows, cols, group in [(1, 1, 128), (7, 300, 128), (9, 1000, 1000), (33, 515, 128), (4, 4099, 4099),
                                  (2, 256, 5000), (64, 7168, 128)]:
            x = rand(rows, cols, seed=cols) * torch.logspace(-30, 30, rows, device="cuda").unsqueeze(1)
            if rows > 3 and cols > 2:
                x[1, 0], x[2, 1], x[3, :] = float("nan"), float("inf"), 0.0
                x[0, 0] = -0.0
            for variant in ["auto"] + rust_kernels.variants("quantize_fp8"):
                codes, scales = rust_kernels.quantize_fp8(x, group_size=group, variant=variant)
                g = min(group, cols)
                groups = -(-cols // g)
                padded = torch.nn.functional.pad(x, (0, groups * g - cols)).view(rows, groups, g)
                amax = padded.abs().amax(dim=2).clamp(min=1e-12)
                # Divisions of tensors by tensors: PyTorch divides by a scalar as a product with its
                # reciprocal, a rounding away from the kernels' quotient.
                largest = torch.full_like(amax, 448.0)
                want_scales = amax / largest
                factor = (largest / amax).repeat_interleave(g, dim=1)[:, :cols]
                want_codes = (x * factor).clamp(-448, 448).to(torch.float8_e4m3fn)
                self.assertEqual(codes.dtype, torch.float8_e4m3fn)
                self.assertEqual(tuple(scales.shape), (rows, groups))
                same = lambda got, want: bool(((got.float() == want.float()) | (got.float().isnan() & want.float().isnan())).all())
                self.assertTrue(same(scales, want_scales), f"scales {variant} {rows}x{cols}/{group}")
                self.assertTrue(same(codes, want_codes), f"codes {variant} {rows}x{cols}/{group}")

    def test_matmul_fp8_refuses_scales_of_other_shapes(self):
        a = (rand(4, 32, seed=1) * 300).to(torch.float8_e4m3fn)
        b = (rand(8, 32, seed=2) * 300).to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device="cuda")
        for scale_a, scale_b in ((rand(4, 1, seed=3), one), (rand(4, seed=3), rand(8, seed=4)),
                                 (rand(1, 4, seed=3), rand(8, 1, seed=4)), (rand(4, 1, seed=3), rand(1, 2, seed=4))):
            with self.assertRaisesRegex(ValueError, "row-wise.*block scales"):
                rust_kernels.matmul_fp8(a, b, scale_a, scale_b)

    def test_matmul_products_take_views_and_empty_sides_and_refuse_bad_operands(self):
        # The products' fast path hands its operands to the native layer as they are; whatever it
        # refuses must take the careful path: views made contiguous, empty sides answered, and
        # everything else refused naming what to do.
        # Each with its error relative to the sum of |products|: f32 sums of k = 24, TF32's two
        # roundings of 2^-11, bf16 C's one rounding of 2^-8.
        sums = 26 * U
        cases = [
            (rust_kernels.matmul, torch.float32, {}, sums),
            (rust_kernels.matmul_tf32, torch.float32, {}, sums + 2.0**-10),
            (rust_kernels.matmul_bf16, torch.bfloat16, {}, sums),
            (rust_kernels.matmul_bf16, torch.bfloat16, {"out_dtype": torch.bfloat16}, sums + 2.0**-7),
        ]
        for op, dtype, options, relative in cases:
            what = f"{op.__name__} {dtype} {options}"
            a = rand(40, 24, seed=1).to(dtype)
            b = rand(24, 33, seed=2).to(dtype)
            want = a.double() @ b.double()
            transposed = rand(24, 40, seed=1).to(dtype).t()
            offset = rand(41 * 24, seed=3).to(dtype)[24:].view(40, 24)
            for left in (a, transposed, offset):
                got = op(left, b, **options).double()
                exact = left.double() @ b.double()
                bound = relative * (left.double().abs() @ b.double().abs())
                self.assertTrue(bool(((got - exact).abs() <= bound).all()), what)
            self.assertEqual(tuple(op(a[:0], b, **options).shape), (0, 33), what)
            self.assertEqual(float(op(a[:, :0], b[:0], **options).abs().sum()), 0.0, what)
            self.assertEqual(tuple(op(a, b, **options).shape), tuple(want.shape), what)
            with self.assertRaisesRegex(ValueError, "expected"):
                op(a, a, **options)
            with self.assertRaisesRegex(ValueError, "expected"):
                op(a[0], b, **options)
            with self.assertRaisesRegex(TypeError, "dtype"):
                op(a.to(torch.float16), b, **options)
            with self.assertRaisesRegex(TypeError, "GPU"):
                op(a.cpu(), b, **options)

    def test_matmul_bf16_many_operand_pairs_queued_behind_a_busy_gpu(self):
        # The TMA rungs read their operands through tensor maps the host keeps in GPU memory per
        # pair of operands; more pairs than it keeps (4096), all queued while the GPU is busy, must
        # each still read its own (a map freed or rewritten before its launch ran would not).
        pairs = 4200
        a = [(rand(128, 256, seed=i) - 0.5).to(torch.bfloat16) for i in range(pairs)]
        b = [(rand(256, 192, seed=pairs + i) - 0.5).to(torch.bfloat16) for i in range(pairs)]
        torch.cuda.synchronize()
        torch.cuda._sleep(1_000_000_000)
        got = [rust_kernels.matmul_bf16(x, y) for x, y in zip(a, b)]
        torch.cuda.synchronize()
        for i, (x, y, c) in enumerate(zip(a, b, got)):
            want = x.double() @ y.double()
            bound = 258 * U * (x.double().abs() @ y.double().abs())
            self.assertTrue(bool(((c.double() - want).abs() <= bound).all()), f"pair {i}")

    def test_matmul_tf32_within_its_bound(self):
        # The tensor cores read each f32 as TF32, its lower 13 mantissa bits dropped; the products
        # of those are exact, so only the f32 sums are allowed for. On an H100/H200 the TMA rung
        # reads shapes with k or n not a multiple of 4 from row-padded copies.
        shapes = [(1, 1, 1), (31, 33, 17), (64, 136, 200), (257, 129, 256), (129, 65, 257), (8, 200, 96), (512, 256, 4096)]
        tf32 = lambda x: (x.view(torch.int32) & ~0x1FFF).view(torch.float32).double()
        for variant in ["auto"] + rust_kernels.variants("matmul_tf32"):
            for m, n, k in shapes:
                a, b = rand(m, k, seed=m) - 0.5, rand(k, n, seed=n) - 0.5
                try:
                    got = rust_kernels.matmul_tf32(a, b, variant=variant).double()
                except RuntimeError as e:
                    # The wgmma kernel runs on compute capability 9.0 alone, and says so.
                    self.assertIn("sm_90a", str(e))
                    self.assertNotEqual(torch.cuda.get_device_capability(), (9, 0), f"{variant} refused on sm_90")
                    continue
                want = tf32(a) @ tf32(b)
                bound = (k + 2) * U * (tf32(a).abs() @ tf32(b).abs())
                self.assertTrue(bool(((got - want).abs() <= bound).all()), f"{variant} {m}x{n}x{k}")

    def test_decoding_and_grouped_attention_within_their_bound(self):
        # Queries fewer or more than the keys, and K and V shared by groups of query heads, against
        # the f64 attention of the bf16 values with SDPA's top-left causal mask and K and V repeated
        # per query head; the bound as above, plus the runs' weights (attention_oracle.rs).
        shapes = [  # batch, heads, heads_kv, queries, keys, dim
            (1, 32, 8, 1, 4096, 128),
            (2, 8, 8, 3, 65, 64),
            (1, 4, 1, 16, 130, 128),
            (3, 6, 2, 5, 1, 64),
            (1, 8, 2, 20, 700, 128),
            (2, 4, 2, 33, 33, 64),  # grouped heads, as many queries as keys: the one-pass kernels
            (1, 6, 2, 257, 257, 128),
            (1, 64, 8, 1, 32768, 128),
            # Head dimensions between the built ones: Phi-3's 96 decoding, a diffusion model's
            # cross-attention at 40 (4096 pixels over 77 text tokens, here 64 over 77), Phi-2's 80.
            (1, 32, 8, 1, 4096, 96),
            (2, 8, 8, 64, 77, 40),
            (1, 4, 4, 33, 33, 80),
            (2, 8, 2, 3, 65, 80),
        ]
        for causal in [False, True]:
            for b, h, hkv, lq, s, d in shapes:
                seed = 7 * lq + s + d
                q = (4 * rand(b, h, lq, d, seed=seed)).to(torch.bfloat16)
                k = rand(b, hkv, s, d, seed=seed + 1).to(torch.bfloat16)
                v = rand(b, hkv, s, d, seed=seed + 2).to(torch.bfloat16)
                got = rust_kernels.attention(q, k, v, causal=causal, enable_gqa=True).double()
                qd = q.double()
                kd, vd = (x.double().repeat_interleave(h // hkv, dim=1) for x in (k, v))
                scores = qd @ kd.transpose(-1, -2) / d**0.5
                magnitude = qd.abs() @ kd.abs().transpose(-1, -2) / d**0.5
                if causal:
                    masked = torch.ones(lq, s, dtype=torch.bool, device=q.device).triu(1)
                    scores = scores.masked_fill(masked, float("-inf"))
                    magnitude = magnitude.masked_fill(masked, 0.0)
                p = torch.softmax(scores, -1)
                want, weight = p @ vd, p @ vd.abs()
                score_error = (2 * d * U * magnitude + 2 * U * scores.nan_to_num(0.0, 0.0, 0.0).abs()).amax(-1, keepdim=True)
                largest = (scores.nan_to_num(0.0, 0.0, 0.0).abs().amax(-1, keepdim=True) * 1.4426950408889634 + 1) * U
                runs = 2 * (0.7 * (largest + 2.0**-22) + 2.0**-22 + 4 * U)
                relative = 2 * (score_error + 2.0**-21) + runs + 2.0**-8 + 4 * (s + 64) * U
                bound = weight * relative + 2.0**-8 * want.abs()
                label = f"causal={causal} {b}x{h}/{hkv}x{lq}x{s}x{d}"
                self.assertTrue(bool(((got - want).abs() <= bound).all()), label)
                sdpa = torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, is_causal=causal, enable_gqa=True
                ).double()
                self.assertTrue(bool(((sdpa - want).abs() <= bound + 2.0**-7 * want.abs() + 1e-3).all()), f"SDPA {label}")
        q = rand(1, 4, 1, 64).to(torch.bfloat16)
        kv = rand(1, 2, 9, 64).to(torch.bfloat16)
        with self.assertRaisesRegex(ValueError, "enable_gqa=True"):
            rust_kernels.attention(q, kv, kv)
        with self.assertRaisesRegex(ValueError, "multiple"):
            rust_kernels.attention(rand(1, 3, 1, 64).to(torch.bfloat16), kv, kv, enable_gqa=True)
        with self.assertRaisesRegex(ValueError, "not a kernel for queries other than the keys"):
            rust_kernels.attention(q, kv, kv, enable_gqa=True, variant="attention_flash")

    def test_attention_gradients_match_the_f64_reference_as_closely_as_sdpas(self):
        # dQ, dK and dV through autograd, grouped heads too, against the f64 gradients of the
        # attention of the bf16 inputs; SDPA's bf16 gradients measured the same way. Ours must be
        # within twice SDPA's error (plus 2^-9 of the gradient's largest magnitude: both round to
        # bf16) on every tensor.
        shapes = [(1, 2, 2, 1, 64), (2, 4, 2, 33, 128), (1, 6, 2, 130, 64), (1, 2, 1, 257, 128), (2, 8, 8, 512, 128)]
        # Head dimensions between the built ones (staged 64 or 128 wide): 40, Phi-2's 80, Phi-3's 96.
        shapes += [(1, 4, 2, 65, 40), (2, 2, 2, 130, 80), (1, 4, 4, 257, 96)]
        for causal in [False, True]:
            for b, h, hkv, s, d in shapes:
                q = (2 * rand(b, h, s, d, seed=s)).to(torch.bfloat16)
                k = rand(b, hkv, s, d, seed=s + 1).to(torch.bfloat16)
                v = rand(b, hkv, s, d, seed=s + 2).to(torch.bfloat16)
                g = rand(b, h, s, d, seed=s + 3).to(torch.bfloat16)
                grads = {}
                for name, f in [
                    ("ours", lambda q, k, v: rust_kernels.attention(q, k, v, causal=causal, enable_gqa=True)),
                    (
                        "sdpa",
                        lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
                            q, k, v, is_causal=causal, enable_gqa=True
                        ),
                    ),
                    (
                        "f64",
                        lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
                            q.double(), k.double(), v.double(), is_causal=causal, enable_gqa=True
                        ),
                    ),
                ]:
                    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
                    f(*leaves).backward(g.to(torch.float64) if name == "f64" else g)
                    grads[name] = [t.grad.double() for t in leaves]
                for i, which in enumerate("qkv"):
                    want = grads["f64"][i]
                    ours = (grads["ours"][i] - want).abs().max().item()
                    sdpa = (grads["sdpa"][i] - want).abs().max().item()
                    allowed = 2 * sdpa + 2.0**-9 * want.abs().max().item()
                    self.assertLessEqual(ours, allowed, f"d{which} causal={causal} {b}x{h}/{hkv}x{s}x{d}")
        q = rand(1, 2, 1, 64).to(torch.bfloat16).requires_grad_()
        cache = rand(1, 2, 100, 64).to(torch.bfloat16)
        with self.assertRaisesRegex(NotImplementedError, "decoding"):
            rust_kernels.attention(q, cache, cache)

    def test_attention_within_its_bound(self):
        # The f64 attention of the bf16 values; the bound follows the kernels' arithmetic (see
        # host/src/families/attention_oracle.rs): the exponentials rounded to bf16 dominate.
        # Head dimensions 64 and 128 on the attention families, the others (Phi's 80 and 96,
        # diffusion models' 40, the least, 8) on the any-dimension ones; "auto" on both.
        built = [(1, 1, 1, 64), (1, 2, 33, 128), (2, 1, 130, 64), (1, 3, 257, 128)]
        other = [(1, 1, 1, 8), (1, 2, 33, 40), (2, 1, 130, 80), (1, 3, 257, 96)]
        for causal in [False, True]:
            suffix = "_causal" if causal else ""
            runs = [("auto", built + other)]
            runs += [(v, built) for v in rust_kernels.variants("attention" + suffix)]
            runs += [(v, other) for v in rust_kernels.variants("attention_any_dim" + suffix)]
            for variant, shapes in runs:
                for b, h, s, d in shapes:
                    q = (4 * rand(b, h, s, d, seed=s)).to(torch.bfloat16)
                    k = rand(b, h, s, d, seed=s + 1).to(torch.bfloat16)
                    v = rand(b, h, s, d, seed=s + 2).to(torch.bfloat16)
                    try:
                        got = rust_kernels.attention(q, k, v, causal=causal, variant=variant).double()
                    except RuntimeError as e:
                        self.assertIn("sm_90a", str(e))
                        self.assertNotEqual(torch.cuda.get_device_capability(), (9, 0), f"{variant} refused on sm_90")
                        continue
                    qd, kd, vd = q.double(), k.double(), v.double()
                    scores = qd @ kd.transpose(-1, -2) / d**0.5
                    magnitude = qd.abs() @ kd.abs().transpose(-1, -2) / d**0.5
                    if causal:
                        masked = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
                        scores = scores.masked_fill(masked, float("-inf"))
                        magnitude = magnitude.masked_fill(masked, 0.0)
                    p = torch.softmax(scores, -1)
                    want, weight = p @ vd, p @ vd.abs()
                    score_error = (2 * d * U * magnitude + 2 * U * scores.nan_to_num(0.0, 0.0, 0.0).abs()).amax(-1, keepdim=True)
                    relative = 2 * (score_error + 2.0**-21) + 2.0**-8 + 4 * (s + 64) * U
                    bound = weight * relative + 2.0**-8 * want.abs()
                    self.assertTrue(bool(((got - want).abs() <= bound).all()), f"{variant} causal={causal} {b}x{h}x{s}x{d}")

    def test_attention_refuses_head_dims_that_are_not_multiples_of_8_up_to_128_saying_why(self):
        wide = rand(1, 2, 5, 100, seed=4).to(torch.bfloat16)
        for queries in (5, 1):  # one pass, and decoding
            with self.assertRaisesRegex(ValueError, "multiple of 8 from 8 to 128"):
                rust_kernels.attention(wide[:, :, :queries], wide, wide)

    def test_histogram_equals_bincount(self):
        # Counts are exact: uniform bytes, and bytes of which half are one value (the contended
        # case), at edge sizes and past one block's share.
        for variant in ["auto"] + rust_kernels.variants("histogram"):
            for n in [1, 31, 1025, 1_000_003]:
                generator = torch.Generator(device="cuda").manual_seed(n)
                x = torch.randint(0, 256, (n,), device="cuda", dtype=torch.uint8, generator=generator)
                x[: n // 2] = 200
                got = rust_kernels.histogram(x.view(-1, 1) if n % 2 else x, variant=variant)
                want = torch.bincount(x, minlength=256).int()
                self.assertTrue(torch.equal(got, want), f"{variant} n={n}")

    def test_row_maxima_are_exact_and_row_sums_within_their_bound(self):
        # The last three cut rows into pieces (split kernels): 2, 19 and 16 pieces on an H200.
        shapes = [(1, 1), (3, 31), (33, 257), (100, 1000), (7, 5000), (1, 100_003), (5, 70_001), (64, 32_768)]
        for name in ["row_sum", "row_max"]:
            for variant in ["auto"] + rust_kernels.variants(name):
                for rows, cols in shapes:
                    x = rand(rows, cols, seed=cols)
                    got = getattr(rust_kernels, name)(x, variant=variant)
                    if name == "row_max":
                        self.assertTrue(torch.equal(got, x.amax(dim=1)), f"{variant} {rows}x{cols}")
                        continue
                    # A row's sum passes through at most cols additions, each within u.
                    bound = (cols + 1) * U * x.double().abs().sum(dim=1)
                    err = (got.double() - x.double().sum(dim=1)).abs()
                    self.assertTrue(bool((err <= bound).all()), f"{variant} {rows}x{cols}")

    def test_histogram_f32_counts_as_its_formula_does(self):
        # The bin of each value computed by torch in f32 as the kernels compute it (CUB's
        # HistogramEven): counts must be equal. Values outside the range, NaN and hi itself are in
        # the inputs and are not counted.
        for variant in ["auto"] + rust_kernels.variants("histogram_f32"):
            for n, (lo, hi) in [(1, (-1.0, 1.0)), (1000, (-1.0, 1.0)), (1 << 20, (-0.5, 2.0)), (4097, (0.0, 1.0))]:
                x = rand(n, seed=n) * 1.5
                x[::97] = float("nan")
                x[1::89] = hi
                got = rust_kernels.histogram_f32(x, lo, hi, variant=variant)
                lo32, hi32 = torch.tensor(lo, device="cuda"), torch.tensor(hi, device="cuda")
                scale = torch.tensor(256.0, device="cuda") / (hi32 - lo32)
                inside = x[(x >= lo32) & (x < hi32)]
                bins = ((inside - lo32) * scale).clamp(0, 255).to(torch.int64)
                want = torch.bincount(bins, minlength=256).to(torch.int32)
                self.assertTrue(torch.equal(got, want), f"{variant} n={n} [{lo}, {hi})")

    def test_conv2d_matches_pytorchs_conv2d_within_its_bound(self):
        for variant in ["auto"] + rust_kernels.variants("conv2d"):
            for (height, width), side in [((1, 1), 3), ((31, 33), 5), ((100, 7), 7), ((257, 509), 3), ((64, 64), 5)]:
                image, weight = rand(height, width, seed=height), rand(side, side, seed=side)
                got = rust_kernels.conv2d(image, weight, variant=variant).double()
                conv = torch.nn.functional.conv2d
                want = conv(image.double()[None, None], weight.double()[None, None], padding=side // 2)[0, 0]
                magnitude = conv(image.double().abs()[None, None], weight.double().abs()[None, None], padding=side // 2)[0, 0]
                bound = (side * side + 2) * U * magnitude
                self.assertTrue(bool(((got - want).abs() <= bound).all()), f"{variant} {height}x{width} {side}x{side}")

    def test_add_is_exact(self):
        for variant in ["auto"] + rust_kernels.variants("add"):
            for n in [1, 3, 31, 1025, 2051, 1_000_003]:
                a, b = rand(n, seed=n), rand(n, seed=n + 1)
                self.assertTrue(torch.equal(rust_kernels.add(a, b, variant=variant), a + b), f"{variant} {n}")

    def test_add_converts_what_the_native_layer_refuses_and_names_what_it_cannot(self):
        base, b = rand(1001, seed=3), rand(1000, seed=4)
        a = base[1:]  # 4 bytes past an aligned address: refused natively, copied by the careful way
        self.assertTrue(torch.equal(rust_kernels.add(a, b), a + b))
        strided = rand(2000, seed=5)[::2]
        self.assertTrue(torch.equal(rust_kernels.add(strided, b), strided + b))
        empty = torch.empty(0, device="cuda")
        self.assertEqual(rust_kernels.add(empty, empty).shape, (0,))
        with self.assertRaisesRegex(ValueError, "shapes must be equal"):
            rust_kernels.add(b, rand(999))
        with self.assertRaisesRegex(TypeError, "move it to the GPU"):
            rust_kernels.add(b, b.cpu())
        with self.assertRaisesRegex(TypeError, "dtype"):
            rust_kernels.add(b, b.double())

    def test_shared_mem_add_is_exact(self):
        for n in [1, 31, 256, 257, 1_000_003]:
            a, b = rand(n, seed=n), rand(n, seed=n + 1)
            staged = a + b
            want = staged.clone()
            inside = torch.arange(n, device="cuda") % 256 != 0  # not a block's first thread
            want[inside] = staged[inside] + staged.roll(1)[inside]
            self.assertTrue(torch.equal(rust_kernels.shared_mem_add(a, b), want), f"{n}")

    def test_sums_are_exact_where_every_partial_sum_is_and_within_the_bound_beyond(self):
        for variant in ["auto"] + rust_kernels.variants("sum"):
            for n in [1, 31, 1025, 100_003, 1 << 24]:
                x = grid(n, seed=n)
                got = float(rust_kernels.sum(x, variant=variant))
                want = float(x.double().sum())
                # Multiples of 2^-7: exact while the magnitudes add up to less than 2^17.
                bound = 0.0 if n <= 100_003 else (n / 1024 + 64) * U * float(x.double().abs().sum())
                self.assertLessEqual(abs(got - want), bound, f"{variant} {n}")

    def test_one_launch_sums_share_a_ticket_per_stream_and_leave_it_at_zero(self):
        # Many sums in a row on two streams, each its own ticket: every one right; the returned
        # sums are views that later calls do not overwrite.
        streams = [torch.cuda.current_stream(), torch.cuda.Stream()]
        xs = [grid(n, seed=n) for n in (5, 70_001, 100_003)]
        kept = []
        for round in range(3):
            for stream in streams:
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    kept += [(rust_kernels.sum(x), float(x.double().sum())) for x in xs]
        torch.cuda.synchronize()
        for got, want in kept:
            self.assertEqual(float(got), want)
        # Rows cut into pieces take a ticket per row from their stream's scratch, as the sums do.
        wide = [grid(rows * cols, seed=cols).view(rows, cols) for rows, cols in ((1, 120_011), (6, 40_000))]
        kept = []
        for round in range(3):
            for stream in streams:
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    kept += [(rust_kernels.row_sum(x), x.double().sum(dim=1)) for x in wide]
        torch.cuda.synchronize()
        for got, want in kept:
            self.assertTrue(torch.equal(got.double(), want))
        from rust_kernels import native

        x = grid(1000)
        one = torch.empty(4096, device="cuda")
        ticket = torch.zeros(1, device="cuda", dtype=torch.int32)
        stream = torch.cuda.current_stream().cuda_stream
        with self.assertRaisesRegex(ValueError, "scratch1"):
            native.sum(x, one, None, ticket, stream=stream, device=0, variant="reduce_interleaved")

    def test_cumsums_are_exact_where_every_prefix_is_and_within_the_bound_beyond(self):
        for variant in ["auto"] + rust_kernels.variants("cumsum"):
            for exclusive in [False, True]:
                for n in [1, 31, 1025, 100_003, 1 << 22]:
                    x = grid(n, seed=n)
                    got = rust_kernels.cumsum(x, exclusive=exclusive, variant=variant).double()
                    want = torch.cumsum(x.double(), 0)
                    if exclusive:
                        want = want - x.double()
                    label = f"{variant} n={n} exclusive={exclusive}"
                    if n <= 100_003:
                        self.assertTrue(torch.equal(got, want), label)
                    else:
                        bound = (n / 256 + 64) * U * torch.cumsum(x.double().abs(), 0)
                        self.assertTrue(bool(((got - want).abs() <= bound).all()), label)

    def test_views_at_an_offset_and_strided_views_are_handled(self):
        base = rand(4097 * 64 + 1)
        x = base[1:].view(4097, 64)  # 4 bytes past an aligned address
        self.assertTrue(torch.equal(rust_kernels.transpose(x), x.T))
        y = rand(64, 128)[:, ::2]  # not contiguous
        self.assertTrue(torch.equal(rust_kernels.transpose(y), y.T))

    def test_torch_tensors_are_taken_on_their_word_and_other_arrays_checked_by_the_driver(self):
        a, b = rand(1000, seed=1), rand(1000, seed=2)
        stream, device = torch.cuda.current_stream().cuda_stream, a.get_device()
        out = torch.full_like(a, float("nan"))
        rust_kernels.native.add(a, b, out, stream=stream, device=device)
        # A subclass of torch.Tensor is not torch's own tensor: the driver checks its memory.
        sub = torch.nn.Parameter(a.clone(), requires_grad=False)
        out_of_sub = torch.full_like(a, float("nan"))
        rust_kernels.native.add(sub, b, out_of_sub, stream=stream, device=device)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(out, a + b))
        self.assertTrue(torch.equal(out_of_sub, a + b))

    @unittest.skipUnless(GPU and torch.cuda.device_count() >= 2, "needs two GPUs")
    def test_a_tensor_on_another_device_than_the_launch_is_refused(self):
        a = rand(1000)
        stream = torch.cuda.current_stream(1).cuda_stream
        with self.assertRaisesRegex(ValueError, "cuda:0, the launch on cuda:1"):
            rust_kernels.native.add(a, a, torch.empty_like(a), stream=stream, device=1)

    def test_bad_arguments_are_python_errors(self):
        with self.assertRaises(TypeError):
            rust_kernels.transpose(torch.zeros(3, 3))  # on the CPU
        with self.assertRaises(TypeError):
            rust_kernels.transpose(torch.zeros(3, 3, device="cuda", dtype=torch.float64))
        with self.assertRaises(ValueError):
            rust_kernels.matmul(rand(3, 4), rand(5, 6))
        with self.assertRaises(ValueError):
            rust_kernels.transpose(rand(3, 4), variant="fastest")


@unittest.skipUnless(GPU, REASON)
class StreamsAndCompilation(unittest.TestCase):
    def test_ordered_after_a_write_on_a_side_stream(self):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for round in range(5):
                x = torch.empty(4096, 4096, device="cuda")
                x.fill_(float(round))
                x.mul_(3.0)  # queued on the side stream just before the operator reads x
                y = rust_kernels.transpose(x)
                x.fill_(-1.0)  # after it: must not be seen by it
                stream.synchronize()
                self.assertTrue(bool((y == 3.0 * round).all()), f"round {round}")

    def test_compiles_without_graph_breaks(self):
        def f(x, w):
            return rust_kernels.softmax(rust_kernels.matmul(x, w)) * 2

        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
        x, w = rand(64, 32), rand(32, 48, seed=1)
        self.assertTrue(torch.allclose(compiled(x, w), f(x, w)))

    def test_decoding_attention_compiles_without_graph_breaks(self):
        # One token against a cache, grouped heads: the decode path's two launches in a graph.
        def f(q, k, v):
            return rust_kernels.attention(q, k, v, enable_gqa=True) * 2

        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
        q = rand(2, 8, 1, 128).to(torch.bfloat16)
        k, v = (rand(2, 2, 5000, 128, seed=seed).to(torch.bfloat16) for seed in (1, 2))
        self.assertTrue(torch.equal(compiled(q, k, v), f(q, k, v)))

    def test_replays_in_a_cuda_graph(self):
        # Captured into a CUDA graph after a warm-up on a side stream (which also makes the tensor
        # maps the TMA kernels read: nothing is uploaded during the capture), then replayed on new
        # values written into the same inputs: the results are the eager calls' on those values.
        x, a, b = rand(300, 520), rand(256, 384, seed=1), rand(384, 128, seed=2)
        w = rand(5, 5, seed=3)
        q, k, v = (rand(1, 2, 130, 64, seed=seed).to(torch.bfloat16) for seed in (4, 5, 6))
        cache = rand(1, 1, 3000, 64, seed=7).to(torch.bfloat16)
        wide = rand(3, 50_001, seed=14)
        names = ["transpose", "softmax", "add", "conv2d", "matmul", "matmul_tf32", "attention", "attention_decode", "sum", "row_sum"]

        def work():
            return [
                rust_kernels.transpose(x),
                rust_kernels.softmax(x),
                rust_kernels.add(x, x),
                rust_kernels.conv2d(x, w),
                rust_kernels.matmul(a, b),
                rust_kernels.matmul_tf32(a, b),
                rust_kernels.attention(q, k, v),
                rust_kernels.attention(q[:, :, :1], cache, cache, enable_gqa=True),
                rust_kernels.sum(x),
                rust_kernels.row_sum(wide),
            ]

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                before = work()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = work()
        for tensor, seed in ((x, 7), (a, 8), (b, 9), (w, 10), (wide, 15)):
            tensor.copy_(rand(*tensor.shape, seed=seed))
        for tensor, seed in ((q, 11), (k, 12), (v, 13)):
            tensor.copy_(rand(*tensor.shape, seed=seed).to(torch.bfloat16))
        graph.replay()
        eager = work()
        torch.cuda.synchronize()
        for name, got, want, old in zip(names, captured, eager, before):
            # The replay computed on the new values (not left what the old ones gave)...
            self.assertFalse(torch.equal(got, old), name)
            # ...and as the eager call does.
            if name == "matmul":
                # Where the chooser splits k, the partial sums are added in whatever order they land.
                self.assertTrue(torch.allclose(got, want, rtol=1e-5, atol=1e-5), name)
            else:
                self.assertTrue(torch.equal(got, want), name)

    def test_a_capture_without_a_warm_up_says_what_to_do(self):
        # The TMA kernels' tensor maps are made on a first call; inside a capture that call can
        # only refuse, naming the remedy (and the capture itself stays usable).
        if torch.cuda.get_device_capability() != (9, 0):
            self.skipTest("only the sm_90a kernels copy by TMA")
        a, b = rand(64, 64, seed=20), rand(64, 64, seed=21)
        graph = torch.cuda.CUDAGraph()
        with self.assertRaisesRegex(ValueError, "before capturing"):
            with torch.cuda.graph(graph):
                rust_kernels.matmul_tf32(a, b)
        self.assertTrue(torch.equal(rust_kernels.transpose(a), a.T.contiguous()))

    def test_sum_and_cumsum_gradients_match_pytorchs(self):
        x = rand(1000).requires_grad_()
        (rust_kernels.cumsum(x) ** 2).sum().backward()
        ours = x.grad.clone()
        x.grad = None
        (torch.cumsum(x, 0) ** 2).sum().backward()
        self.assertTrue(torch.allclose(ours, x.grad, rtol=1e-4, atol=1e-4))
        x.grad = None
        (rust_kernels.sum(x) * 3).backward()
        self.assertTrue(torch.equal(x.grad, torch.full_like(x, 3.0)))

    def test_gradients_match_pytorchs(self):
        x = rand(17, 40).requires_grad_()
        w = rand(40, 9, seed=2).requires_grad_()
        (rust_kernels.softmax(rust_kernels.matmul(x, w)) ** 2).sum().backward()
        ours = (x.grad.clone(), w.grad.clone())
        x.grad, w.grad = None, None
        (torch.softmax(x @ w, dim=-1) ** 2).sum().backward()
        for got, want in zip(ours, (x.grad, w.grad)):
            self.assertTrue(torch.allclose(got, want, rtol=1e-4, atol=1e-6))


    def test_norms_and_their_gradients_match_pytorchs_in_float64(self):
        """Layer norm and RMS norm over the last dimension, with and without weight and bias, in every
        variant; outputs and the gradients of x, the weight and the bias against PyTorch's on the
        same inputs in float64, rows with an offset of their own (a kernel that forgot the mean
        fails)."""
        layer, rms = torch.nn.functional.layer_norm, torch.nn.functional.rms_norm
        for variant in ["auto"] + rust_kernels.variants("layer_norm"):
            for shape in [(1, 1), (3, 31), (2, 5, 33), (64, 1000), (9, 4097), (3, 8193)]:
                cols = shape[-1]
                x = rand(*shape, seed=cols) * 3 + rand(*shape[:-1], 1, seed=cols + 1) * 8
                w, b = rand(cols, seed=2) * 2, rand(cols, seed=3)
                seed = rand(*shape, seed=4)
                for affine in (False, True):
                    label = f"{variant} {shape} affine={affine}"
                    ours = [t.clone().requires_grad_() for t in (x, w, b)]
                    theirs = [t.double().requires_grad_() for t in (x, w, b)]
                    rms_variant = variant.replace("layer_norm", "rms_norm")
                    for name, f, g in [
                        ("layer", lambda v, p: rust_kernels.layer_norm(v, (cols,), *p, variant=variant), layer),
                        ("rms", lambda v, p: rust_kernels.rms_norm(v, (cols,), p[0], 1e-5, variant=rms_variant), None),
                    ]:
                        params = (ours[1], ours[2]) if affine else (None, None)
                        got = f(ours[0], params)
                        if g is not None:
                            want = g(theirs[0], (cols,), *((theirs[1], theirs[2]) if affine else (None, None)), 1e-5)
                        else:
                            want = rms(theirs[0], (cols,), theirs[1] if affine else None, 1e-5)
                        (got * seed).sum().backward()
                        (want * seed.double()).sum().backward()
                        close = lambda a, e: bool(((a.double() - e).abs() <= 1e-4 * e.abs().max() + 1e-5).all())
                        self.assertTrue(close(got.detach(), want.detach()), f"{name} {label}")
                        self.assertTrue(close(ours[0].grad, theirs[0].grad), f"{name} dx {label}")
                        if affine:
                            self.assertTrue(close(ours[1].grad, theirs[1].grad), f"{name} dweight {label}")
                            if name == "layer":
                                self.assertTrue(close(ours[2].grad, theirs[2].grad), f"{name} dbias {label}")
                        for t in ours + theirs:
                            t.grad = None

    def test_norms_compile_without_graph_breaks(self):
        def f(x, w, b):
            return rust_kernels.rms_norm(rust_kernels.layer_norm(x, (x.shape[-1],), w, b), (x.shape[-1],), w)

        x, w, b = rand(7, 300).requires_grad_(), rand(300, seed=1).requires_grad_(), rand(300, seed=2)
        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
        self.assertTrue(torch.allclose(compiled(x, w, b), f(x, w, b), rtol=1e-5, atol=1e-6))
        compiled(x, w, b).sum().backward()

    def test_residual_norms_match_pytorchs_in_float32_and_bfloat16(self):
        """x + residual rounded to the type bit for bit; the norm of the sum against PyTorch's in
        float64 of the same (rounded) sum, within the type's rounding of the output plus f32's."""
        layer, rms = torch.nn.functional.layer_norm, torch.nn.functional.rms_norm
        for dtype, unit in [(torch.float32, 2.0**-20), (torch.bfloat16, 2.0**-7)]:
            for shape in [(1, 1), (3, 31), (2, 5, 64), (64, 1000), (4, 2048), (3, 8192), (2, 16384)]:
                cols = shape[-1]
                x = (rand(*shape, seed=cols) * 3 + rand(*shape[:-1], 1, seed=cols + 1) * 8).to(dtype)
                r = (rand(*shape, seed=cols + 2) * 4).to(dtype)
                w, b = (rand(cols, seed=3) * 2).to(dtype), rand(cols, seed=4).to(dtype)
                label = f"{dtype} {shape}"
                with torch.no_grad():
                    y, h = rust_kernels.add_layer_norm(x, r, w, b)
                    self.assertTrue(torch.equal(h, x + r), label)
                    want = layer(h.double(), (cols,), w.double(), b.double(), 1e-5)
                    self.assertTrue(bool(((y.double() - want).abs() <= unit * (want.abs() + 1)).all()), f"layer {label}")
                    y, h = rust_kernels.add_rms_norm(x, r, w)
                    eps = torch.finfo(dtype).eps
                    want = rms(h.double(), (cols,), w.double(), eps)
                    self.assertTrue(bool(((y.double() - want).abs() <= unit * (want.abs() + 1)).all()), f"rms {label}")
                    alone = rust_kernels.add_rms_norm(x, None, w, 1e-6)
                    want = rms(x.double(), (cols,), w.double(), 1e-6)
                    self.assertTrue(bool(((alone.double() - want).abs() <= unit * (want.abs() + 1)).all()), f"alone {label}")
        with self.assertRaises(RuntimeError):
            rust_kernels.add_rms_norm(rand(2, 8).requires_grad_(), rand(2, 8))

    def test_cross_entropy_and_its_gradient_match_pytorchs_in_float64(self):
        """Every reduction, rows ignored (about one in eight), odd vocabularies (rows off 16-byte
        boundaries), logits spread over ±30: the loss and the gradient against PyTorch's on the same
        logits in float64, within a bound a little above the host's (families/cross_entropy.rs)."""
        for rows, classes in [(1, 1), (3, 2), (37, 33), (64, 1000), (3, 1025), (17, 50257), (4, 70001), (5, 128256)]:
            generator = torch.Generator(device="cuda").manual_seed(classes)
            logits = rand(rows, classes, seed=classes) * 30
            target = torch.randint(0, classes, (rows,), device="cuda", generator=generator)
            target[1::8] = -100
            for reduction in ("mean", "sum", "none"):
                label = f"{rows}x{classes} {reduction}"
                x = logits.clone().requires_grad_()
                loss = rust_kernels.cross_entropy(x, target, reduction=reduction)
                seed = torch.rand(loss.shape, device="cuda", generator=generator) + 0.5
                (loss * seed).sum().backward()
                x64 = logits.double().requires_grad_()
                want = torch.nn.functional.cross_entropy(x64, target, reduction=reduction)
                (want * seed.double()).sum().backward()
                scale = 1.0 if reduction == "none" else want.detach().abs().max().item() + 1.0
                bound = 4e-5 * (scale + torch.log(torch.tensor(float(classes))).item())
                self.assertTrue(bool(((loss.double() - want.detach()).abs() <= bound * rows).all()), label)
                grad_bound = 2e-5 * x64.grad.abs() + 1e-7 * seed.max().item()
                self.assertTrue(bool(((x.grad.double() - x64.grad).abs() <= grad_bound + 1e-30).all()), label)

    def test_cross_entropy_for_training_reads_once_and_matches_pytorchs(self):
        """The fused pass (on by default, by either kernel), for rows with a gradient from 1025
        classes to what the chip holds (the gradient written forward, scaled in place backward):
        `loss.backward()` (a loss gradient of 1, nothing scaled), a loss gradient of its own, and a
        second backward pass through a retained graph (recomputed), each against PyTorch's in
        float64, f32 and bf16; narrow rows, rows past the chip and inference keep the two passes."""
        from rust_kernels import operators

        self.assertTrue(operators._fused_training(rand(4, 4096).requires_grad_()))
        self.assertFalse(operators._fused_training(rand(3, 70001).requires_grad_()))
        pipelined = operators._FUSED_PIPELINED
        try:
            for operators._FUSED_PIPELINED in (True, False):
                self._fused_training_matches_pytorchs(operators)
        finally:
            operators._FUSED_PIPELINED = pipelined

    def _fused_training_matches_pytorchs(self, operators):
        for rows, classes in [(6, 1025), (9, 4099), (7, 50257), (300, 2111)]:
            logits = rand(rows, classes, seed=classes + 7) * 20
            target = torch.randint(0, classes, (rows,), device="cuda")
            target[2] = -100
            for reduction, factor in [("mean", 1.0), ("sum", 1.0), ("mean", -2.5), ("none", 1.0)]:
                label = f"{rows}x{classes} {reduction} x{factor}"
                x = logits.clone().requires_grad_()
                self.assertTrue(operators._fused_training(x), label)
                loss = rust_kernels.cross_entropy(x, target, reduction=reduction)
                (loss.sum() * factor if factor != 1.0 else loss.sum()).backward(retain_graph=True)
                first = x.grad.clone()
                loss.sum().backward()
                x64 = logits.double().requires_grad_()
                want = torch.nn.functional.cross_entropy(x64, target, reduction=reduction).sum()
                (want * factor).backward()
                grad_bound = 2e-5 * x64.grad.abs() + 1e-7 * abs(factor)
                self.assertTrue(bool(((first.double() - x64.grad).abs() <= grad_bound + 1e-30).all()), label)
                once = x64.grad / factor
                second = x.grad.double() - first.double()
                self.assertTrue(bool(((second - once).abs() <= 2e-5 * once.abs() + 1e-7).all()), f"{label}: again")
        # Targets given as a strided view, the loss gradient not 1 (the scale reads the targets).
        logits, pairs = rand(5, 3000, seed=11) * 10, torch.randint(0, 3000, (5, 2), device="cuda")
        x = logits.clone().requires_grad_()
        (rust_kernels.cross_entropy(x, pairs[:, 1], reduction="sum") * 0.5).backward()
        x64 = logits.double().requires_grad_()
        (torch.nn.functional.cross_entropy(x64, pairs[:, 1], reduction="sum") * 0.5).backward()
        self.assertTrue(bool(((x.grad.double() - x64.grad).abs() <= 2e-5 * x64.grad.abs() + 1e-7).all()), "strided target")
        self.assertFalse(operators._fused_training(rand(4, 1024).requires_grad_()))
        with torch.no_grad():
            self.assertFalse(operators._fused_training(rand(4, 4096).requires_grad_()))
        # bf16: its count and gradient in the types the kernels take (the count was once made in
        # the logits' type).
        logits = (rand(5, 50257, seed=13) * 20).to(torch.bfloat16)
        target = torch.randint(0, 50257, (5,), device="cuda")
        x = logits.clone().requires_grad_()
        self.assertTrue(operators._fused_training(x))
        rust_kernels.cross_entropy(x, target).backward()
        x64 = logits.double().requires_grad_()
        torch.nn.functional.cross_entropy(x64, target).backward()
        self.assertEqual(x.grad.dtype, torch.bfloat16)
        bound = 2.0**-7 * x64.grad.abs() + 1e-30
        self.assertTrue(bool(((x.grad.double() - x64.grad).abs() <= bound).all()), "bf16 fused")

    def test_cross_entropy_over_bfloat16_logits_matches_pytorchs_types_and_float64_values(self):
        """bfloat16 logits, as models' heads give them: the loss and the gradient in bfloat16 (as
        PyTorch's), their values against PyTorch's in float64 on the same (bfloat16) logits within
        bfloat16's rounding of each; eager and compiled."""
        for rows, classes in [(1, 1), (3, 2), (37, 33), (64, 1000), (3, 1025), (9, 4099), (7, 50257), (3, 128256)]:
            logits = (rand(rows, classes, seed=classes + 3) * 20).to(torch.bfloat16)
            target = torch.randint(0, classes, (rows,), device="cuda")
            target[1::4] = -100
            for reduction in ("mean", "sum", "none"):
                label = f"{rows}x{classes} {reduction}"
                x = logits.clone().requires_grad_()
                loss = rust_kernels.cross_entropy(x, target, reduction=reduction)
                self.assertEqual(loss.dtype, torch.bfloat16, label)
                loss.sum().backward()
                self.assertEqual(x.grad.dtype, torch.bfloat16, label)
                x64 = logits.double().requires_grad_()
                want = torch.nn.functional.cross_entropy(x64, target, reduction=reduction)
                want.sum().backward()
                loss_bound = 2.0**-8 * want.detach().abs() + 1e-4 * (1 + torch.log(torch.tensor(float(classes))).item())
                self.assertTrue(bool(((loss.double() - want.detach()).abs() <= loss_bound).all()), label)
                # Beside bfloat16's rounding, the float32 arithmetic's own (as in the float32
                # test): p − 1 at a target whose p rounds to 1 loses what is left of it.
                counted = max(int((target != -100).sum()), 1)
                scale = 1.0 / counted if reduction == "mean" else 1.0
                grad_bound = 2.0**-8 * x64.grad.abs() + 2e-5 * x64.grad.abs() + 1e-7 * scale + 1e-30
                self.assertTrue(bool(((x.grad.double() - x64.grad).abs() <= grad_bound).all()), label)

        def f(x, t):
            return rust_kernels.cross_entropy(x, t) * 2

        x = (rand(9, 3000, seed=5) * 10).to(torch.bfloat16).requires_grad_()
        t = torch.randint(0, 3000, (9,), device="cuda")
        got = torch.compile(f, fullgraph=True, backend="aot_eager")(x, t)
        got.backward()
        ours = x.grad.clone()
        x.grad = None
        (torch.nn.functional.cross_entropy(x.double(), t) * 2).backward()
        self.assertEqual(got.dtype, torch.bfloat16)
        self.assertTrue(bool(((ours.double() - x.grad.double()).abs() <= 2.0**-7 * x.grad.double().abs() + 1e-30).all()))

    def test_cross_entropy_of_masked_and_ignored_rows_matches_pytorchs(self):
        logits = rand(4, 7) * 4
        logits[0, 3:] = float("-inf")
        target = torch.tensor([1, -100, 5, 2], device="cuda")
        got = rust_kernels.cross_entropy(logits, target, reduction="none")
        want = torch.nn.functional.cross_entropy(logits, target, reduction="none")
        self.assertTrue(torch.allclose(got, want, rtol=1e-5, atol=1e-6))
        self.assertTrue(torch.isnan(rust_kernels.cross_entropy(logits, torch.full_like(target, -100))))
        self.assertEqual(rust_kernels.cross_entropy(logits[:0], target[:0], reduction="sum").item(), 0.0)

    def test_cross_entropy_compiles_without_graph_breaks(self):
        def f(x, t):
            return rust_kernels.cross_entropy(x, t) * 2

        x, t = rand(9, 300).requires_grad_(), torch.randint(0, 300, (9,), device="cuda")
        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
        got = compiled(x, t)
        got.backward()
        ours = x.grad.clone()
        x.grad = None
        want = torch.nn.functional.cross_entropy(x, t) * 2
        want.backward()
        self.assertTrue(torch.allclose(got, want, rtol=1e-5))
        self.assertTrue(torch.allclose(ours, x.grad, rtol=1e-4, atol=1e-7))

if __name__ == "__main__":
    unittest.main()
