"""Every operator and variant on special values (infinities, NaN, signed zeros, subnormals,
magnitudes near float32's limits), against PyTorch (run on the GPU runner; elsewhere every test is
reported as skipped, with the reason). Where an output must be NaN or an infinity it must be that
one; elsewhere it is compared in float64 within the bound of test_torch.py for the operator."""

import unittest

try:
    import torch
except ImportError:
    torch = None

import rust_kernels

from test_torch import GPU, REASON, U, rand, softmax_bound

if torch is not None:
    INF, NAN = float("inf"), float("nan")
    #: Every special value of host/tests/special_values (kernels/src/special_values.rs).
    SPECIALS = [INF, -INF, NAN, 0.0, -0.0, 1e-45, -1e-40, 1.1754942e-38, 1.1754944e-38, -1.1754944e-38, 3.4028235e38, -3.4028235e38, 3e38, -1e38]
    TINY = [0.0, -0.0, 1e-45, -1e-40, 1.1754944e-38]


def mixed(x, every, values, seed):
    """`x` with about one in `every` elements replaced by one of `values`, at random places."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    flat = x.clone().view(-1)
    where = torch.rand(flat.shape, device="cuda", generator=generator) < 1.0 / every
    pick = torch.randint(0, len(values), flat.shape, device="cuda", generator=generator)
    flat[where] = torch.tensor(values, device="cuda", dtype=x.dtype)[pick[where]]
    return flat.view(x.shape)


def classes_differ(got, want):
    """Where `got` is not of `want`'s class: NaN for NaN, the same infinity for an infinity,
    finite for finite."""
    got, want = got.double(), want.double()
    nan = want.isnan() != got.isnan()
    inf = want.isinf() & (got != want)
    finite = want.isfinite() & ~got.isfinite()
    return nan | inf | finite


def first(mask):
    """The index of the first True in `mask`, as a tuple, for a message."""
    return tuple(int(i) for i in mask.nonzero()[0])


@unittest.skipUnless(GPU, REASON)
class SpecialValues(unittest.TestCase):
    def assert_classes(self, got, want, label):
        wrong = classes_differ(got, want)
        if bool(wrong.any()):
            at = first(wrong)
            self.fail(f"{label}: {int(wrong.sum())} of {want.numel()} wrong, first at {at}: {float(got[at])}, PyTorch {float(want[at])}")

    def assert_within(self, got, want, bound, label):
        """Classes as PyTorch's; where it is finite, within `bound` of it."""
        self.assert_classes(got, want, label)
        finite = want.isfinite()
        outside = finite & ~((got.double() - want.double()).abs() <= bound)
        if bool(outside.any()):
            at = first(outside)
            self.fail(f"{label}: {float(got[at])} against {float(want[at])} (bound {float(bound[at])}) at {at}")

    def test_softmax_on_masked_rows_infinities_and_nan(self):
        for cols in [1, 31, 257, 1025, 8193, 50257, 65536, 65537]:
            rows = [rand(cols, seed=cols + r) * 30 for r in range(9)]
            rows[0] = mixed(rows[0], 3, [-INF], seed=cols)
            rows[0][cols // 2] = 1.5
            rows[1] = torch.full((cols,), -INF, device="cuda")
            rows[2][cols // 3] = INF
            rows[3][cols - 1] = NAN
            rows[4] = mixed(rows[4], 2, TINY, seed=cols + 1)
            rows[5] = mixed(rows[5], 4, [3.4028235e38, -3.4028235e38, 3e38, -1e38], seed=cols + 2)
            rows[6] = mixed(rows[6], 16, SPECIALS, seed=cols + 3)
            x = torch.stack(rows)
            want = torch.softmax(x.double(), dim=-1)
            for variant in ["auto"] + rust_kernels.variants("softmax"):
                got = rust_kernels.softmax(x, variant=variant)
                self.assert_within(got, want, softmax_bound(x.nan_to_num(0.0, 0.0, 0.0), want.nan_to_num(0.0)), f"{variant} 9x{cols}")

    def test_cross_entropy_on_masked_rows_infinities_and_nan(self):
        """The loss and the gradient of each row (reduction none) against PyTorch's in float64:
        masked classes, a masked target (an infinite loss), a row of -inf, +inf, NaN, tiny and
        huge logits; where finite, within 1e-5 of PyTorch's (relative, plus 1e-6)."""
        ce = torch.nn.functional.cross_entropy
        for cols in [1, 2, 33, 1000, 1025, 50257]:
            rows = [rand(cols, seed=cols + r) * 30 for r in range(8)]
            rows[0] = mixed(rows[0], 3, [-INF], seed=cols)
            rows[0][0] = 1.5
            rows[1][cols // 2] = -INF
            rows[2] = torch.full((cols,), -INF, device="cuda")
            rows[3][cols // 3] = INF
            rows[4][cols - 1] = NAN
            rows[5] = mixed(rows[5], 2, TINY, seed=cols + 1)
            rows[6] = mixed(rows[6], 4, [3.4028235e38, -3.4028235e38, 3e38, -1e38], seed=cols + 2)
            x = torch.stack(rows)
            target = torch.tensor([0, cols // 2, 0, 0, 0, cols - 1, 0, 0], device="cuda")
            # The huge row's target at its maximum: a loss of ln Σ, finite in float32 as in float64
            # (a target at -3.4e38 would overflow float32's loss and not float64's).
            target[6] = x[6].argmax()
            ours = x.clone().requires_grad_()
            got = rust_kernels.cross_entropy(ours, target, reduction="none")
            got.sum().backward()
            theirs = x.double().requires_grad_()
            want = ce(theirs, target, reduction="none")
            want.sum().backward()
            self.assert_within(got.detach(), want.detach(), 1e-5 * want.detach().abs().nan_to_num(0.0, 0.0, 0.0) + 1e-6, f"loss 8x{cols}")
            self.assert_within(ours.grad, theirs.grad, 1e-5 * theirs.grad.abs().nan_to_num(0.0, 0.0, 0.0) + 1e-6, f"grad 8x{cols}")

    def test_norms_on_infinities_nan_and_tiny_values(self):
        """Layer norm and RMS norm of rows holding an infinity, a NaN, tiny values, -0.0 alone and
        one repeated value, against PyTorch's in float64 (NaN rows NaN throughout)."""
        layer, rms = torch.nn.functional.layer_norm, torch.nn.functional.rms_norm
        for cols in [1, 31, 1000, 4097, 9000]:
            rows = [rand(cols, seed=cols + r) * 8 for r in range(7)]
            rows[0][cols // 2] = INF
            rows[1][cols - 1] = NAN
            rows[2] = mixed(rows[2], 2, TINY, seed=cols)
            rows[3] = torch.full((cols,), -0.0, device="cuda")
            rows[4] = torch.full((cols,), 7.25, device="cuda")
            rows[5][0] = -INF
            x = torch.stack(rows)
            w, b = rand(cols, seed=1) * 2, rand(cols, seed=2)
            for variant in ["auto"] + rust_kernels.variants("layer_norm"):
                got = rust_kernels.layer_norm(x, (cols,), w, b, variant=variant)
                want = layer(x.double(), (cols,), w.double(), b.double(), 1e-5)
                self.assert_within(got, want, 1e-5 * (want.abs().nan_to_num(0.0, 0.0, 0.0) + 1), f"layer {variant} 7x{cols}")
                rms_variant = variant.replace("layer_norm", "rms_norm")
                got = rust_kernels.rms_norm(x, (cols,), w, 1e-5, variant=rms_variant)
                want = rms(x.double(), (cols,), w.double(), 1e-5)
                self.assert_within(got, want, 1e-5 * (want.abs().nan_to_num(0.0, 0.0, 0.0) + 1), f"rms {rms_variant} 7x{cols}")

    def test_row_maxima_and_sums_on_special_values(self):
        # 5000 and 40000 columns: rows cut into pieces by the split kernels (2 and 19 on an H200).
        for cols in [1, 33, 1000, 5000, 40_000]:
            x = torch.stack([mixed(rand(cols, seed=cols + r), 40, s, seed=cols + r) for r, s in enumerate([SPECIALS, [NAN], [INF], [-INF], [INF, -INF], TINY])])
            x[4][0], x[4][-1] = INF, -INF
            for variant in ["auto"] + rust_kernels.variants("row_max"):
                self.assert_within(rust_kernels.row_max(x, variant=variant), x.amax(dim=1), 0.0, f"row_max {variant} 6x{cols}")
            # Sums without the magnitudes whose sum overflows float32 in one order and not another.
            y = x.clone()
            y[0] = mixed(rand(cols, seed=cols), 40, [INF, -INF, NAN, 0.0, -0.0, 1e-45, -1e-40], seed=cols)
            want = y.double().sum(dim=1)
            bound = (cols + 1) * U * y.double().abs().nan_to_num(0.0, 0.0, 0.0).sum(dim=1)
            for variant in ["auto"] + rust_kernels.variants("row_sum"):
                self.assert_within(rust_kernels.row_sum(y, variant=variant), want, bound, f"row_sum {variant} 6x{cols}")

    def test_sums_and_cumsums_on_special_values(self):
        for n in [1, 31, 1025, 100_003]:
            for label, values in [("nan", [NAN]), ("inf", [INF]), ("both infinities", [INF, -INF]), ("tiny", TINY)]:
                x = mixed(rand(n, seed=n), max(n // 3, 1), values, seed=n)
                x[n // 2] = values[0]
                want = x.double().sum().reshape(1)
                bound = (n / 1024 + 64) * U * x.double().abs().nan_to_num(0.0, 0.0, 0.0).sum().reshape(1)
                for variant in ["auto"] + rust_kernels.variants("sum"):
                    got = rust_kernels.sum(x, variant=variant).reshape(1)
                    self.assert_within(got, want, bound, f"sum {variant} n={n} {label}")
                scan = torch.cumsum(x.double(), 0)
                for variant in ["auto"] + rust_kernels.variants("cumsum"):
                    for exclusive in [False, True]:
                        want = scan
                        bound = (n / 256 + 64) * U * torch.cumsum(x.double().abs().nan_to_num(0.0, 0.0, 0.0), 0)
                        if exclusive:
                            # The sum of the elements before each one: 0 first.
                            zero = torch.zeros(1, device="cuda", dtype=torch.float64)
                            want, bound = torch.cat([zero, scan[:-1]]), torch.cat([zero, bound[:-1]])
                        got = rust_kernels.cumsum(x, exclusive=exclusive, variant=variant)
                        self.assert_within(got, want, bound, f"cumsum {variant} n={n} {label} exclusive={exclusive}")

    def test_transposes_and_adds_move_special_values_bit_for_bit(self):
        for rows, cols in [(1, 1), (31, 33), (257, 509), (1000, 3)]:
            x = mixed(rand(rows, cols, seed=rows), 5, SPECIALS, seed=cols)
            x.view(-1)[0] = torch.tensor(0x7FC01234, dtype=torch.int32).view(torch.float32)
            for variant in ["auto"] + rust_kernels.variants("transpose"):
                got = rust_kernels.transpose(x, variant=variant)
                self.assertTrue(torch.equal(got.view(torch.int32), x.T.contiguous().view(torch.int32)), f"transpose {variant} {rows}x{cols}")
        for n in [1, 31, 1025, 1_000_003]:
            a = mixed(rand(n, seed=n), 5, SPECIALS, seed=n)
            b = mixed(rand(n, seed=n + 1), 5, SPECIALS, seed=n + 1)
            want = a + b
            for variant in ["auto"] + rust_kernels.variants("add"):
                got = rust_kernels.add(a, b, variant=variant)
                self.assert_classes(got, want, f"add {variant} n={n}")
                finite = want.isfinite() | want.isinf()
                self.assertTrue(torch.equal(got[finite].view(torch.int32), want[finite].view(torch.int32)), f"add {variant} n={n}")

    def test_histogram_f32_leaves_out_nan_infinities_and_the_range_outside(self):
        for n, (lo, hi) in [(1, (-1.0, 1.0)), (1000, (-1.0, 1.0)), (1 << 20, (-0.5, 2.0))]:
            x = mixed(rand(n, seed=n) * 1.5, 7, SPECIALS, seed=n)
            lo32, hi32 = torch.tensor(lo, device="cuda"), torch.tensor(hi, device="cuda")
            scale = torch.tensor(256.0, device="cuda") / (hi32 - lo32)
            inside = x[(x >= lo32) & (x < hi32)]
            want = torch.bincount(((inside - lo32) * scale).clamp(0, 255).to(torch.int64), minlength=256).to(torch.int32)
            for variant in ["auto"] + rust_kernels.variants("histogram_f32"):
                got = rust_kernels.histogram_f32(x, lo, hi, variant=variant)
                self.assertTrue(torch.equal(got, want), f"histogram_f32 {variant} n={n}")

    def test_products_give_nan_and_infinities_where_ieee_arithmetic_does(self):
        specials = [INF, -INF, NAN, 0.0, -0.0]
        # The last two cut k into runs that meet in C on an H100/H200 (the persistent tensor-core
        # rungs, the small-m kernels): infinities of both signs meet there as in one sum.
        shapes = [(1, 1, 1), (33, 17, 9), (64, 64, 64), (67, 130, 72), (128, 136, 80), (256, 256, 256), (16, 64, 2048), (3, 520, 3000)]
        for m, n, k in shapes:
            a = mixed(rand(m, k, seed=m), 97, specials, seed=m)
            b = mixed(rand(k, n, seed=n), 89, specials, seed=n)
            a.view(-1)[(m * k) // 2] = INF
            b.view(-1)[(k * n) // 3] = 0.0
            rounded = lambda x, y, variant: rust_kernels.matmul_bf16(x, y, variant=variant, out_dtype=torch.bfloat16)
            products = [
                ("matmul", torch.float32, rust_kernels.matmul),
                ("matmul_tf32", torch.float32, rust_kernels.matmul_tf32),
                ("matmul_bf16", torch.bfloat16, rust_kernels.matmul_bf16),
                ("matmul_bf16_rounded", torch.bfloat16, rounded),
            ]
            for name, dtype, product in products:
                x, y = a.to(dtype), b.to(dtype)
                want = x.double() @ y.double()
                for variant in ["auto"] + rust_kernels.variants(name):
                    try:
                        got = product(x, y, variant=variant)
                    except RuntimeError as e:
                        self.assertIn("sm_90a", str(e))
                        self.assertNotEqual(torch.cuda.get_device_capability(), (9, 0), f"{variant} refused on sm_90")
                        continue
                    self.assert_classes(got, want, f"{name} {variant} {m}x{n}x{k}")

    def test_conv2d_gives_nan_and_infinities_where_ieee_arithmetic_does(self):
        for (height, width), side in [((1, 1), 3), ((31, 33), 5), ((100, 7), 7), ((257, 509), 3)]:
            image = mixed(rand(height, width, seed=height), 50, [INF, -INF, NAN, 0.0, -0.0], seed=width)
            weight = rand(side, side, seed=side)
            conv = torch.nn.functional.conv2d
            want = conv(image.double()[None, None], weight.double()[None, None], padding=side // 2)[0, 0]
            for variant in ["auto"] + rust_kernels.variants("conv2d"):
                self.assert_classes(rust_kernels.conv2d(image, weight, variant=variant), want, f"conv2d {variant} {height}x{width}")

    def test_attention_gives_nan_and_infinities_where_ieee_arithmetic_does(self):
        # One head per case: plain; NaN and +inf in a query; NaN and -inf in a key; NaN and both
        # infinities in V; subnormals and zeros (V nothing else); a query row 64 times larger; every special in V.
        for s, d in [(1, 64), (33, 128), (130, 64)]:
            heads = [[rand(s, d, seed=10 * h + t) * (2 if t == 0 else 1) for t in range(3)] for h in range(9)]
            heads[1][0][s // 2, d // 2] = NAN
            heads[2][0][s - 1, 0] = INF
            heads[3][1][s // 3, 1] = NAN
            heads[4][1][s // 2, 2] = -INF
            for i, special in enumerate([NAN, INF, -INF]):
                heads[5][2][(i * 7) % s, i] = special
            # V only subnormals and zeros: a flush to zero would show.
            heads[6] = [mixed(t, 3 if i < 2 else 1, TINY, seed=t.numel() + i) for i, t in enumerate(heads[6])]
            heads[7][0][s // 2] *= 64
            heads[8][2] = mixed(heads[8][2], 40, SPECIALS, seed=s)
            q, k, v = (torch.stack([h[t] for h in heads])[None].to(torch.bfloat16) for t in range(3))
            for causal in [False, True]:
                family = "attention_causal" if causal else "attention"
                qd, kd, vd = q.double(), k.double(), v.double()
                scores = qd @ kd.transpose(-1, -2) / d**0.5
                magnitude = qd.abs() @ kd.abs().transpose(-1, -2) / d**0.5
                if causal:
                    masked = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
                    scores = scores.masked_fill(masked, -INF)
                    magnitude = magnitude.masked_fill(masked, 0.0)
                p = torch.softmax(scores, -1)
                # A zero weight that meets a NaN or an infinity of V: NaN in PyTorch's math
                # backend, skipped by its flash backend and by a kernel that skips the masked tile.
                either = ((p == 0).double() @ (~vd.isfinite()).double()) > 0
                # Weights of at most 1 times V summed before the division: where the attended
                # |V| add up past float32's largest value, that sum may overflow, though the
                # average (PyTorch's math backend divides first) does not.
                allowed = (scores != -INF) | scores.isnan()
                either |= (allowed.double() @ vd.abs().nan_to_num(0.0, 0.0, 0.0)) > 3.4028235e38
                # Where a weight above zero meets a NaN, or both infinities, in V: NaN; one
                # infinity: that one; else the finite sum (no 0·inf is formed by these products).
                live = (p > 0).double()
                met = [(live @ mask.double()) > 0 for mask in (vd.isnan(), vd == INF, vd == -INF)]
                want = p.nan_to_num(0.0) @ vd.nan_to_num(0.0, 0.0, 0.0)
                want = torch.where(met[1], INF, want)
                want = torch.where(met[2], -INF, want)
                want = torch.where(met[0] | (met[1] & met[2]) | p.isnan().any(-1, keepdim=True), NAN, want)
                weight = p.nan_to_num(0.0) @ vd.abs().nan_to_num(0.0, 0.0, 0.0)
                score_error = (2 * d * U * magnitude + 2 * U * scores.nan_to_num(0.0, 0.0, 0.0).abs()).nan_to_num(0.0, 0.0, 0.0).amax(-1, keepdim=True)
                bound = weight * (2 * (score_error + 2.0**-21) + 2.0**-8 + 4 * (s + 64) * U) + 2.0**-8 * want.nan_to_num(0.0, 0.0, 0.0).abs() + 2.0**-133
                for variant in ["auto"] + rust_kernels.variants(family):
                    try:
                        got = rust_kernels.attention(q, k, v, causal=causal, variant=variant).double()
                    except RuntimeError as e:
                        self.assertIn("sm_90a", str(e))
                        self.assertNotEqual(torch.cuda.get_device_capability(), (9, 0), f"{variant} refused on sm_90")
                        continue
                    label = f"{variant} causal={causal} seq {s} dim {d}"
                    strict = ~(either & ~got.isfinite())
                    self.assert_within(torch.where(strict, got, want), want, bound, label)


if __name__ == "__main__":
    unittest.main()
