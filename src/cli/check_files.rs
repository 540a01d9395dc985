//! What `noma check` checks: the paths given (a directory stands for the
//! documents under it), or, given none, the repository's documents.

use std::path::{Path, PathBuf};

use crate::report::output::{Exit, Output};

/// The files to check: `given` with each directory replaced by the `.noma`
/// files under it that .gitignore does not exclude; with no path, those of
/// the repository's work tree (from wherever in it the command runs; the
/// current directory's tree outside a repository). A file that is neither
/// a `.noma` document nor a book manifest is refused, as is a directory
/// without documents: a check of nothing would pass vacuously. A refused
/// path does not hide the others: they are returned with what the
/// refusals said and the exit they leave.
pub fn targets(given: &[PathBuf]) -> (Vec<PathBuf>, Output) {
    if given.is_empty() {
        let (root, shown) = repository_root();
        let tidy = |p: PathBuf| p.strip_prefix(".").map(Path::to_path_buf).unwrap_or(p);
        return match under(&root, &shown) {
            Ok(found) => (found.into_iter().map(tidy).collect(), Output::default()),
            Err(said) => (Vec::new(), said),
        };
    }
    let (mut out, mut refused) = (Vec::new(), Output::default());
    for f in given {
        let found = if f.is_dir() {
            under(f, &f.display().to_string())
        } else if std::fs::symlink_metadata(f).is_err() {
            Err(Output::error(
                format!("noma check: {}: no such file{}", f.display(), near(f)),
                Exit::NotRun,
            ))
        } else {
            super::noma_path("check", f, true).map(|()| vec![f.clone()])
        };
        match found {
            Ok(files) => out.extend(files),
            Err(said) => refused.extend(said),
        }
    }
    (out, refused)
}

/// `"; did you mean `plan.noma`?"` for a document of that directory one
/// or two typos away, else how to check them all.
fn near(missing: &Path) -> String {
    match near_name(missing) {
        Some(n) => format!("; did you mean `{}`?", n.display()),
        None => "; `noma check` with no path checks every document of the repository".into(),
    }
}

/// A document of `missing`'s directory one or two typos from its name.
pub(super) fn near_name(missing: &Path) -> Option<PathBuf> {
    let dir = missing.parent().filter(|d| !d.as_os_str().is_empty());
    let names: Vec<String> = std::fs::read_dir(dir.unwrap_or(Path::new(".")))
        .map(|entries| {
            (entries.flatten())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".noma"))
                .collect()
        })
        .unwrap_or_default();
    let name = missing.file_name().unwrap_or_default().to_string_lossy();
    noma_core::suggest::near_miss(&name, names.iter().map(String::as_str))
        .map(|n| missing.with_file_name(n))
}

fn under(dir: &Path, shown: &str) -> Result<Vec<PathBuf>, Output> {
    let found = noma_store::fsio::noma_files_under(dir)
        .map_err(|e| Output::error(format!("noma check: {}: {e}", dir.display()), Exit::NotRun))?;
    if found.is_empty() {
        return Err(Output::error(
            format!(
                "noma check: no .noma documents in {shown} (files .gitignore excludes are \
                 skipped); name the files to check, or create a document first"
            ),
            Exit::NotRun,
        ));
    }
    Ok(found)
}

/// The repository's work tree as a path from the current directory (`.` at
/// its root, `../..` two levels down) and how to name it; outside a
/// repository, the current directory.
fn repository_root() -> (PathBuf, String) {
    let here = || (PathBuf::from("."), "the current directory".to_string());
    let Ok(cwd) = std::env::current_dir() else {
        return here();
    };
    let Some(root) = noma_git::git::blob::worktree_root(&cwd) else {
        return here();
    };
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let shown = "this repository".to_string();
    match cwd.strip_prefix(&root) {
        Ok(rel) if rel.as_os_str().is_empty() => (PathBuf::from("."), shown),
        Ok(rel) => (rel.components().map(|_| "..").collect(), shown),
        Err(_) => (root, shown),
    }
}
