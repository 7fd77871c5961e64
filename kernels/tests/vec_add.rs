use kernels::testing::{ELEMENTWISE_EDGE_LENGTHS, GUARD, assert_matches, guarded_random_vec, poisoned, rng};
use kernels::vec_add::{launch_shape, vec_add};

#[test]
fn vec_add_matches_reference_on_edge_lengths() {
    let mut rng = rng();
    for &n in ELEMENTWISE_EDGE_LENGTHS {
        let (a, b) = (guarded_random_vec(&mut rng, n), guarded_random_vec(&mut rng, n));
        let mut out = poisoned(n + GUARD);
        // SAFETY: a, b and out hold n + GUARD elements.
        unsafe {
            vec_add(
                &launch_shape(n as u32),
                a.as_ptr(),
                b.as_ptr(),
                out.as_mut_ptr(),
                n as u32,
            )
        }
        .unwrap_or_else(|e| panic!("n = {n}: {e}"));
        assert_matches(
            &format!("vec_add, n = {n}"),
            &out,
            &kernels::reference::vec_add(&a[..n], &b[..n]),
        );
    }
}
