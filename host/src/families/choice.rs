//! Tiles chosen from the device. A family may register the same algorithm at several tile sizes
//! (its *configurations*); on a GPU the host picks one from the device's own figures: the fastest
//! where the device's tile profile (`host autotune`) has timed the shape or one near it, else the
//! seed's rule: a tile that lets at least two blocks reside on each SM (the driver's occupancy
//! calculation, from registers, shared memory and threads), and among those the largest whose grid
//! still fills every SM at least twice over, so that the last, partial wave costs little; when no
//! tile gives that many blocks, the tile with the most.

use super::{FamilyDemo, Size, profile};
use crate::error::Result;
use crate::gpu::Gpu;

/// Blocks per SM the seed asks a tile to allow at least.
pub const MIN_RESIDENT_BLOCKS: u32 = 2;
/// Full waves of blocks over the GPU below which a larger tile leaves SMs idle too long.
pub const MIN_WAVES: f64 = 2.0;

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
    struct Option_ {
        kernel: usize,
        resident: u32,
        blocks: f64,
        waves: f64,
    }
    let mut options = Vec::new();
    for kernel in configurations {
        let occupancy = gpu.occupancy(&kernels[kernel])?;
        let blocks = family.launch_blocks(size, kernel)? as f64;
        let resident = occupancy.resident_blocks_per_sm.max(1);
        options.push(Option_ {
            kernel,
            resident,
            blocks,
            waves: blocks / (sms * resident as f64),
        });
    }
    let describe = |o: &Option_| {
        format!(
            "{}: {} blocks per SM, {:.1} waves",
            kernels[o.kernel].entry, o.resident, o.waves
        )
    };
    let all: Vec<String> = options.iter().map(describe).collect();
    let resident_enough: Vec<&Option_> = options.iter().filter(|o| o.resident >= MIN_RESIDENT_BLOCKS).collect();
    let (pool, rule) = if resident_enough.is_empty() {
        let most = options.iter().map(|o| o.resident).max().unwrap_or(1);
        (
            options.iter().filter(|o| o.resident == most).collect::<Vec<_>>(),
            format!("no tile lets {MIN_RESIDENT_BLOCKS} blocks reside per SM; the most resident one"),
        )
    } else {
        (resident_enough, format!("at least {MIN_RESIDENT_BLOCKS} blocks per SM"))
    };
    // Configurations are listed from the smallest tile to the largest.
    let chosen = match pool.iter().rev().find(|o| o.waves >= MIN_WAVES) {
        Some(o) => (
            o.kernel,
            format!("{rule}, the largest tile with at least {MIN_WAVES} waves"),
        ),
        // Too few blocks to fill the GPU twice with any tile: the one with the most blocks, which
        // spreads the work over the most SMs. (Most *waves* favoured a large tile with few
        // resident blocks: 1.7× slower than the smallest on 8192×64×8192 matmuls, run t.)
        None => {
            let most = pool
                .iter()
                .max_by(|a, b| a.blocks.total_cmp(&b.blocks))
                .expect("a family has a configuration");
            (
                most.kernel,
                format!("{rule}; no tile gives {MIN_WAVES} waves, so the one with the most blocks"),
            )
        }
    };
    Ok(Some(Choice {
        kernel: chosen.0,
        entry: kernels[chosen.0].entry,
        why: format!("{} ({})", chosen.1, all.join("; ")),
    }))
}
