use kernels::shared_mem_add::{BLOCK, launch_shape, shared_mem_add};
use kernels::testing::{ELEMENTWISE_EDGE_LENGTHS, GUARD, assert_matches, guarded_random_vec, poisoned, rng};

#[test]
fn shared_mem_add_matches_reference_on_edge_lengths() {
    let mut rng = rng();
    for &n in ELEMENTWISE_EDGE_LENGTHS {
        let (a, b) = (guarded_random_vec(&mut rng, n), guarded_random_vec(&mut rng, n));
        let mut out = poisoned(n + GUARD);
        // SAFETY: a, b and out hold n + GUARD elements.
        unsafe {
            shared_mem_add(
                &launch_shape(n as u32),
                a.as_ptr(),
                b.as_ptr(),
                out.as_mut_ptr(),
                n as u32,
            )
        }
        .unwrap_or_else(|e| panic!("n = {n}: {e}"));
        let expected = kernels::reference::shared_mem_add(&a[..n], &b[..n], BLOCK as usize);
        assert_matches(&format!("shared_mem_add, n = {n}"), &out, &expected);
    }
}

#[test]
fn shared_mem_add_fails_when_launched_without_its_shared_memory() {
    let n = 300;
    let (a, b) = (vec![1.0f32; n], vec![2.0f32; n]);
    let mut out = poisoned(n);
    let mut launch = launch_shape(n as u32);
    launch.shared_bytes -= 4;
    // SAFETY: a, b and out hold n elements.
    let error = unsafe { shared_mem_add(&launch, a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), n as u32) }.unwrap_err();
    assert!(error.to_string().contains("carves 1024 bytes"), "{error}");
}
