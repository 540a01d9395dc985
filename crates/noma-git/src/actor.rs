//! Who a writer on the command line is when it names nobody.

use std::path::Path;

/// The actor name a transcript record carries when none is given: the
/// name git would author a commit with (`GIT_AUTHOR_NAME`, then `user.name`
/// as seen from the document's directory), then `$USER` /
/// `$USERNAME`, then "unknown". Containers and CI runners rarely set
/// `$USER`, but a commit needs `user.name` anyway.
pub fn default_name(file: &Path) -> String {
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    env("GIT_AUTHOR_NAME")
        .or_else(|| crate::git::config::user_name(dir))
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .or_else(|| std::env::var("USERNAME").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".into())
}

/// Whether git has no identity for a commit made beside `file`: neither
/// `GIT_AUTHOR_NAME` nor `user.name` is set. Records then carry a name
/// guessed from the login (or "unknown"), and the first `git commit`
/// fails too, so the shells warn and say how to set it.
pub fn git_identity_missing(file: &Path) -> bool {
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let set = std::env::var("GIT_AUTHOR_NAME").is_ok_and(|v| !v.trim().is_empty());
    !set && crate::git::config::user_name(dir).is_none()
}
