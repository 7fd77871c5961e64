//! `cargo xtask twins`: each Rust kernel beside its CUDA C twin as ptxas and the SASS see them,
//! on a machine without a GPU. The twins (`benches/reference/cuda_c/*.cu`) are compiled with the
//! runner's nvcc release (13.0, from PyPI's wheels: `cargo xtask setup --twins`), the Rust PTX is
//! assembled with the same ptxas, and both are disassembled. The table gives, per pair, registers,
//! spill bytes, SASS instructions, FFMAs, the hottest loop (a GEMM's instructions per step of k,
//! against its FFMAs), global atomics that return their old value (ATOMG)
//! against those that do not (REDG), and local-memory accesses; it flags where the two differ in
//! a way that moves time (a twin whose additions wait for their old values ran slower:
//! docs/perf-log.md, change 95; registers that leave room for fewer resident blocks: change 123). A "Rust / CUDA C" ratio is only as fair as the twin.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The CUDA 13.0 compiler as wheels (nvcc 13.0.88, as on the runner), and the oldest cuobjdump
/// and nvdisasm PyPI has (13.2: disassembling needs no match).
pub const CUDA13_WHEELS: &[&str] = &[
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-cuda-runtime==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-cuobjdump==13.2.51",
    "nvidia-cuda-nvdisasm==13.2.51",
];

/// Where `cargo xtask setup --twins` unpacks them, under the target folder.
pub fn cuda13_dir(target_dir: &Path) -> PathBuf {
    target_dir.join("tools").join("cuda13")
}

/// A tool of the unpacked CUDA 13 wheels (nvcc, ptxas, cuobjdump).
pub fn cuda13_tool(target_dir: &Path, tool: &str) -> PathBuf {
    cuda13_dir(target_dir).join("nvidia/cu13/bin").join(tool)
}

/// What one function's SASS holds, counted by opcode family.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SassCounts {
    pub instructions: u32,
    pub ffma: u32,
    /// Global atomics that return the old value (`ATOMG`) and that do not (`REDG`).
    pub atomg: u32,
    pub redg: u32,
    /// Local-memory loads and stores (`LDL`, `STL`): spills or a stack frame.
    pub local: u32,
    /// The loop with the most FFMAs (between a backward branch and its target; the shortest of
    /// equals): its instructions and FFMAs. A GEMM's main loop, one step of k: what an
    /// issue-bound kernel pays per step.
    pub hot_loop: Option<(u32, u32)>,
}

/// One listed instruction: its offset, its base opcode, and a branch's target.
type Listed<'a> = (u32, &'a str, Option<u32>);

/// The loop of `instructions` with the most FFMAs, as (instructions, FFMAs); the shortest of
/// equals.
fn hottest_loop(instructions: &[Listed]) -> Option<(u32, u32)> {
    let mut best: Option<(u32, u32)> = None;
    for &(offset, _, target) in instructions {
        let Some(start) = target.filter(|&t| t < offset) else {
            continue;
        };
        let body: Vec<_> = instructions
            .iter()
            .filter(|(o, _, _)| (start..=offset).contains(o))
            .collect();
        let ffma = body.iter().filter(|(_, op, _)| *op == "FFMA").count() as u32;
        let found = (body.len() as u32, ffma);
        best = match best {
            Some((len, most)) if most > ffma || (most == ffma && len <= found.0) => Some((len, most)),
            _ if ffma > 0 => Some(found),
            other => other,
        };
    }
    best
}

/// Per function, what `cuobjdump -sass` prints: a "Function : NAME" line opens each, then one
/// instruction per line (`/*0040*/  @!P0 LDG.E R2, desc[UR4][R2.64] ;`).
pub fn parse_sass(listing: &str) -> BTreeMap<String, SassCounts> {
    let mut functions = BTreeMap::new();
    let mut listed: BTreeMap<String, Vec<Listed>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in listing.lines() {
        if let Some(name) = line.trim().strip_prefix("Function : ") {
            current = Some(name.trim().to_string());
            functions.insert(name.trim().to_string(), SassCounts::default());
            continue;
        }
        let Some(name) = current.as_ref() else { continue };
        let Some(counts) = functions.get_mut(name) else {
            continue;
        };
        // An instruction: "/*offset*/", then an optional predicate, then the opcode.
        let Some((offset, rest)) = line.trim_start().strip_prefix("/*").and_then(|l| l.split_once("*/")) else {
            continue;
        };
        let Ok(offset) = u32::from_str_radix(offset, 16) else {
            continue;
        };
        // The instruction ends at ';' (its encoding follows as a comment).
        let mut words = rest.split(';').next().unwrap_or_default().split_whitespace();
        let Some(mut opcode) = words.next() else { continue };
        if opcode.starts_with('@') {
            let Some(next) = words.next() else { continue };
            opcode = next;
        }
        let base = opcode.split('.').next().unwrap_or(opcode);
        if !base.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
            continue;
        }
        counts.instructions += 1;
        match base {
            "FFMA" => counts.ffma += 1,
            "ATOMG" => counts.atomg += 1,
            "REDG" => counts.redg += 1,
            "LDL" | "STL" => counts.local += 1,
            _ => {}
        }
        // A branch's target: its last operand, "0x…" (after an optional predicate operand).
        let target = (base == "BRA")
            .then(|| {
                words
                    .filter_map(|w| w.trim_end_matches(',').strip_prefix("0x"))
                    .next_back()
            })
            .flatten()
            .and_then(|t| u32::from_str_radix(t, 16).ok());
        listed.entry(name.clone()).or_default().push((offset, base, target));
    }
    for (name, instructions) in &listed {
        if let Some(counts) = functions.get_mut(name) {
            counts.hot_loop = hottest_loop(instructions);
        }
    }
    functions
}

/// One side of a pair: ptxas's figures, the SASS counts, and the threads of the block both sides
/// are launched with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Side {
    pub registers: u32,
    pub spill_bytes: u32,
    pub sass: SassCounts,
    pub threads: u32,
}

impl Side {
    /// Blocks of this side an SM holds as far as registers allow (Hopper's and Ampere's 64K a
    /// SM, given out per warp in units of 256), threads (2048) and blocks (32): shared memory is the same on
    /// both sides, the launch's.
    pub fn resident_blocks_by_registers(&self) -> u32 {
        let warps = self.threads.div_ceil(32).max(1);
        let per_warp = (self.registers.max(1) * 32).div_ceil(256) * 256;
        (65_536 / (warps * per_warp)).min(2048 / (warps * 32)).min(32)
    }
}

/// What differs between a Rust kernel and its twin in a way that moves time; empty if nothing.
pub fn differences(rust: &Side, twin: &Side) -> Vec<String> {
    let mut notes = Vec::new();
    if (rust.sass.local > 0) != (twin.sass.local > 0) || rust.spill_bytes != twin.spill_bytes {
        let who = if twin.sass.local > rust.sass.local {
            "the twin"
        } else {
            "Rust"
        };
        notes.push(format!(
            "local memory: {who} (spills {} / {} bytes)",
            rust.spill_bytes, twin.spill_bytes
        ));
    }
    let (rust_blocks, twin_blocks) = (rust.resident_blocks_by_registers(), twin.resident_blocks_by_registers());
    if rust_blocks != twin_blocks {
        notes.push(format!(
            "resident blocks per SM by registers: Rust {rust_blocks}, twin {twin_blocks} ({} / {} registers, {} threads)",
            rust.registers, twin.registers, rust.threads
        ));
    }
    if rust.sass.atomg != twin.sass.atomg || rust.sass.redg != twin.sass.redg {
        notes.push(format!(
            "global atomics: Rust {} ATOMG + {} REDG, twin {} + {}",
            rust.sass.atomg, rust.sass.redg, twin.sass.atomg, twin.sass.redg
        ));
    }
    notes
}

/// The Markdown table of every pair (Rust entry, Rust side, twin side).
pub fn table(pairs: &[(String, Side, Side)]) -> String {
    let mut out = String::from(
        "| kernel | registers | spill bytes | SASS instructions | FFMA | hottest loop: instructions / FFMA | ATOMG | REDG | LDL+STL | differs |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for (entry, rust, twin) in pairs {
        let both = |r: u32, t: u32| if r == t { r.to_string() } else { format!("{r} / {t}") };
        let notes = differences(rust, twin);
        let hot = |side: &Side| match side.sass.hot_loop {
            Some((len, ffma)) => format!("{len} / {ffma}"),
            None => "-".to_string(),
        };
        let hot_loop = if rust.sass.hot_loop == twin.sass.hot_loop {
            hot(rust)
        } else {
            format!("{} (twin {})", hot(rust), hot(twin))
        };
        out.push_str(&format!(
            "| {entry} | {} | {} | {} | {} | {hot_loop} | {} | {} | {} | {} |\n",
            both(rust.registers, twin.registers),
            both(rust.spill_bytes, twin.spill_bytes),
            both(rust.sass.instructions, twin.sass.instructions),
            both(rust.sass.ffma, twin.sass.ffma),
            both(rust.sass.atomg, twin.sass.atomg),
            both(rust.sass.redg, twin.sass.redg),
            both(rust.sass.local, twin.sass.local),
            if notes.is_empty() {
                "".to_string()
            } else {
                format!("**{}**", notes.join("; "))
            },
        ));
    }
    out
}

/// Runs `command`, returning its stdout and stderr, or why it failed.
pub fn output_of(command: &mut Command) -> Result<(String, String), String> {
    let output = command.output().map_err(|e| format!("cannot run {command:?}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if output.status.success() {
        Ok((stdout, stderr))
    } else {
        Err(format!("{command:?} failed ({}):\n{stderr}", output.status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "\
\tcode for sm_90a
\t\tFunction : matmul_split_k_64x128_cuda
\t.headerflags\t@\"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                    /* 0x00000a00ff017b82 */
        /*0010*/                   FFMA R9, R0.reuse, UR32, R4 ;             /* 0x0000002000097c23 */
        /*0020*/              @!P0 ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU PT, RZ, desc[UR4][R2.64], R5 ;
        /*0030*/               @P1 REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R5 ;
        /*0040*/                   STL [R1], R7 ;
        /*0050*/               @P0 BRA 0x10 ;                                      /* 0x000fea000383ffff */
        /*0060*/                   EXIT ;
\t\t..........
\t\tFunction : vec_add_cuda
        /*0000*/                   FFMA R9, R0, R1, R4 ;
";

    #[test]
    fn sass_counts_each_function_s_opcodes_predicated_or_not() {
        let functions = parse_sass(LISTING);
        assert_eq!(
            functions["matmul_split_k_64x128_cuda"],
            SassCounts {
                instructions: 7,
                ffma: 1,
                atomg: 1,
                redg: 1,
                local: 1,
                // From the FFMA at 0x10 to the branch back to it at 0x50.
                hot_loop: Some((5, 1)),
            }
        );
        assert_eq!(functions["vec_add_cuda"].ffma, 1);
        assert_eq!(functions.len(), 2);
    }

    #[test]
    fn pairs_differ_in_returning_atomics_and_local_memory_only() {
        let side = |atomg, redg, local, spill_bytes| Side {
            registers: 128,
            threads: 256,
            spill_bytes,
            sass: SassCounts {
                instructions: 100,
                ffma: 64,
                atomg,
                redg,
                local,
                hot_loop: None,
            },
        };
        assert!(differences(&side(2, 64, 0, 0), &side(2, 64, 0, 0)).is_empty());
        let atomics = differences(&side(2, 64, 0, 0), &side(66, 0, 0, 0));
        assert_eq!(atomics, ["global atomics: Rust 2 ATOMG + 64 REDG, twin 66 + 0"]);
        let local = differences(&side(0, 0, 0, 0), &side(0, 0, 13, 24));
        assert_eq!(local, ["local memory: the twin (spills 0 / 24 bytes)"]);
        // Fewer registers or instructions alone are the compilers' choices, not a difference here,
        // while the SM holds as many blocks of each.
        let mut fewer = side(0, 0, 0, 0);
        fewer.registers = 100;
        fewer.sass.instructions = 80;
        assert!(differences(&fewer, &side(0, 0, 0, 0)).is_empty());
        // 95 registers leave room for two blocks of 256 threads, 64 for four.
        let (mut rust, mut twin) = (side(0, 0, 0, 0), side(0, 0, 0, 0));
        (rust.registers, twin.registers) = (95, 64);
        assert_eq!(
            differences(&rust, &twin),
            ["resident blocks per SM by registers: Rust 2, twin 4 (95 / 64 registers, 256 threads)"]
        );
    }
}
