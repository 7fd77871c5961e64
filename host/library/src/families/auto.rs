//! `auto`: the kernel a family runs when none is named (`host <family> --variant auto`, the Python
//! operators' `variant="auto"`), in one place for both. A family with tile configurations gets the
//! device's choice ([`choice`]: its tile profile, else the occupancy rule); the others name their
//! fastest rung for the shape ([`KernelChoice::fastest_rung`](super::KernelChoice::fastest_rung)), from the runner's figures. A family
//! with configurations may name a rung too, for shapes where none of them suits (the transposes
//! whose rows are not whole 16-byte chunks); that rung comes first.

use super::{FamilyDemo, Size, choice, kernel_index};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;

/// What `auto` knows of the device a kernel is chosen for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// Whether the sm_90a PTX (wgmma, TMA) runs there.
    pub sm90a: bool,
    /// Its SMs; `None` on the emulator, which has no figures to choose a tile by.
    pub sms: Option<u32>,
}

impl Target {
    /// The device `backend` runs on.
    pub fn of(backend: &Backend) -> Self {
        Target {
            sm90a: backend.runs_sm90a(),
            sms: backend.gpu().map(|gpu| gpu.info().sm_count),
        }
    }

    /// An sm_90a GPU of `sms` SMs (an H100 or H200: 132).
    pub const fn hopper(sms: u32) -> Self {
        Target {
            sm90a: true,
            sms: Some(sms),
        }
    }

    /// A GPU without sm_90a's PTX, or the emulator.
    pub const ELSEWHERE: Target = Target {
        sm90a: false,
        sms: None,
    };
}

/// A family's fastest rung for a shape, and the measurement that says so.
#[derive(Clone, Copy, Debug)]
pub struct Rung {
    pub entry: &'static str,
    pub why: &'static str,
}

/// The small-m rung of a matmul ladder for `size` (m × n × k), where A has at most `max_rows` rows
/// ([`kernels::matmul::small_m::for_rows`]); `entries` the ladder's small-m kernels in the order
/// of [`kernels::matmul::small_m::ROWS`]. It comes before any tile: at such m the product runs
/// as fast as B is read.
pub fn small_m_rung(size: Size, entries: [&'static str; 3], max_rows: u32) -> Option<Rung> {
    const WHY: [&str; 3] = [
        "A of one row: B read once, in strips of columns and runs of k",
        "A of at most 4 rows: B read once, in strips of columns and runs of k, four rows of A per block",
        "A of a few rows: B read once per eight rows of A, in strips of columns and runs of k",
    ];
    let m = u32::try_from(size.0[0]).ok()?;
    kernels::matmul::small_m::for_rows(m, max_rows).map(|i| Rung {
        entry: entries[i],
        why: WHY[i],
    })
}

/// What `auto` runs, and why.
#[derive(Clone, Debug)]
pub struct Auto {
    /// Index of the kernel in its family.
    pub kernel: usize,
    pub entry: &'static str,
    pub why: String,
}

/// Whether `family` answers `auto` at all (checked before any backend is opened).
pub fn has_auto(family: &dyn FamilyDemo) -> bool {
    !family.choice().configurations().is_empty()
        || family
            .choice()
            .fastest_rung(Target::ELSEWHERE, family.cli().default)
            .is_some()
}

/// The kernel `auto` runs for `size` on `backend`; `None` where the family has no answer (then a
/// kernel must be named).
pub fn auto(backend: &Backend, family: &dyn FamilyDemo, size: Size) -> Result<Option<Auto>> {
    let found = |entry: &'static str, why: String| {
        let kernel = kernel_index(family, entry).expect("auto names kernels of the family (tested)");
        Auto { kernel, entry, why }
    };
    // A rung named for this shape comes first: in a family with configurations, it marks a shape
    // none of them suits.
    if let Some(rung) = family.choice().fastest_rung(Target::of(backend), size) {
        return Ok(Some(found(rung.entry, rung.why.into())));
    }
    if let Some(&smallest) = family.choice().configurations().first() {
        let chosen = match backend {
            Backend::Gpu(gpu) => choice::choose(gpu, family, size)?,
            Backend::Emu => None,
        };
        return Ok(Some(match chosen {
            Some(choice) => found(choice.entry, choice.why),
            None if backend.gpu().is_some() => found(smallest, "one tile configuration at this size".into()),
            None => found(
                smallest,
                "the emulator has no occupancy figures to choose a tile by: the smallest".into(),
            ),
        }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::FAMILIES;

    #[test]
    fn every_answer_of_auto_names_a_kernel_of_its_family_at_every_edge_size() {
        for family in FAMILIES {
            if !has_auto(*family) {
                continue;
            }
            for size in family.sizes().edge.into_iter().chain([family.cli().default]) {
                let answer = auto(&Backend::Emu, *family, size)
                    .unwrap()
                    .expect("has_auto said it answers");
                assert_eq!(family.kernels()[answer.kernel].entry, answer.entry, "{}", family.name());
                assert!(!answer.why.is_empty());
            }
        }
    }

    #[test]
    fn a_transpose_whose_rows_are_not_whole_chunks_takes_the_skewed_kernel_before_any_tile() {
        let transpose = crate::families::find("transpose").unwrap();
        let skewed = kernels::transpose::skewed::KERNEL.entry();
        for [rows, cols] in [[8191, 4097], [4097, 8192], [8192, 4098], [1, 1]] {
            let answer = auto(&Backend::Emu, transpose, Size([rows, cols, 1])).unwrap().unwrap();
            assert_eq!(answer.entry, skewed, "{rows}×{cols}");
        }
        let aligned = auto(&Backend::Emu, transpose, Size([8192, 4096, 1])).unwrap().unwrap();
        assert!(
            transpose.choice().configurations().contains(&aligned.entry),
            "{}",
            aligned.entry
        );
    }

    #[test]
    fn a_matmul_of_a_few_rows_takes_its_ladders_small_m_kernel_up_to_the_ladders_bound() {
        // Past its bound of the first three, the f32 and TF32 ladders take a 16-row rung up to 16
        // rows: the f32 ladder's A staged in shared memory, TF32's mma.sync. The bf16 ladders'
        // mma.sync one ran slower than their persistent tiles at the model shapes
        // (docs/perf-log.md, change 150); on Hopper they take the swapped-role wgmma rung (the
        // test below), on the emulator the tiles.
        for (family, max_rows, sixteen_up_to) in [
            ("matmul", 8, 16),
            ("matmul_tc", 8, 16),
            ("matmul_bf16", 4, 0),
            ("matmul_bf16_rounded", 4, 0),
        ] {
            let demo = crate::families::find(family).unwrap();
            for (m, rows) in [
                (1, "m1"),
                (2, "m4"),
                (4, "m4"),
                (5, "m8"),
                (8, "m8"),
                (9, "m8"),
                (16, "m8"),
                (17, ""),
                (32, ""),
                (33, ""),
            ] {
                let entry = auto(&Backend::Emu, demo, Size([m, 4096, 4096])).unwrap().unwrap().entry;
                if m <= max_rows {
                    assert_eq!(entry, format!("{family}_small_{rows}"), "{family} at m = {m}");
                } else if m <= sixteen_up_to {
                    assert_eq!(entry, format!("{family}_small_m16"), "{family} at m = {m}");
                } else {
                    assert!(!entry.contains("small_m"), "{family} at m = {m}: {entry}");
                }
            }
        }
    }

    #[test]
    fn bf16_on_hopper_takes_the_swapped_rung_from_2_to_32_rows() {
        for (family, swapped) in [
            ("matmul_bf16", "matmul_bf16_swapped"),
            ("matmul_bf16_rounded", "matmul_bf16_rounded_swapped"),
        ] {
            let demo = crate::families::find(family).unwrap();
            let rung =
                |target, [m, n, k]: [usize; 3]| demo.choice().fastest_rung(target, Size([m, n, k])).map(|r| r.entry);
            let small = |target, size| rung(target, size).is_some_and(|entry| entry.contains("small_m"));
            // One row, and up to four where TMA could not read A or B in place: the small-m rungs.
            for size in [[1, 12288, 4096], [2, 50257, 768], [4, 4096, 4100]] {
                assert!(small(Target::hopper(132), size), "{family} at {size:?}");
            }
            for size in [
                [2, 4096, 4096],
                [4, 12288, 4096],
                [5, 50257, 768],
                [8, 4096, 4100],
                [13, 11008, 4096],
                [16, 4096, 4096],
                [17, 4096, 4096],
                [32, 28672, 4096],
            ] {
                assert_eq!(rung(Target::hopper(132), size), Some(swapped), "{family} at {size:?}");
                // Elsewhere (no sm_90a, or the emulator), no wgmma.
                assert_ne!(rung(Target::ELSEWHERE, size), Some(swapped), "{family} at {size:?}");
            }
            // Past 32 rows, the tiles (configurations: no rung named).
            assert_eq!(rung(Target::hopper(132), [33, 4096, 4096]), None, "{family} at m = 33");
        }
    }

    #[test]
    fn fp8_on_hopper_takes_the_swapped_rung_up_to_32_rows() {
        for family in [
            "matmul_fp8",
            "matmul_fp8_rowwise",
            "matmul_fp8_blockwise",
            "matmul_fp8_rowwise_promoted",
        ] {
            let demo = crate::families::find(family).unwrap();
            let swapped = format!("{family}_swapped");
            let rung = |target, [m, n, k]: [usize; 3]| {
                demo.choice()
                    .fastest_rung(target, Size([m, n, k]))
                    .map(|r| r.entry.to_string())
            };
            // One row too (FP8 has no CUDA-core rung for few rows), and rows TMA reads from
            // row-padded copies.
            for size in [
                [1, 128256, 4096],
                [1, 1, 1],
                [7, 4096, 4100],
                [16, 4096, 4096],
                [32, 28672, 4096],
            ] {
                assert_eq!(
                    rung(Target::hopper(132), size),
                    Some(swapped.clone()),
                    "{family} at {size:?}"
                );
                assert_ne!(
                    rung(Target::ELSEWHERE, size),
                    Some(swapped.clone()),
                    "{family} at {size:?}"
                );
            }
            // Past 32 rows, the tiles (configurations: no rung named).
            assert_eq!(rung(Target::hopper(132), [33, 4096, 4096]), None, "{family} at m = 33");
        }
    }

    #[test]
    fn tf32_on_hopper_takes_128_row_tiles_up_to_128_rows() {
        let demo = crate::families::find("matmul_tc").unwrap();
        for (m, entry) in [
            (16, "matmul_tc_small_m16"),
            (17, "matmul_tc_wgmma_128x128"),
            (128, "matmul_tc_wgmma_128x128"),
            (129, "matmul_tc_wgmma"),
            (8192, "matmul_tc_wgmma"),
        ] {
            let rung = demo
                .choice()
                .fastest_rung(Target::hopper(132), Size([m, 28672, 8192]))
                .unwrap();
            assert_eq!(rung.entry, entry, "m = {m}");
        }
        // Without sm_90a, the mma.sync rung at every tile size.
        let rung = demo
            .choice()
            .fastest_rung(Target::ELSEWHERE, Size([128, 28672, 8192]))
            .unwrap();
        assert_eq!(rung.entry, "matmul_tc_tf32");
    }

    #[test]
    fn the_families_the_python_operators_take_auto_for_answer_it() {
        for name in [
            "transpose",
            "softmax",
            "matmul",
            "matmul_bf16",
            "matmul_tc",
            "attention",
            "attention_causal",
            "conv2d",
            "reduce",
            "scan",
            "histogram",
            "histogram_f32",
            "row_sum",
            "row_max",
        ] {
            let family = crate::families::find(name).unwrap_or_else(|| panic!("no family {name}"));
            assert!(has_auto(family), "{name}");
        }
    }
}
