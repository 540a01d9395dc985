//! `noma init`: set up the repository containing the current directory
//! (policy file, `.gitignore` entry for the cache, `.gitattributes` rules
//! keeping documents byte-exact, git hooks, `.mcp.json`). Idempotent;
//! never overwrites existing files. See [`noma_git::install::init`].
//!
//! Exit codes: 0 done, 1 the hooks were refused or `.mcp.json` could not be
//! parsed (left untouched; the other steps are done),
//! 2 could not run (no repository, bare repository, I/O error).

use noma_git::config::CONFIG_PATH;
use noma_git::git::layout::Layout;
use noma_git::install::init::{self, Change, InitOptions, CACHE_IGNORE};

use super::{EXIT_OK, EXIT_USAGE};

/// Arguments of `noma init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Do not install the git hooks (for hook managers); the merge driver
    /// is still registered.
    #[arg(long)]
    no_hooks: bool,
    /// Replace foreign git hooks instead of chaining them (they are kept as
    /// `<hook>.noma-backup`). Never overwrites the policy file.
    #[arg(long)]
    force: bool,
    /// Do not register `noma mcp` in `.mcp.json`.
    #[arg(long)]
    no_mcp: bool,
}

/// Runs `noma init`.
pub fn run(args: Args) -> i32 {
    let layout = match Layout::from_env() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("noma init: {e}; run `git init` first");
            return EXIT_USAGE;
        }
    };
    // Needed with --no-hooks too: the merge driver names this binary.
    let noma = match noma_git::install::current_noma() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("noma init: cannot locate this binary ({e})");
            return EXIT_USAGE;
        }
    };
    let opts = InitOptions {
        hooks: !args.no_hooks,
        force: args.force,
        noma: noma.clone(),
        mcp: !args.no_mcp,
    };
    let report = match init::init(&layout, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("noma init: {e}");
            return EXIT_USAGE;
        }
    };
    println!("repository: {}", report.root.display());
    println!(
        "{}",
        match report.config {
            Change::Created => format!("{CONFIG_PATH}: created with the default policy"),
            _ => format!("{CONFIG_PATH}: exists; left as is"),
        }
    );
    println!(
        "{}",
        match report.gitignore {
            Change::Created =>
                format!(".gitignore: created, ignoring {CACHE_IGNORE} and noma's temporary files"),
            Change::Updated =>
                format!(".gitignore: now ignores {CACHE_IGNORE} and noma's temporary files"),
            Change::Unchanged =>
                format!(".gitignore: already ignores {CACHE_IGNORE} and noma's temporary files"),
        }
    );
    // Not tied to the hooks: without these rules a CRLF checkout breaks
    // every transcript, hooks or not.
    let eol_code = super::hooks::eol_install(&layout);
    let mcp_code = print_mcp(report.mcp);
    let hooks_code = match report.hooks {
        None => {
            println!(
                "hooks: skipped (--no-hooks; a hook manager runs `noma hook pre-commit` and \
                 `noma hook pre-merge-commit`)"
            );
            // A hook manager owns the hooks, not merges: without the driver
            // every concurrent transcript append would conflict.
            super::hooks::driver_install(&layout, &noma)
        }
        Some((dir, result)) => {
            println!("hooks dir: {}", dir.display());
            let code = super::hooks::print_install(result, "noma init");
            if code != EXIT_OK {
                eprintln!(
                    "noma init: the other steps are done; rerun with --force to replace the \
                     hooks (a backup is kept) or with --no-hooks"
                );
            }
            // The merge driver belongs to the same setup: `noma hooks
            // install` registers it too.
            code.max(super::hooks::driver_install(&layout, &noma))
        }
    };
    hooks_code.max(mcp_code).max(eol_code)
}

/// Prints the `.mcp.json` outcome; exit 1 when the file was left untouched.
fn print_mcp(report: Option<Result<init::McpReport, init::McpConfigError>>) -> i32 {
    use init::McpChange;
    match report {
        None => println!("{}: skipped (--no-mcp)", init::MCP_CONFIG),
        Some(Ok(r)) => println!(
            "{}: {}",
            init::MCP_CONFIG,
            match r.change {
                McpChange::Created => format!("created, registering `{} mcp`", r.command),
                McpChange::Added => format!("added the noma server (`{} mcp`)", r.command),
                McpChange::Unchanged => "already registers the noma server".to_string(),
                McpChange::KeptExisting =>
                    "has its own noma entry; left as is (delete it and rerun to regenerate)"
                        .to_string(),
            }
        ),
        Some(Err(e)) => {
            eprintln!("noma init: {e}");
            return super::EXIT_FAIL;
        }
    }
    EXIT_OK
}
