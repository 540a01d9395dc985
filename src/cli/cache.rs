//! `noma cache stats|clear`: inspect or empty the per-block hash cache.
//!
//! Which cache: the one of the git working tree around the current
//! directory (`<root>/.noma/cache/`). Outside a repository, `./.noma/cache/`
//! is used only when `./.noma/` already exists (a project set up without
//! git); otherwise there is no cache, so stray commands never litter
//! arbitrary directories with `.noma/`.

use std::path::{Path, PathBuf};

use super::Format;
use crate::report::output::{Exit, Output};
use noma_git::cache::{Backing, BlockCache};

/// Arguments of `noma cache`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Path, entries, blocks, size on disk and schema version.
    Stats {
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Delete every entry (the file is kept, emptied and shrunk).
    Clear,
}

/// The directory whose `.noma/cache/` serves commands run in `cwd`, if any.
pub fn cache_root(cwd: &Path) -> Option<PathBuf> {
    noma_git::git::blob::worktree_root(cwd)
        .or_else(|| cwd.join(".noma").is_dir().then(|| cwd.to_path_buf()))
}

/// The cache for commands run in the current directory (disabled when
/// there is none, see the module docs).
pub fn open_for_cwd() -> BlockCache {
    match std::env::current_dir().ok().as_deref().and_then(cache_root) {
        Some(root) => open(&root),
        None => BlockCache::disabled(),
    }
}

/// The cache under `root`, its notice (a rebuilt or bypassed cache) printed
/// on stderr as one `noma: note:` line.
pub fn open(root: &Path) -> BlockCache {
    BlockCache::open(root).with_notice_sink(Box::new(|msg| {
        super::output::note(format!("noma: note: block cache {msg}"))
    }))
}

/// Runs `noma cache`.
pub fn run(args: Args) -> Output {
    let cache = open_for_cwd();
    let mut c = Output::default();
    match args.action {
        Action::Stats { format } => {
            let stats = cache.stats();
            match format {
                Format::Json => c.json_typed(stats),
                Format::Human => {
                    match &stats.path {
                        Some(p) => c.out(format!("path: {}", p.display())),
                        None => c.out("path: none (not in a git repository and no .noma/ here)"),
                    }
                    let backing = match stats.backing {
                        Backing::File => "file",
                        Backing::Memory => "memory (the file is unusable)",
                        Backing::Disabled => "disabled",
                    };
                    c.out(format!("backing: {backing}"));
                    c.out(format!("entries: {}", stats.entries));
                    c.out(format!("blocks: {}", stats.blocks));
                    c.out(format!("blob ids: {}", stats.blob_ids));
                    c.out(format!("size: {} bytes", stats.size_bytes));
                    c.out(format!("schema version: {}", stats.schema_version));
                }
            }
            c
        }
        Action::Clear => match cache.clear() {
            Ok(n) => {
                let stats = cache.stats();
                match stats.path {
                    Some(p) if stats.backing == Backing::File => {
                        c.out(format!("cleared {n} entries from {}", p.display()))
                    }
                    _ => c.out("no cache to clear"),
                }
                c
            }
            Err(e) => Output::error(
                format!("noma: cannot clear the block cache: {e}"),
                Exit::NotRun,
            ),
        },
    }
}
