//! `noma-git` — the git hooks around the Noma engine, and the facade the
//! binary and the MCP server reach the git crates through.
//!
//! Its own jobs: what the hooks check ([`staged`]), hand edits turned
//! into records ([`record`]), installing hooks and the merge driver
//! ([`install`]), and for the shells one patch request's context
//! ([`patch`]) and a writer's default name ([`actor`]). The layers under
//! it keep their old paths here: repository plumbing and the block cache
//! ([`git`], [`cache`]: `noma-repo`, the only crate that names git2 or
//! rusqlite), changed blocks with the watcher ([`changes`]:
//! `noma-changes`), who changed each block, replay's base in history and
//! the signature checks that need a repository ([`history`],
//! [`history_replay`], [`provenance`]: `noma-history`), and the merge
//! driver with `noma reconcile` ([`merge`]: `noma-reconcile`). Libraries
//! return data: the binary words it.

pub mod actor;
pub use noma_changes as changes;
pub use noma_history as history;
pub use noma_history::{history_replay, provenance};
pub(crate) use noma_repo::datasets;
pub use noma_repo::{cache, git};
pub mod install;
pub use noma_reconcile as merge;
pub mod patch;
pub mod record;
pub mod staged;
