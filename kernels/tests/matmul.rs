use kernels::LaunchShape;
use kernels::emu::EmuError;
use kernels::matmul::{naive, padded, tiled};
use kernels::testing::{GUARD, MATMUL_EDGE_SHAPES, assert_matches, guarded_random_vec, poisoned, rng};

type Kernel = unsafe fn(&LaunchShape, *const f32, *const f32, *mut f32, u32, u32, u32) -> Result<(), EmuError>;

fn check_variant(name: &str, kernel: Kernel, launch_shape: fn(u32, u32) -> LaunchShape) {
    let mut rng = rng();
    for &(m, n, k) in MATMUL_EDGE_SHAPES {
        let (a, b) = (guarded_random_vec(&mut rng, m * k), guarded_random_vec(&mut rng, k * n));
        let mut c = poisoned(m * n + GUARD);
        let (m32, n32, k32) = (m as u32, n as u32, k as u32);
        // SAFETY: a holds m×k + GUARD elements, b k×n + GUARD, c m×n + GUARD.
        unsafe {
            kernel(
                &launch_shape(m32, n32),
                a.as_ptr(),
                b.as_ptr(),
                c.as_mut_ptr(),
                m32,
                n32,
                k32,
            )
        }
        .unwrap_or_else(|e| panic!("{name} {m}x{n}x{k}: {e}"));
        let expected = kernels::reference::matmul(&a[..m * k], &b[..k * n], m, n, k);
        assert_matches(&format!("{name}, m×n×k = {m}x{n}x{k}"), &c, &expected);
    }
}

#[test]
fn matmul_naive_matches_reference_on_edge_and_rectangular_shapes() {
    check_variant("matmul_naive", naive::matmul_naive, naive::launch_shape);
}

#[test]
fn matmul_tiled_matches_reference_on_edge_and_rectangular_shapes() {
    check_variant("matmul_tiled", tiled::matmul_tiled, tiled::launch_shape);
}

#[test]
fn matmul_tiled_padded_matches_reference_on_edge_and_rectangular_shapes() {
    check_variant("matmul_tiled_padded", padded::matmul_tiled_padded, padded::launch_shape);
}

#[test]
fn padded_tiles_need_more_shared_memory_than_dense_ones() {
    // One extra column per row in each of the two tiles.
    assert_eq!(padded::SHARED_BYTES - tiled::SHARED_BYTES, 2 * tiled::TILE * 4);
}
