//! Tiles chosen from the device. A family may register the same algorithm at several tile sizes
//! (its *configurations*); on a GPU the host picks one from the device's own figures, following
//! the seed's rule: a tile that lets at least two blocks reside on each SM (the driver's occupancy
//! calculation, from registers, shared memory and threads), and among those the largest whose grid
//! still fills every SM at least twice over, so that the last, partial wave costs little.

use super::{FamilyDemo, Size};
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
pub fn choose(gpu: &Gpu, family: &dyn FamilyDemo, size: Size) -> Result<Option<Choice>> {
    let kernels = family.kernels();
    let configurations: Vec<usize> = family
        .configurations_at(size)
        .iter()
        .filter_map(|entry| kernels.iter().position(|k| k.entry == *entry))
        .collect();
    if configurations.len() < 2 {
        return Ok(None);
    }
    let sms = gpu.info().sm_count as f64;
    struct Option_ {
        kernel: usize,
        resident: u32,
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
        None => {
            let most = pool
                .iter()
                .max_by(|a, b| a.waves.total_cmp(&b.waves))
                .expect("a family has a configuration");
            (
                most.kernel,
                format!("{rule}; no tile gives {MIN_WAVES} waves, so the one with the most"),
            )
        }
    };
    Ok(Some(Choice {
        kernel: chosen.0,
        entry: kernels[chosen.0].entry,
        why: format!("{} ({})", chosen.1, all.join("; ")),
    }))
}
