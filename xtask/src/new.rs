//! `cargo xtask new DIR`: a kernel crate of your own and the host crate that launches it, outside
//! this workspace, depending on the toolkit (ptxkit, ptxkit-build, ptxkit-runtime) by path.
//!
//! The files are `xtask/template/`, with the project's names and the toolkit's paths filled in;
//! the toolchain and the lock file are this workspace's, so the new project builds with the same
//! nightly and the same dependency versions. The folder is written whole or not at all: into a
//! folder beside it, renamed into place at the end.

use std::path::{Path, PathBuf};

/// The template's files, by their path in the new project.
const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../template/Cargo.toml")),
    ("README.md", include_str!("../template/README.md")),
    ("kernels/Cargo.toml", include_str!("../template/kernels/Cargo.toml")),
    ("kernels/src/lib.rs", include_str!("../template/kernels/src/lib.rs")),
    (
        "kernels/tests/stencil.rs",
        include_str!("../template/kernels/tests/stencil.rs"),
    ),
    (
        "kernels/tests/missing_barrier.rs",
        include_str!("../template/kernels/tests/missing_barrier.rs"),
    ),
    (
        "kernels/tests/global_memory.rs",
        include_str!("../template/kernels/tests/global_memory.rs"),
    ),
    ("host/Cargo.toml", include_str!("../template/host/Cargo.toml")),
    ("host/build.rs", include_str!("../template/host/build.rs")),
    ("host/src/lib.rs", include_str!("../template/host/src/lib.rs")),
    ("host/src/main.rs", include_str!("../template/host/src/main.rs")),
    (
        "host/tests/stencil.rs",
        include_str!("../template/host/tests/stencil.rs"),
    ),
];

/// Writes the project into `dir` (which must not exist, or be an empty folder), named `name` or
/// after the folder. Returns the project's name.
pub fn create(workspace: &Path, dir: &Path, name: Option<&str>) -> Result<String, String> {
    // Where the folder really is: its parent resolved (links, `..`), the parent made first.
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let parent = parent
        .canonicalize()
        .map_err(|e| format!("{} does not exist ({e}): make it first", parent.display()))?;
    let Some(file_name) = dir.file_name().filter(|n| *n != "." && *n != "..") else {
        return Err(format!(
            "{} names no new folder: give the folder to create",
            dir.display()
        ));
    };
    let dir = &parent.join(file_name);
    let workspace = &workspace
        .canonicalize()
        .map_err(|e| format!("cannot find the workspace: {e}"))?;
    let name = match name {
        Some(name) => name.to_string(),
        None => dir
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| {
                format!(
                    "{} has no folder name to name the project after: give --name",
                    dir.display()
                )
            })?
            .to_lowercase(),
    };
    check_name(&name)?;
    if dir.exists() {
        let empty = std::fs::read_dir(dir)
            .map_err(|e| format!("{} exists and cannot be read ({e}): give a new folder", dir.display()))?
            .next()
            .is_none();
        if !dir.is_dir() || !empty {
            return Err(format!(
                "{} exists and is not an empty folder: give a new folder (nothing is written over)",
                dir.display()
            ));
        }
    }
    if dir.starts_with(workspace) {
        return Err(format!(
            "{} is inside this workspace ({}): the template is a project of its own, so give a folder outside it",
            dir.display(),
            workspace.display()
        ));
    }
    let toolkit = |folder: &str| -> Result<String, String> {
        let path = workspace.join(folder);
        path.canonicalize()
            .map(|p| p.display().to_string())
            .map_err(|e| format!("the toolkit crate {} is missing ({e})", path.display()))
    };
    let snake = name.replace('-', "_");
    let kernels_crate = format!("{snake}_kernels");
    let replacements = [
        ("{{name_snake}}", snake.clone()),
        ("{{name}}", name.clone()),
        ("{{crate}}", kernels_crate.clone()),
        ("{{Type}}", ptxkit_build::type_name(&kernels_crate)),
        ("{{ptxkit}}", toolkit("kernels/device")?),
        ("{{ptxkit_build}}", toolkit("kernels/builder")?),
        ("{{ptxkit_runtime}}", toolkit("host/runtime")?),
    ];
    let staged = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let written = write_all(workspace, &staged, &replacements);
    let moved = written.and_then(|()| {
        if dir.exists() {
            // The empty folder the user made: replaced by the staged one.
            std::fs::remove_dir(dir).map_err(|e| format!("cannot replace the empty folder {}: {e}", dir.display()))?;
        }
        std::fs::rename(&staged, dir).map_err(|e| format!("cannot move the project into {}: {e}", dir.display()))
    });
    if let Err(error) = moved {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(error);
    }
    Ok(name)
}

fn write_all(workspace: &Path, staged: &Path, replacements: &[(&str, String)]) -> Result<(), String> {
    let write = |path: PathBuf, text: &str| -> Result<(), String> {
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    for (file, template) in FILES {
        let mut text = template.to_string();
        for (placeholder, value) in replacements {
            text = text.replace(placeholder, value);
        }
        write(staged.join(file), &text)?;
    }
    // The same toolchain and dependency versions as this workspace.
    for file in ["rust-toolchain.toml", "Cargo.lock"] {
        let text = std::fs::read_to_string(workspace.join(file))
            .map_err(|e| format!("cannot read {}: {e}", workspace.join(file).display()))?;
        write(staged.join(file), &text)?;
    }
    Ok(())
}

/// A package name cargo takes and that names no crate of the toolkit.
fn check_name(name: &str) -> Result<(), String> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !valid {
        return Err(format!(
            "'{name}' is not a project name: give lowercase letters, digits, '-' and '_', starting with a letter (--name NAME)"
        ));
    }
    if name.starts_with("ptxkit") || matches!(name, "kernels" | "host" | "core" | "std" | "test") {
        return Err(format!(
            "'{name}' is taken by a crate the project depends on: give another (--name NAME)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
    }

    #[test]
    fn a_project_is_written_with_its_names_and_the_toolkit_paths() {
        let root = std::env::temp_dir().join(format!("xtask-new-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let dir = root.join("my-stencil");
        assert_eq!(create(&workspace(), &dir, None).unwrap(), "my-stencil");
        let host = std::fs::read_to_string(dir.join("host/src/lib.rs")).unwrap();
        assert!(host.contains("include_kernels!(my_stencil_kernels)"), "{host}");
        assert!(host.contains("MyStencilKernels"));
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            !manifest.contains("{{") && manifest.contains("kernels/device"),
            "{manifest}"
        );
        assert!(dir.join("rust-toolchain.toml").is_file() && dir.join("Cargo.lock").is_file());
        // Nothing the user owns is written over: a second run into the same folder is refused.
        let again = create(&workspace(), &dir, None).unwrap_err();
        assert!(again.contains("not an empty folder"), "{again}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn bad_names_and_folders_inside_the_workspace_are_refused() {
        assert!(check_name("My Kernels").is_err());
        assert!(check_name("1st").is_err());
        assert!(check_name("ptxkit").is_err());
        assert!(check_name("stencil-2d").is_ok());
        let inside = create(&workspace(), &workspace().join("target/new-inside"), None).unwrap_err();
        assert!(inside.contains("inside this workspace"), "{inside}");
    }
}
