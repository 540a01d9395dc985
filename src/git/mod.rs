//! Git plumbing (git2): the only place that talks to repositories. Callers
//! get bytes and paths; they never see git2 types beyond this boundary.

pub mod blob;
pub mod layout;
pub mod repo;
