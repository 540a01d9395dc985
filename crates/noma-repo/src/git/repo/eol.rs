//! What git does to a document's line endings when it is committed: the
//! bytes it stores may differ from the working tree's (`core.autocrlf`,
//! the `text` and `eol` attributes), and a transcript must end at the
//! stored bytes.

use std::io::Write;
use std::process::{Command, Stdio};

use super::Repo;

/// What git stores when a file's bytes are committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// The bytes as they are (`-text`, or no conversion configured).
    AsIs,
    /// The converted bytes the caller named; `by` names the setting
    /// that converts them (`core.autocrlf=true`, `the text attribute`).
    Converted {
        /// The setting, as a person would look it up.
        by: String,
    },
    /// Neither (another filter), or git could not be asked.
    Unknown,
}

impl Repo {
    /// What git would store for `bytes` committed at `path` (relative to
    /// the work tree): `bytes` as they are, or `converted`. Asks `git
    /// hash-object --path`, which applies the commit-time conversion of
    /// that path (the index's own version counts, as for `git add`) and
    /// writes nothing; libgit2's attribute and config reads then name the
    /// setting.
    pub fn stored_on_commit(&self, path: &str, bytes: &[u8], converted: &[u8]) -> Stored {
        let Some(id) = self.hash_as_committed(path, bytes) else {
            return Stored::Unknown;
        };
        let blob = |b: &[u8]| git2::Oid::hash_object(git2::ObjectType::Blob, b).ok();
        if Some(id) == blob(bytes) {
            Stored::AsIs
        } else if Some(id) == blob(converted) {
            Stored::Converted {
                by: self.conversion_setting(path),
            }
        } else {
            Stored::Unknown
        }
    }

    /// `git hash-object --stdin --path=<path>` of `bytes`; None when git
    /// cannot run or fails.
    fn hash_as_committed(&self, path: &str, bytes: &[u8]) -> Option<git2::Oid> {
        let workdir = self.repo.workdir()?;
        let mut child = Command::new("git")
            .arg("--git-dir")
            .arg(self.repo.path())
            .arg("--work-tree")
            .arg(workdir)
            .current_dir(workdir)
            .args(["hash-object", "--stdin"])
            .arg(format!("--path={path}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        // git reads all of its input before it answers (41 bytes): no
        // deadlock in writing it all first.
        let wrote = child
            .stdin
            .take()
            .is_some_and(|mut input| input.write_all(bytes).is_ok());
        let out = child.wait_with_output().ok()?;
        if !wrote || !out.status.success() {
            return None;
        }
        std::str::from_utf8(&out.stdout).ok()?.trim().parse().ok()
    }

    /// The setting that makes git convert `path`'s line endings on
    /// commit, attributes first (they override `core.autocrlf`).
    fn conversion_setting(&self, path: &str) -> String {
        let attr = |name: &str| {
            self.repo
                .get_attr(
                    std::path::Path::new(path),
                    name,
                    git2::AttrCheckFlags::FILE_THEN_INDEX,
                )
                .ok()
                .flatten()
                .map(str::to_string)
        };
        if let Some(eol) = attr("eol") {
            return format!("its `eol={eol}` attribute");
        }
        match self.repo.get_attr(
            std::path::Path::new(path),
            "text",
            git2::AttrCheckFlags::FILE_THEN_INDEX,
        ) {
            Ok(Some(v)) if git2::AttrValue::from_string(Some(v)) == git2::AttrValue::True => {
                return "its `text` attribute".into()
            }
            Ok(Some("auto")) => return "its `text=auto` attribute".into(),
            _ => {}
        }
        match self.config_string("core.autocrlf") {
            Some(v) => format!("core.autocrlf={v}"),
            None => "its line-ending settings".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let o = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}");
    }

    /// Git is asked, and the setting that converts is named: attributes
    /// before `core.autocrlf`, `-text` over everything.
    #[test]
    fn what_git_stores_and_which_setting_converts() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q"]);
        git(d, &["config", "core.autocrlf", "false"]);
        let repo = Repo::discover(d).unwrap();
        let (crlf, lf) = (b"a\r\nb\r\n".as_slice(), b"a\nb\n".as_slice());
        let stored = |attrs: &str, autocrlf: &str| {
            std::fs::write(d.join(".gitattributes"), attrs).unwrap();
            git(d, &["config", "core.autocrlf", autocrlf]);
            Repo::discover(d)
                .unwrap()
                .stored_on_commit("p.noma", crlf, lf)
        };
        let converted = |by: &str| Stored::Converted { by: by.into() };
        assert_eq!(stored("", "false"), Stored::AsIs);
        assert_eq!(stored("", "true"), converted("core.autocrlf=true"));
        assert_eq!(stored("", "input"), converted("core.autocrlf=input"));
        assert_eq!(stored("*.noma -text\n", "true"), Stored::AsIs);
        assert_eq!(
            stored("*.noma text\n", "false"),
            converted("its `text` attribute")
        );
        assert_eq!(
            stored("*.noma text=auto\n", "false"),
            converted("its `text=auto` attribute")
        );
        assert_eq!(
            stored("*.noma eol=crlf\n", "false"),
            converted("its `eol=crlf` attribute")
        );
        // Git's answer is neither of the two texts named.
        assert_eq!(
            repo.stored_on_commit("p.noma", crlf, b"other"),
            Stored::Unknown
        );
    }
}
