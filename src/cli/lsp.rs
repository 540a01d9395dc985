//! `noma lsp`: the language server on stdin/stdout.
//!
//! stdout carries the protocol only; messages for people go to stderr.
//! Exit codes: 0 the client shut the session down, 2 the session broke
//! (the client went away without `shutdown`, a malformed handshake).

use super::{EXIT_OK, EXIT_USAGE};

/// Arguments of `noma lsp`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Editors start it as `noma lsp` for .noma files; set-up for VS Code, \
Neovim, Helix and Zed: docs/editors.md"
)]
pub struct Args {
    /// Accepted for editors that pass it by default (stdio is the only transport).
    #[arg(long)]
    pub stdio: bool,
}

/// Runs `noma lsp`.
pub fn run(_args: Args) -> i32 {
    // A client that goes away must not kill us with SIGPIPE halfway through
    // a write: a failed write ends the session with an error instead.
    #[cfg(unix)]
    // SAFETY: changes only the disposition of SIGPIPE, before any thread
    // of ours is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    match noma_lsp::serve_stdio() {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("noma lsp: {e}");
            EXIT_USAGE
        }
    }
}
