//! `noma-git` — git around the Noma engine.
//!
//! Everything that knows a repository: plumbing over `git2` ([`git`], the
//! only module that names it), the content-addressed SQLite cache of
//! block tables ([`cache`]), what the
//! hooks check ([`staged`]), hand edits turned into records ([`record`]),
//! installing hooks and the merge driver ([`install`]), blocks changed
//! since a base ([`changes`]), the merge driver and `noma reconcile`
//! ([`merge`]), signed records and approvals where a repository is
//! involved ([`provenance`]; the format, verification and the policy
//! file are `noma_provenance`'s), and replay's
//! base looked up in history ([`history_replay`]), and who changed each
//! block ([`history`]). For the shells: one
//! patch request's options ([`patch`]) and a writer's default name
//! ([`actor`]). Libraries return data: the binary words it.

pub mod actor;
pub use noma_repo::{cache, git};
pub use noma_changes as changes;
pub(crate) use noma_repo::datasets;
pub use noma_history as history;
pub use noma_history::{history_replay, provenance};
pub mod install;
pub use noma_reconcile as merge;
pub mod patch;
pub mod record;
pub mod staged;
