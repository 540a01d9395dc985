//! `noma init`: set up the repository containing the current directory
//! (policy file, `.gitignore` entry for the cache, `.gitattributes` rules
//! keeping documents byte-exact, git hooks, `.mcp.json`). Idempotent;
//! never overwrites existing files. See [`noma_git::install::init`] and
//! [`noma_git::install::setup`].
//!
//! Exit codes: 0 done, 1 the hooks were refused or `.mcp.json` could not be
//! parsed (left untouched; the other steps are done),
//! 2 could not run (no repository, bare repository, I/O error).

use super::hooks::setup::{self, InitRequest};

/// Arguments of `noma init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Do not install the git hooks (for hook managers); the merge driver
    /// is still registered.
    #[arg(long)]
    no_hooks: bool,
    /// Replace foreign git hooks instead of chaining them (they are kept as
    /// `<hook>.noma-backup`), even when a hook manager (lefthook,
    /// pre-commit, core.hooksPath) already runs noma. Never overwrites the
    /// policy file.
    #[arg(long)]
    force: bool,
    /// Do not register `noma mcp` in `.mcp.json`.
    #[arg(long)]
    no_mcp: bool,
    /// Start a transcript (a genesis record, as `noma record` writes) for
    /// each document that has none; without it they are only listed.
    #[arg(long)]
    record_existing: bool,
}

/// Runs `noma init`.
pub fn run(args: Args) -> crate::report::output::Output {
    setup::init_repository(InitRequest {
        hooks: !args.no_hooks,
        force: args.force,
        mcp: !args.no_mcp,
        record_existing: args.record_existing,
    })
}
