//! Output folders a verb writes into, and the one rule for them: a verb deletes or overwrites only
//! what it wrote there itself. The folder is new, empty, or holds the verb's manifest (the names it
//! wrote last time); anything else in it is the user's and is left alone, and a folder that holds
//! files of the user's under the names the verb would write is refused before any work.

use std::path::{Path, PathBuf};

/// The manifest's file name inside an output folder.
pub const MANIFEST: &str = ".written-by-xtask";

/// An output folder claimed by a verb.
#[derive(Debug)]
pub struct Owned {
    dir: PathBuf,
    verb: &'static str,
    /// What the verb wrote there last time (from the manifest).
    previous: Vec<String>,
}

/// Claims `dir`, given by the user as `flag`, for `verb`'s output: refused when it is not a folder,
/// or holds files without the verb's manifest.
pub fn claim(dir: &Path, flag: &str, verb: &'static str) -> Result<Owned, String> {
    let owned = |previous| Owned {
        dir: dir.to_path_buf(),
        verb,
        previous,
    };
    if !dir.exists() {
        return Ok(owned(Vec::new()));
    }
    if !dir.is_dir() {
        return Err(format!(
            "{flag} {} is a file, not a folder: give a folder",
            dir.display()
        ));
    }
    let manifest = dir.join(MANIFEST);
    if manifest.is_file() {
        let text =
            std::fs::read_to_string(&manifest).map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
        let mut lines = text.lines();
        let writer = lines.next().unwrap_or_default();
        if writer != verb {
            return Err(format!(
                "{flag} {} holds the output of `cargo xtask {writer}`, not of `{verb}`: give another folder",
                dir.display()
            ));
        }
        return Ok(owned(lines.map(str::to_string).collect()));
    }
    let mut entries: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {flag} {}: {e}", dir.display()))?
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    if entries.is_empty() {
        return Ok(owned(Vec::new()));
    }
    entries.sort();
    let shown: Vec<&str> = entries.iter().take(3).map(String::as_str).collect();
    Err(format!(
        "{flag} {} already holds files `cargo xtask {verb}` did not write ({}{}): give a new or empty folder, or one an earlier `{verb}` wrote",
        dir.display(),
        shown.join(", "),
        if entries.len() > 3 { ", ..." } else { "" }
    ))
}

impl Owned {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Refuses names the verb is about to write that the user's files already take.
    pub fn check_names<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
        for name in names {
            if self.dir.join(name).exists() && !self.previous.iter().any(|p| p == name) {
                return Err(format!(
                    "{} already holds {name}, which `cargo xtask {}` did not write: move it or give another folder",
                    self.dir.display(),
                    self.verb
                ));
            }
        }
        Ok(())
    }

    /// Creates the folder and removes what the verb wrote there last time and will not write
    /// again (`keep`: the names it is about to write, which it replaces itself).
    pub fn clear_previous(&self, keep: &[String]) -> Result<(), String> {
        std::fs::create_dir_all(&self.dir).map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        for name in self.previous.iter().filter(|name| !keep.contains(name)) {
            // Only plain names: a manifest edited to point elsewhere removes nothing.
            if name.is_empty() || name.contains('/') || name.contains('\\') || name == "." || name == ".." {
                continue;
            }
            let path = self.dir.join(name);
            let removed = if path.is_dir() && !path.is_symlink() {
                std::fs::remove_dir_all(&path)
            } else if path.exists() || path.is_symlink() {
                std::fs::remove_file(&path)
            } else {
                Ok(())
            };
            removed.map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// Records `names` as what the verb wrote (written whole, through a temporary file).
    pub fn record(&self, names: &[String]) -> Result<(), String> {
        let mut text = format!("{}\n", self.verb);
        for name in names {
            text.push_str(name);
            text.push('\n');
        }
        write_whole(&self.dir.join(MANIFEST), text.as_bytes())
    }
}

/// Writes `bytes` to `path` whole or not at all: into a temporary file beside it, then renamed over
/// it, so that a full disk or a kill leaves the old file (or none), never a cut one.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let temporary = path.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    let written = std::fs::write(&temporary, bytes).and_then(|()| std::fs::rename(&temporary, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        format!("cannot write {}: {e}", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-owned-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_folder_of_the_users_is_refused_and_left_as_it_was() {
        let dir = folder("users");
        std::fs::write(dir.join("notes.txt"), "mine").unwrap();
        let error = claim(&dir, "--out", "gpu-bundle").unwrap_err();
        assert!(error.contains("--out") && error.contains("notes.txt"), "{error}");
        assert_eq!(std::fs::read_to_string(dir.join("notes.txt")).unwrap(), "mine");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_what_the_verb_wrote_is_replaced_or_removed() {
        let dir = folder("ours");
        let owned = claim(&dir, "--out", "bench-report").unwrap();
        owned.clear_previous(&[]).unwrap();
        for name in ["README.md", "old.svg"] {
            std::fs::write(dir.join(name), "report").unwrap();
        }
        owned.record(&["README.md".into(), "old.svg".into()]).unwrap();
        // The user adds a file; the next run writes README.md and new.svg.
        std::fs::write(dir.join("mine.svg"), "mine").unwrap();
        let again = claim(&dir, "--out", "bench-report").unwrap();
        let names = vec!["README.md".to_string(), "new.svg".to_string()];
        again.check_names(names.iter().map(String::as_str)).unwrap();
        again.clear_previous(&names).unwrap();
        assert!(!dir.join("old.svg").exists());
        assert_eq!(std::fs::read_to_string(dir.join("mine.svg")).unwrap(), "mine");
        // A name the user's file takes is refused.
        assert!(again.check_names(["mine.svg"]).is_err());
        // Another verb's folder is refused.
        assert!(claim(&dir, "--out", "gpu-bundle").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_is_not_a_folder() {
        let dir = folder("file");
        let file = dir.join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(
            claim(&file, "--out", "gpu-bundle")
                .unwrap_err()
                .contains("not a folder")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
