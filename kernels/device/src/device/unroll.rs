//! `unrolled::<N>(body)`: CUDA's `#pragma unroll` for a loop of a constant trip count.
//!
//! Rust cannot put an unroll pragma on a loop, and LLVM's NVPTX backend unrolls a 32-step loop
//! only four times over, where nvcc writes it out whole. Here the body is written out in the
//! source, 32 calls at a time, each guarded by a test on constants that compiles away.

/// Calls `body(base + j)` for each `j` in the list while `base + j < n`.
macro_rules! calls {
    ($body:ident, $base:ident, $n:ident; $($j:literal)*) => {
        $(
            if $base + $j < $n {
                $body($base + $j);
            }
        )*
    };
}

/// Runs `body(i)` for `i` in `0..N`, with every call written out: no loop counter, no branch,
/// constant offsets in the addresses. For `N` above 32, a loop of 32-call steps.
#[inline(always)]
pub fn unrolled<const N: u32>(body: impl FnMut(u32)) {
    unrolled_to(N, body)
}

/// [`unrolled`] for a trip count computed from generic parameters (`RI as u32`), which Rust does
/// not accept as a const argument: once inlined, `n` is a constant and the same code results.
#[inline(always)]
pub fn unrolled_to(n: u32, mut body: impl FnMut(u32)) {
    let mut base = 0;
    while base < n {
        calls!(body, base, n; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
        base += 32;
    }
}

#[cfg(test)]
mod tests {
    use super::unrolled;

    #[test]
    fn unrolled_visits_each_index_once_in_order() {
        for_n::<1>();
        for_n::<31>();
        for_n::<32>();
        for_n::<33>();
        for_n::<100>();
    }

    fn for_n<const N: u32>() {
        let mut seen = Vec::new();
        unrolled::<N>(|i| seen.push(i));
        assert_eq!(seen, (0..N).collect::<Vec<_>>(), "N = {N}");
    }
}
