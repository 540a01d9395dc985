//! Who a writer on the command line is when it names nobody.

use std::path::Path;

/// The actor name a transcript record carries when none is given, and
/// where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultName {
    /// The name git would author a commit with (`GIT_AUTHOR_NAME`, then
    /// `user.name` as seen from the document's directory), then `$USER` /
    /// `$USERNAME`, then "unknown". Containers and CI runners rarely set
    /// `$USER`, but a commit needs `user.name` anyway.
    pub name: String,
    /// Whether git has an identity there. Without one, records carry a
    /// name guessed from the login and the first `git commit` fails too,
    /// so the shells warn and say how to set it.
    pub from_git: bool,
}

/// The [`DefaultName`] for a writer of `file`.
pub fn default_name(file: &Path) -> DefaultName {
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let git = env("GIT_AUTHOR_NAME").or_else(|| crate::git::config::user_name(dir));
    let from_git = git.is_some();
    let name = git
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .or_else(|| std::env::var("USERNAME").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".into());
    DefaultName { name, from_git }
}
