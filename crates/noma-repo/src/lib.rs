//! `noma-repo` — the repository layer under the git job crates.
//!
//! The one place that talks to git: plumbing over `git2`, the `git` CLI
//! and git's own object and index files ([`git`]), and the
//! content-addressed SQLite cache of block tables ([`cache`]). The crates
//! on top (`noma-changes`, `noma-history`, `noma-reconcile`, `noma-git`)
//! get bytes, paths, plain-data listings and object ids; none of them
//! names `git2` or `rusqlite`, so moving to another git library changes
//! this crate alone. Libraries return data: the binary words it.

pub mod cache;
pub mod datasets;
pub mod git;
