//! Git plumbing (git2): the only place that talks to repositories and the
//! only module that names the `git2` crate. Callers get bytes, paths,
//! plain-data listings and object ids ([`Oid`], a 20-byte value); the
//! repository handle, its objects and its errors stay behind this
//! boundary ([`repo::GitError`] wraps the latter).

pub mod amend;
pub mod blob;
pub mod config;
pub mod layout;
pub mod repo;
pub mod stream;

/// A git object id (commit or blob): a plain value callers may hold,
/// compare and print.
pub use git2::Oid;

/// Commits visited at most when searching a path's history for a version
/// by sha256 (a base for replay, a state for the merge driver).
pub const HISTORY_LIMIT: usize = 20_000;
