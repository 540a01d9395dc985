//! Git plumbing (git2): the only place that talks to repositories and the
//! only module that names the `git2` crate. Callers get bytes, paths,
//! plain-data listings and object ids ([`Oid`], noma's own 20-byte value);
//! the repository handle, its objects and its errors stay behind this
//! boundary ([`repo::GitError`] carries the latter's messages as text).

pub mod amend;
pub mod blob;
pub mod config;
#[cfg(target_os = "linux")]
pub mod index_file;
pub mod layout;
pub mod object;
mod oid;
pub mod repo;
pub mod revision;
pub mod stream;

pub use oid::{Oid, ParseOidError};

/// Commits visited at most when searching a path's history for a version
/// by sha256 (a base for replay, a state for the merge driver).
pub const HISTORY_LIMIT: usize = 20_000;
