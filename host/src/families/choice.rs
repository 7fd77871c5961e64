//! Tiles chosen from the device. A family may register the same algorithm at several tile sizes
//! (its *configurations*); on a GPU the host picks one from the device's own figures: the fastest
//! where the device's tile profile (`host autotune`) has timed the shape or one near it, else the
//! seed's rule: a tile that lets at least two blocks reside on each SM (the driver's occupancy
//! calculation, from registers, shared memory and threads), and among those the largest whose waves
//! keep at least three quarters of the GPU's block slots busy on average, so that the last, partial
//! wave costs little; when no tile does, the tile with the most blocks.

use super::{FamilyDemo, Size, profile};
use crate::error::Result;
use crate::gpu::Gpu;

/// Blocks per SM the seed asks a tile to allow at least.
pub const MIN_RESIDENT_BLOCKS: u32 = 2;
/// How busy a larger tile's grid must keep the GPU's block slots over its waves ([`wave_fill`]):
/// below it the last, partial wave (or a grid short of one) leaves SMs idle too long. (The seed's
/// "two full waves" preferred 64×64 over 128×128 matmul tiles at 2048³, where 128×128's 0.97 of
/// one wave ran 1.21× faster, run t.)
pub const MIN_WAVE_FILL: f64 = 0.75;

/// The configuration the device gets, and the reasoning, in words.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Choice {
    /// Index of the chosen kernel in its family.
    pub kernel: usize,
    pub entry: &'static str,
    pub why: String,
}

/// The configuration of `family` for `size` on `gpu`; `None` for families with one configuration.
/// The device's tile profile decides where it has measured this shape or one near it
/// ([`profile`]); elsewhere the occupancy rule ([`by_occupancy`]).
pub fn choose(gpu: &Gpu, family: &dyn FamilyDemo, size: Size) -> Result<Option<Choice>> {
    let kernels = family.kernels();
    let configurations = configurations(family, size);
    if configurations.len() < 2 {
        return Ok(None);
    }
    if let Some(profile) = profile::for_device(gpu.info())?
        && let Some(found) = profile.lookup(family.name(), size)
    {
        let fastest = configurations
            .iter()
            .filter_map(|&k| found.shape.medians_ms.get(kernels[k].entry).map(|&ms| (k, ms)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((kernel, ms)) = fastest {
            let at = if found.exact {
                "at this shape".to_string()
            } else {
                let [a, b, c] = found.shape.size;
                format!("at {a}×{b}×{c}, the nearest profiled shape")
            };
            return Ok(Some(Choice {
                kernel,
                entry: kernels[kernel].entry,
                why: format!("the fastest in this device's tile profile {at}: {ms:.4} ms"),
            }));
        }
    }
    by_occupancy(gpu, family, size)
}

/// Indices of `family`'s configurations at `size`.
fn configurations(family: &dyn FamilyDemo, size: Size) -> Vec<usize> {
    let kernels = family.kernels();
    family
        .configurations_at(size)
        .iter()
        .filter_map(|entry| kernels.iter().position(|k| k.entry == *entry))
        .collect()
}

/// The seed's occupancy rule alone (what a device without a profile gets).
pub fn by_occupancy(gpu: &Gpu, family: &dyn FamilyDemo, size: Size) -> Result<Option<Choice>> {
    let kernels = family.kernels();
    let configurations = configurations(family, size);
    if configurations.len() < 2 {
        return Ok(None);
    }
    let sms = gpu.info().sm_count as f64;
    let mut options = Vec::new();
    for &kernel in &configurations {
        let occupancy = gpu.occupancy(&kernels[kernel])?;
        let blocks = family.launch_blocks(size, kernel)? as f64;
        let resident = occupancy.resident_blocks_per_sm.max(1);
        options.push(Candidate {
            resident,
            blocks,
            waves: blocks / (sms * resident as f64),
        });
    }
    let all: Vec<String> = configurations_described(&options, |i| kernels[configurations[i]].entry);
    let (chosen, rule) = pick(&options);
    let kernel = configurations[chosen];
    Ok(Some(Choice {
        kernel,
        entry: kernels[kernel].entry,
        why: format!("{rule} ({})", all.join("; ")),
    }))
}

/// One configuration as the rule sees it.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    /// Blocks of it an SM holds (the driver's occupancy).
    pub resident: u32,
    /// Blocks its grid has for the shape.
    pub blocks: f64,
    /// `blocks` over the blocks the whole GPU holds at once.
    pub waves: f64,
}

/// How busy the grid keeps the device's block slots, on average over its waves: waves over waves
/// rounded up (1.0 for whole waves; 0.97 for a grid just short of one; 0.6 for 1.2 waves).
pub fn wave_fill(waves: f64) -> f64 {
    if waves <= 0.0 { 0.0 } else { waves / waves.ceil() }
}

/// The rule over `options` (smallest tile first): the index it picks and why, in words.
pub fn pick(options: &[Candidate]) -> (usize, String) {
    let indexed: Vec<(usize, &Candidate)> = options.iter().enumerate().collect();
    let resident_enough: Vec<(usize, &Candidate)> = indexed
        .iter()
        .copied()
        .filter(|(_, o)| o.resident >= MIN_RESIDENT_BLOCKS)
        .collect();
    let (pool, rule) = if resident_enough.is_empty() {
        let most = options.iter().map(|o| o.resident).max().unwrap_or(1);
        (
            indexed
                .iter()
                .copied()
                .filter(|(_, o)| o.resident == most)
                .collect::<Vec<_>>(),
            format!("no tile lets {MIN_RESIDENT_BLOCKS} blocks reside per SM; the most resident one"),
        )
    } else {
        (resident_enough, format!("at least {MIN_RESIDENT_BLOCKS} blocks per SM"))
    };
    match pool.iter().rev().find(|(_, o)| wave_fill(o.waves) >= MIN_WAVE_FILL) {
        Some(&(i, _)) => (
            i,
            format!("{rule}, the largest tile whose waves keep at least {MIN_WAVE_FILL} of the block slots busy"),
        ),
        // No tile fills the device well: the one with the most blocks, which spreads the work over
        // the most SMs. (Most *waves* favoured a large tile with few resident blocks: 1.7× slower
        // than the smallest on 8192×64×8192 matmuls, run t.)
        None => {
            let &(i, _) = pool
                .iter()
                // Equal blocks: the smaller tile (more of them reside per SM).
                .max_by(|a, b| a.1.blocks.total_cmp(&b.1.blocks).then(b.0.cmp(&a.0)))
                .expect("a family has a configuration");
            (
                i,
                format!(
                    "{rule}; no tile keeps {MIN_WAVE_FILL} of the block slots busy, so the one with the most blocks"
                ),
            )
        }
    }
}

/// Each option in words, for the choice's reason.
fn configurations_described(options: &[Candidate], entry: impl Fn(usize) -> &'static str) -> Vec<String> {
    options
        .iter()
        .enumerate()
        .map(|(i, o)| format!("{}: {} blocks per SM, {:.2} waves", entry(i), o.resident, o.waves))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The matmul configurations (64×64, 128×64, 128×128: 5, 4 and 2 blocks per SM on the H200's
    /// 132 SMs) at `[m, n]`.
    fn matmul_options(m: f64, n: f64) -> Vec<Candidate> {
        [(64.0, 64.0, 5), (128.0, 64.0, 4), (128.0, 128.0, 2)]
            .iter()
            .map(|&(tm, tn, resident)| {
                let blocks = (m / tm).ceil() * (n / tn).ceil();
                Candidate {
                    resident,
                    blocks,
                    waves: blocks / (132.0 * resident as f64),
                }
            })
            .collect()
    }

    #[test]
    fn the_rule_picks_what_autotune_measured_fastest_on_the_h200() {
        // Run t's fastest configuration per shape (0: 64×64, 1: 128×64, 2: 128×128); at 4097×3073
        // the 128×128 tile is within 3 % of the fastest.
        for (m, n, fastest) in [
            (1024.0, 1024.0, 0),
            (2048.0, 2048.0, 2),
            (4096.0, 4096.0, 2),
            (8192.0, 8192.0, 2),
            (8192.0, 2048.0, 2),
            (8192.0, 64.0, 0),
            (64.0, 8192.0, 0),
            (256.0, 256.0, 0),
            (4097.0, 3073.0, 2),
        ] {
            assert_eq!(pick(&matmul_options(m, n)).0, fastest, "{m}×{n}");
        }
    }

    #[test]
    fn wave_fill_counts_the_last_wave() {
        assert_eq!(wave_fill(2.0), 1.0);
        assert!((wave_fill(1.2) - 0.6).abs() < 1e-12);
        assert!((wave_fill(0.97) - 0.97).abs() < 1e-12);
        assert_eq!(wave_fill(0.0), 0.0);
    }

    #[test]
    fn without_two_resident_blocks_the_most_resident_tile_is_taken() {
        let options = [
            Candidate {
                resident: 1,
                blocks: 1000.0,
                waves: 7.6,
            },
            Candidate {
                resident: 1,
                blocks: 250.0,
                waves: 1.9,
            },
        ];
        assert!(pick(&options).1.contains("no tile lets"));
    }
}
