//! The registry: every kernel family, and through them every kernel. The PTX checks, `host info`,
//! the tests, the benches and the sanitizer sweep iterate this list; nothing else names kernels.
//!
//! A new variant of a family goes into that family's `FAMILY` list (e.g. [`crate::matmul::FAMILY`]);
//! a new family goes here.

use crate::{
    atomic_probe, attention, banks, conv2d, cross_entropy, gather, histogram, histogram_f32, matmul, matmul_bf16,
    matmul_fp8, matmul_tc, mma_probe, norm, probe, quantize_fp8, reduce, rows, scan, shared_mem_add, softmax,
    transpose, vec_add,
};
use ptxkit::{AnyFamily, KernelInfo};

/// Every family, in the order demos and reports show them.
pub static FAMILIES: &[&dyn AnyFamily] = &[
    &vec_add::FAMILY,
    &shared_mem_add::FAMILY,
    &matmul::FAMILY,
    &matmul_tc::FAMILY,
    &matmul_bf16::FAMILY,
    &matmul_bf16::rounded::FAMILY,
    &matmul_fp8::FAMILY,
    &matmul_fp8::rowwise::FAMILY,
    &matmul_fp8::blockwise::FAMILY,
    &matmul_fp8::promoted::FAMILY,
    &quantize_fp8::FAMILY,
    &matmul::pad_rows::FAMILY,
    &attention::FAMILY,
    &attention::CAUSAL_FAMILY,
    &attention::ANY_DIM_FAMILY,
    &attention::ANY_DIM_CAUSAL_FAMILY,
    &attention::backward::QUERY_FAMILY,
    &attention::backward::QUERY_CAUSAL_FAMILY,
    &attention::backward::QUERY_SAVED_FAMILY,
    &attention::backward::QUERY_SAVED_CAUSAL_FAMILY,
    &attention::backward::KEYS_FAMILY,
    &attention::backward::KEYS_CAUSAL_FAMILY,
    &attention::backward::STATISTICS_FAMILY,
    &attention::backward::STATISTICS_CAUSAL_FAMILY,
    &attention::backward::STATISTICS_WGMMA_FAMILY,
    &attention::backward::STATISTICS_WGMMA_CAUSAL_FAMILY,
    &attention::backward::WGMMA_FAMILY,
    &attention::backward::WGMMA_CAUSAL_FAMILY,
    &attention::backward::DELTA_FAMILY,
    &attention::backward::FINISH_FAMILY,
    &attention::DECODE_FAMILY,
    &attention::DECODE_CAUSAL_FAMILY,
    &attention::COMBINE_FAMILY,
    &transpose::FAMILY,
    &conv2d::FAMILY,
    &gather::FAMILY,
    &reduce::FAMILY,
    &reduce::MAX_FAMILY,
    &rows::SUM_FAMILY,
    &rows::MAX_FAMILY,
    &histogram::FAMILY,
    &histogram_f32::FAMILY,
    &scan::FAMILY,
    &scan::integer::FAMILY,
    &softmax::FAMILY,
    &norm::LAYER_NORM_FAMILY,
    &norm::RMS_NORM_FAMILY,
    &norm::LAYER_NORM_BACKWARD_FAMILY,
    &norm::RMS_NORM_BACKWARD_FAMILY,
    &norm::LAYER_NORM_WEIGHT_GRAD_FAMILY,
    &norm::RMS_NORM_WEIGHT_GRAD_FAMILY,
    &norm::backward_fused::LAYER_FAMILY,
    &norm::backward_fused::RMS_FAMILY,
    &norm::backward_fused::PARTIALS_FAMILY,
    &norm::residual::LAYER_FAMILY,
    &norm::residual::RMS_FAMILY,
    &norm::residual::LAYER_BF16_FAMILY,
    &norm::residual::RMS_BF16_FAMILY,
    &cross_entropy::FAMILY,
    &cross_entropy::BACKWARD_FAMILY,
    &cross_entropy::BF16_FAMILY,
    &cross_entropy::BACKWARD_BF16_FAMILY,
    &cross_entropy::COUNT_FAMILY,
    &cross_entropy::FUSED_FAMILY,
    &cross_entropy::FUSED_BF16_FAMILY,
    &cross_entropy::SCALE_FAMILY,
    &cross_entropy::SCALE_BF16_FAMILY,
    &probe::FAMILY,
    &atomic_probe::FAMILY,
    &mma_probe::FAMILY,
    &banks::FAMILY,
];

/// Suffix of a CUDA C twin's entry name (`benches/reference/cuda_c/`): `vec_add` in Rust is
/// `vec_add_cuda` in CUDA C.
pub const CUDA_C_ENTRY_SUFFIX: &str = "_cuda";

/// Every registered kernel, family by family.
pub fn kernels() -> Vec<KernelInfo> {
    FAMILIES.iter().flat_map(|family| family.kernel_infos()).collect()
}

/// The registered kernel whose PTX entry is `entry`.
pub fn find(entry: &str) -> Option<KernelInfo> {
    kernels().into_iter().find(|k| k.entry == entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_and_family_names_are_unique() {
        let kernels = kernels();
        for (i, kernel) in kernels.iter().enumerate() {
            assert!(
                kernels[i + 1..].iter().all(|k| k.entry != kernel.entry),
                "{} is registered twice",
                kernel.entry
            );
        }
        for (i, family) in FAMILIES.iter().enumerate() {
            assert!(
                FAMILIES[i + 1..].iter().all(|f| f.name() != family.name()),
                "family {} is registered twice",
                family.name()
            );
        }
    }

    #[test]
    fn shared_memory_layouts_give_the_registered_bytes() {
        use ptxkit::device::MatrixLayout;
        // Dense 32×32 tiles: 2 · 32 · 32 floats; padded: one more column per row.
        assert_eq!(crate::matmul::tiled::Tiles::BYTES, 2 * 32 * 32 * 4);
        assert_eq!(
            crate::matmul::padded::PaddedTiles::BYTES,
            2 * MatrixLayout::padded(32, 32).bytes::<f32>()
        );
        assert_eq!(
            find("matmul_tiled_padded").map(|k| k.shared_bytes),
            Some(2 * 32 * 33 * 4)
        );
        assert_eq!(find("shared_mem_add").map(|k| k.shared_bytes), Some(256 * 4));
    }
}
