//! The `noma` binary: argument parsing and printing ([`cli`]) over the
//! workspace's libraries (`noma-core`, `noma-store`, `noma-git`, `noma-verify`,
//! `noma-mcp`); see `.noma/architecture.noma` for the crate graph.

// Functions of at most 80 lines of code (threshold in clippy.toml); the
// libraries deny the same lint through [workspace.lints].
#![deny(clippy::too_many_lines)]

mod cli;
mod report;

// The parser builds many small nodes; mimalloc makes that markedly cheaper
// than the system allocator (measured in benches/parse.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Like every Unix filter: when the reader of our output goes away
    // (`noma ids big.noma | head`), end quietly instead of failing a write.
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any other thread exists;
    // restoring the default disposition of SIGPIPE has no other effect.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(cli::main());
}
