//! What the builder reads in and writes into PTX text, after rustc and before ptxas.
//!
//! * Launch bounds: `kernel!` leaves, for each kernel with `#[launch_bounds(..)]`, a global
//!   `__ptxkit_launch_bounds_<entry>` holding the block and the blocks per SM (rustc has no
//!   attribute for CUDA's `__launch_bounds__`). [`finish`] turns each into `.maxntid` and
//!   `.minnctapersm` on its entry (and `.reqnctapercluster` for a kernel launched in clusters)
//!   and removes the global.
//! * Line information: with debug info LLVM writes DWARF sections that ptxas rejects; [`finish`]
//!   keeps the `.file` and `.loc` lines (what `-lineinfo` gives nvcc) and drops the rest.
//! * Calls out of the module: a function the PTX declares `.extern` and never defines has no
//!   definition the driver can link, but for the device runtime's `vprintf`.

use std::fmt;

/// Prefix of the globals that carry a kernel's launch bounds; the entry name follows.
pub const LAUNCH_BOUNDS_PREFIX: &str = "__ptxkit_launch_bounds_";

/// Functions the CUDA driver provides to every module (the device runtime's system calls).
pub const DRIVER_FUNCTIONS: &[&str] = &["vprintf", "malloc", "free", "__assertfail"];

/// The `.entry` names a PTX module defines.
pub fn entry_names(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| line.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split(['(', ' ']).next().unwrap_or(rest).to_string())
        .collect()
}

/// A kernel's launch bounds as `kernel!` recorded them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchBounds {
    pub block: (u32, u32, u32),
    pub min_blocks_per_sm: u32,
    /// Blocks per cluster along x; 1 (or 0, in a record without the word) for none.
    pub cluster: u32,
}

/// What [`finish`] found wrong with a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PtxProblem {
    /// Functions the module calls but does not define, as their PTX names.
    UndefinedFunctions(Vec<String>),
    /// A launch-bounds record whose entry the module does not define, or that cannot be read.
    BadLaunchBounds { global: String, reason: String },
}

impl fmt::Display for PtxProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PtxProblem::UndefinedFunctions(names) => {
                let described: Vec<String> = names.iter().map(|n| describe_symbol(n)).collect();
                write!(
                    f,
                    "the kernels call functions that nvptx64 has no definition of: {}. On the GPU a kernel can \
                     call only what its own crate compiles: a function of another crate must be generic or \
                     #[inline] to be compiled there, and std, alloc and libm functions (f32::sin, format!, \
                     Vec) do not exist for nvptx64: use ptxkit::device (device::exp, device::fma) or write \
                     the function in the kernel crate",
                    described.join(", ")
                )
            }
            PtxProblem::BadLaunchBounds { global, reason } => {
                write!(f, "the launch-bounds record {global} is unusable: {reason}")
            }
        }
    }
}

/// A symbol as a reader knows it: Rust's v0-mangled names (`_RNvNtCs…_6ptxkit6device3foo`) as
/// the path they spell (`ptxkit::device::foo`), others as they are.
pub fn describe_symbol(symbol: &str) -> String {
    let Some(mangled) = symbol.strip_prefix("_R") else {
        return format!("`{symbol}`");
    };
    // Every identifier in a v0 name is its length in decimal, an optional `_`, then its bytes;
    // the crate's disambiguator (`Cs…_`) and the namespace tags between them are skipped.
    let bytes = mangled.as_bytes();
    let (mut i, mut parts) = (0, Vec::new());
    while i < bytes.len() {
        if bytes[i] == b'C' && bytes.get(i + 1) == Some(&b's') {
            // Crate root disambiguator: `Cs<base62>_`.
            match mangled[i..].find('_') {
                Some(end) => i += end + 1,
                None => break,
            }
            continue;
        }
        if bytes[i].is_ascii_digit() && bytes[i] != b'0' {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let len: usize = mangled[start..i].parse().unwrap_or(0);
            if bytes.get(i) == Some(&b'_') {
                i += 1;
            }
            if let Some(ident) = mangled.get(i..i + len) {
                parts.push(ident);
            }
            i += len;
            continue;
        }
        i += 1;
    }
    if parts.is_empty() {
        format!("`{symbol}`")
    } else {
        format!("`{}` ({symbol})", parts.join("::"))
    }
}

/// The module as ptxas and the driver take it: launch bounds written onto their entries, debug
/// sections dropped (line information kept), and checked for calls out of the module.
pub fn finish(ptx: &str) -> Result<String, PtxProblem> {
    let bounds = launch_bounds(ptx)?;
    let entries = entry_names(ptx);
    if let Some((entry, _)) = bounds.iter().find(|(entry, _)| !entries.contains(entry)) {
        return Err(PtxProblem::BadLaunchBounds {
            global: format!("{LAUNCH_BOUNDS_PREFIX}{entry}"),
            reason: format!("the module has no entry `{entry}`"),
        });
    }
    let undefined = undefined_functions(ptx);
    if !undefined.is_empty() {
        return Err(PtxProblem::UndefinedFunctions(undefined));
    }
    let mut out = String::with_capacity(ptx.len() + 64 * bounds.len());
    let mut due: Option<String> = None;
    // Clusters exist from sm_90: a module for an older target (where a clustered kernel is a stub
    // that traps) asks for none.
    let mut clusters = false;
    let mut lines = ptx.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if is_bounds_global(trimmed) {
            continue;
        }
        if trimmed.starts_with(".section") && trimmed.contains(".debug") {
            skip_section(trimmed, &mut lines);
            continue;
        }
        if trimmed.starts_with("$L__sec_end") {
            continue;
        }
        if let Some(target) = trimmed.strip_prefix(".target ") {
            // `, debug` asks ptxas for full debug information, which the dropped sections held.
            let arches: Vec<&str> = target.split(',').map(str::trim).filter(|t| *t != "debug").collect();
            clusters = arches.iter().any(|arch| {
                let number = arch.trim_start_matches("sm_").trim_end_matches(char::is_alphabetic);
                number.parse::<u32>().is_ok_and(|n| n >= 90)
            });
            out.push_str(&format!(".target {}\n", arches.join(", ")));
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix(".visible .entry ") {
            let entry = rest.split(['(', ' ']).next().unwrap_or(rest);
            due = bounds.iter().find(|(e, _)| e == entry).map(|(_, b)| {
                let (x, y, z) = b.block;
                let cluster = match b.cluster {
                    ctas if ctas > 1 && clusters => format!(".reqnctapercluster {ctas}, 1, 1\n"),
                    _ => String::new(),
                };
                format!(
                    ".maxntid {x}, {y}, {z}\n.minnctapersm {}\n{cluster}",
                    b.min_blocks_per_sm
                )
            });
        }
        if trimmed == "{"
            && let Some(directives) = due.take()
        {
            out.push_str(&directives);
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

/// Skips the lines of a `.section NAME { … }` block whose first line is `first`.
fn skip_section<'a>(first: &str, lines: &mut impl Iterator<Item = &'a str>) {
    let mut depth = first.matches('{').count() as i64 - first.matches('}').count() as i64;
    let mut opened = first.contains('{');
    while !opened || depth > 0 {
        let Some(line) = lines.next() else { return };
        depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
        opened |= line.contains('{');
    }
}

fn is_bounds_global(line: &str) -> bool {
    line.starts_with(".visible .global") && line.contains(LAUNCH_BOUNDS_PREFIX)
}

/// Every launch-bounds record in `ptx`, by entry name.
pub fn launch_bounds(ptx: &str) -> Result<Vec<(String, LaunchBounds)>, PtxProblem> {
    let mut found = Vec::new();
    for line in ptx.lines().map(str::trim).filter(|l| is_bounds_global(l)) {
        let name = line
            .split_whitespace()
            .find(|w| w.starts_with(LAUNCH_BOUNDS_PREFIX))
            .unwrap_or_default();
        let global = name.split('[').next().unwrap_or(name).to_string();
        let bad = |reason: &str| PtxProblem::BadLaunchBounds {
            global: global.clone(),
            reason: reason.to_string(),
        };
        let entry = global[LAUNCH_BOUNDS_PREFIX.len()..].to_string();
        // `= {128, 0, 0, 0, 1, …};`: little-endian u32s (block x, y, z, blocks per SM, blocks per
        // cluster); LLVM leaves out trailing zero bytes.
        let values = line
            .split_once('{')
            .and_then(|(_, rest)| rest.split_once('}'))
            .map(|(inner, _)| inner)
            .ok_or_else(|| bad("no initialiser"))?;
        let mut bytes = [0u8; 20];
        for (i, byte) in values.split(',').map(str::trim).filter(|b| !b.is_empty()).enumerate() {
            if i >= bytes.len() {
                return Err(bad("more than 20 bytes"));
            }
            bytes[i] = byte.parse().map_err(|_| bad("a byte that is not a number"))?;
        }
        let word = |i: usize| u32::from_le_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]]);
        found.push((
            entry,
            LaunchBounds {
                block: (word(0), word(1), word(2)),
                min_blocks_per_sm: word(3),
                cluster: word(4).max(1),
            },
        ));
    }
    Ok(found)
}

/// Functions the module declares `.extern` and does not define, but the driver's own.
pub fn undefined_functions(ptx: &str) -> Vec<String> {
    let defined: Vec<&str> = ptx
        .lines()
        .filter(|l| l.starts_with(".visible .func") || l.starts_with(".func"))
        .filter_map(function_name)
        .collect();
    ptx.lines()
        .filter(|l| l.trim_start().starts_with(".extern .func"))
        .filter_map(function_name)
        .filter(|name| !defined.contains(name) && !DRIVER_FUNCTIONS.contains(name))
        .map(str::to_string)
        .collect()
}

/// The name in a `.func` declaration line: the word before the parameter list, after any return
/// value (`.func (.param .b32 func_retval0) vprintf(`).
fn function_name(line: &str) -> Option<&str> {
    let rest = line.split(".func").nth(1)?.trim_start();
    let rest = if rest.starts_with('(') {
        &rest[rest.find(')')? + 1..]
    } else {
        rest
    };
    rest.trim_start()
        .split(|c: char| c == '(' || c.is_whitespace())
        .next()
        .filter(|name| !name.is_empty())
}

/// The entries whose bodies call `vprintf`: their argument buffer is a stack frame, which the
/// local-memory check allows them.
pub fn entries_calling(ptx: &str, function: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    let call = format!(" {function}, (");
    for line in ptx.lines() {
        if let Some(rest) = line.trim_start().strip_prefix(".visible .entry ") {
            current = rest.split(['(', ' ']).next().map(str::to_string);
        }
        if line.contains(&call)
            && let Some(entry) = &current
            && !found.contains(entry)
        {
            found.push(entry.clone());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = "\
.version 8.0
.target sm_80, debug
.address_size 64

.extern .func  (.param .b32 func_retval0) vprintf
(
\t.param .b64 vprintf_param_0,
\t.param .b64 vprintf_param_1
)
;
.visible .global .align 4 .b8 __ptxkit_launch_bounds_bounded[16] = {0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 3};
.visible .entry bounded(
\t.param .u64 p
)
{
\t.loc\t1 4 5
\tret;
}
.visible .entry free(
)
{
\tcall.uni (retval0), vprintf, (param0, param1);
\tret;
}
\t.file\t1 \"/src/lib.rs\"
\t.section\t.debug_abbrev
\t{
.b8 1
\t}
\t.section\t.debug_macinfo\t{\t}
$L__sec_end0:
";

    #[test]
    fn launch_bounds_go_between_the_parameters_and_the_body_and_their_global_goes() {
        let out = finish(MODULE).unwrap();
        assert!(
            out.contains(")\n.maxntid 256, 2, 1\n.minnctapersm 3\n{\n\t.loc\t1 4 5"),
            "{out}"
        );
        assert!(!out.contains(LAUNCH_BOUNDS_PREFIX));
        // The entry without a record gets nothing.
        assert!(out.contains(".visible .entry free(\n)\n{\n"));
    }

    /// A record's fifth word, where it is more than 1, launches the entry in clusters.
    #[test]
    fn a_clustered_record_asks_for_its_cluster() {
        let module = ".version 8.0\n.target sm_90a\n.address_size 64\n\
            .visible .global .align 4 .b8 __ptxkit_launch_bounds_paired[20] = {128, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2};\n\
            .visible .entry paired(\n)\n{\n\tret;\n}\n";
        let out = finish(module).unwrap();
        assert!(
            out.contains(")\n.maxntid 384, 1, 1\n.minnctapersm 1\n.reqnctapercluster 2, 1, 1\n{\n"),
            "{out}"
        );
        let bounds = launch_bounds(module).unwrap();
        assert_eq!(bounds[0].1.cluster, 2);
        // A record of one block per cluster asks for none, nor a module older than sm_90.
        let single = module.replace("0, 0, 0, 2}", "0, 0, 0, 1}");
        assert!(!finish(&single).unwrap().contains(".reqnctapercluster"));
        let old = module.replace("sm_90a", "sm_80");
        assert!(!finish(&old).unwrap().contains(".reqnctapercluster"));
    }

    #[test]
    fn debug_sections_go_and_line_information_stays() {
        let out = finish(MODULE).unwrap();
        assert!(out.contains(".target sm_80\n"));
        assert!(out.contains("\t.file\t1 \"/src/lib.rs\"") && out.contains(".loc"));
        assert!(!out.contains(".section") && !out.contains("$L__sec_end") && !out.contains(".b8 1"));
    }

    #[test]
    fn a_call_out_of_the_module_is_refused_by_name_but_the_drivers_own() {
        assert!(undefined_functions(MODULE).is_empty());
        let ptx = ".extern .func  (.param .b32 func_retval0) sinf\n(\n)\n;\n\
                   .extern .func _RNvNtCsabc123_6ptxkit6device6helper(\n)\n;\n";
        let problem = finish(ptx).unwrap_err();
        assert_eq!(
            problem,
            PtxProblem::UndefinedFunctions(vec!["sinf".into(), "_RNvNtCsabc123_6ptxkit6device6helper".into()])
        );
        let text = problem.to_string();
        assert!(
            text.contains("`sinf`") && text.contains("`ptxkit::device::helper`"),
            "{text}"
        );
    }

    #[test]
    fn a_record_for_an_entry_the_module_lacks_is_refused() {
        let ptx = ".visible .global .align 4 .b8 __ptxkit_launch_bounds_gone[16] = {1};\n";
        assert!(matches!(finish(ptx), Err(PtxProblem::BadLaunchBounds { .. })));
    }

    #[test]
    fn entries_and_their_calls_are_read_from_the_text() {
        assert_eq!(entry_names(MODULE), ["bounded", "free"]);
        assert_eq!(entries_calling(MODULE, "vprintf"), ["free"]);
    }
}
