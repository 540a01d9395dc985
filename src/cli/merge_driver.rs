//! `noma merge-driver %O %A %B %L %P %X %Y`: the git merge driver for `.noma`
//! documents and their `.patches` transcripts (registered by
//! `noma hooks install`). See [`noma_git::merge`] for the design and
//! [`noma_git::merge::driver`] for the run.
//!
//! Writes the merged content into the ours file (`%A`) and exits 0 when the
//! merge is clean, 1 on conflicts (the file then holds the conflicted
//! content and each conflict is printed on stderr), 2 when it could not run.

use std::ffi::OsString;
use std::path::PathBuf;

use noma_git::merge::driver::{self, Call};

use crate::report::output::{Exit, Output};

/// Arguments of `noma merge-driver` (what git passes for `%O %A %B %L %P %X %Y`).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The base version (`%O`).
    pub base: PathBuf,
    /// Our version, overwritten with the result (`%A`).
    pub ours: PathBuf,
    /// Their version (`%B`).
    pub theirs: PathBuf,
    /// Conflict marker size (`%L`); block-level conflicts do not use it.
    pub marker_size: Option<String>,
    /// The path being merged, relative to the work-tree root (`%P`).
    pub path: Option<String>,
    /// Git's label for our side (`%X`, git 2.44+): `HEAD` in a merge, rebase
    /// or cherry-pick, `Updated upstream` when a stash is applied.
    pub ours_label: Option<OsString>,
    /// Git's label for their side (`%Y`, git 2.44+): the merged branch, the
    /// picked commit (`1a2b3c4 (subject)`) or `Stashed changes`.
    pub theirs_label: Option<OsString>,
}

/// Runs `noma merge-driver`.
pub fn run(args: Args) -> Output {
    let call = Call {
        base: &args.base,
        ours: &args.ours,
        theirs: &args.theirs,
        path: args.path.as_deref(),
        ours_label: args.ours_label.as_deref(),
        theirs_label: args.theirs_label.as_deref(),
    };
    match driver::run(&call) {
        Ok(driven) => {
            let mut c = Output::ending(if driven.clean {
                Exit::Passed
            } else {
                Exit::Failed
            });
            for m in &driven.messages {
                c.err(format!("noma merge-driver: {m}"));
            }
            c
        }
        Err(e) => Output::error(format!("noma merge-driver: {e}"), Exit::NotRun),
    }
}
