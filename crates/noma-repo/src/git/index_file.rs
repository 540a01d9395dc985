//! The `.noma` entries of git's index file (`.git/index`), read straight
//! from the file, so the watcher can tell which entries an index rewrite
//! changed: a `git status` that only refreshed stat data changes none, a
//! `git add` of one document changes one.
//!
//! Why not libgit2: it allocates and sorts every entry of the index, a
//! cost that grows with the repository on every rewrite; this reads the
//! file into the memory of the previous read and notes where each `.noma`
//! entry is.
//!
//! An entry is compared whole: its stat data, object id, mode and flags
//! (stage, assume-unchanged, skip-worktree, intent-to-add). Any of them
//! can change git's answer for its path (stat data decides whether git
//! looks at the file at all), so a path whose entry changed in any way is
//! asked about again; an entry whose bytes are the same cannot change the
//! answer. Versions 2, 3 and 4 (path prefix compression) are read; a
//! split index (`link` extension), a sparse index (`sdir`), another
//! version, an unmerged entry or a file that does not parse is
//! [`Unfollowable`], and so is a changed path that is not UTF-8: the
//! watcher then scans instead.

use std::path::Path;

/// A SHA-1 object id.
const OID: usize = 20;

/// Why an index cannot be followed entry by entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfollowable {
    /// Reading the file failed.
    Read(std::io::ErrorKind),
    /// The bytes are not an index this reader knows (what is wrong).
    Format(&'static str),
    /// A split or sparse index (its entries live elsewhere or stand for
    /// directories).
    Extension([u8; 4]),
    /// Some entry is unmerged (any path).
    Unmerged,
}

/// The `.noma` entries of one index, in git's order (by path).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexEntries {
    /// The index file (versions 2 and 3: entries are read in place), or
    /// each entry's fixed part then its path, back to back (version 4,
    /// whose paths are prefix-compressed).
    raw: Vec<u8>,
    /// Each `.noma` entry: where it starts in `raw`, the length of its
    /// fixed part (stat data, id, flags, extended flags) and of its path.
    spans: Vec<(usize, usize, usize)>,
    /// The index file's modification time (seconds, nanoseconds) when it
    /// was read: git's test for a racily clean entry compares with it.
    mtime: Option<(u32, u32)>,
    /// Some entry is a `.gitattributes` file (git may read attributes
    /// from the index).
    attributes: bool,
}

/// One index entry's stat data, object id, mode and flags, as git wrote
/// them (32-bit fields: git truncates larger values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Status change time (seconds, nanoseconds).
    pub ctime: (u32, u32),
    /// Modification time (seconds, nanoseconds).
    pub mtime: (u32, u32),
    /// Device number of the file.
    pub dev: u32,
    /// Inode number of the file.
    pub ino: u32,
    /// Git's mode: 100644, 100755, 120000 or 160000 (octal).
    pub mode: u32,
    /// Owner's user id.
    pub uid: u32,
    /// Owner's group id.
    pub gid: u32,
    /// File size in bytes (truncated to 32 bits).
    pub size: u32,
    /// The staged blob's id.
    pub id: [u8; OID],
    /// Assume-unchanged, skip-worktree or intent-to-add: git takes the
    /// entry's data without looking at the file, or shows it as new.
    pub special: bool,
}

impl IndexEntries {
    fn len(&self) -> usize {
        self.spans.len()
    }

    /// Entry `i`'s fixed part and path.
    fn entry(&self, i: usize) -> (&[u8], &[u8]) {
        let (at, head, len) = self.spans[i];
        (
            &self.raw[at..at + head],
            &self.raw[at + head..at + head + len],
        )
    }

    /// Whether the index has an entry for `path`.
    pub fn contains(&self, path: &str) -> bool {
        self.find(path).is_some()
    }

    fn find(&self, path: &str) -> Option<usize> {
        self.spans
            .binary_search_by(|&(at, head, len)| {
                self.raw[at + head..at + head + len].cmp(path.as_bytes())
            })
            .ok()
    }

    /// The index file's modification time when it was read (None: there
    /// was no index file).
    pub fn mtime(&self) -> Option<(u32, u32)> {
        self.mtime
    }

    /// Whether the index holds a `.gitattributes` file anywhere.
    pub fn has_attributes(&self) -> bool {
        self.attributes
    }

    /// The entry of `path` (stage 0: an index with unmerged entries is
    /// not read), if the index has one.
    pub fn get(&self, path: &str) -> Option<Entry> {
        let (fixed, _) = self.entry(self.find(path)?);
        let w = |at: usize| {
            u32::from_be_bytes([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]])
        };
        let mut id = [0; OID];
        id.copy_from_slice(&fixed[40..40 + OID]);
        let flags = u16::from_be_bytes([fixed[60], fixed[61]]);
        // Extended flags (skip-worktree, intent-to-add) exist only when
        // set; assume-unchanged is in the first word.
        let special = flags & 0x8000 != 0 || fixed.len() > 62 && fixed[62..64] != [0, 0];
        Some(Entry {
            ctime: (w(0), w(4)),
            mtime: (w(8), w(12)),
            dev: w(16),
            ino: w(20),
            mode: w(24),
            uid: w(28),
            gid: w(32),
            size: w(36),
            id,
            special,
        })
    }

    /// The paths whose entry differs between `self` and `new` (added,
    /// removed or changed in any byte), in order; None past `limit` paths
    /// or when one is not UTF-8 (git's listing could not name it).
    pub fn changed_paths(&self, new: &IndexEntries, limit: usize) -> Option<Vec<String>> {
        use std::cmp::Ordering;
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < self.len() || j < new.len() {
            let a = (i < self.len()).then(|| self.entry(i));
            let b = (j < new.len()).then(|| new.entry(j));
            let order = match (a, b) {
                (Some(a), Some(b)) => a.1.cmp(b.1),
                (Some(_), None) => Ordering::Less,
                _ => Ordering::Greater,
            };
            let path = match order {
                Ordering::Less => {
                    i += 1;
                    a.map(|a| a.1)
                }
                Ordering::Greater => {
                    j += 1;
                    b.map(|b| b.1)
                }
                Ordering::Equal => {
                    i += 1;
                    j += 1;
                    a.zip(b).filter(|(a, b)| a.0 != b.0).map(|(a, _)| a.1)
                }
            };
            if let Some(p) = path {
                if out.len() == limit {
                    return None;
                }
                out.push(String::from_utf8(p.to_vec()).ok()?);
            }
        }
        Some(out)
    }
}

/// Reads the `.noma` entries of the index of the git directory `git_dir`
/// (none when it has no index file yet). `reuse` is an earlier answer
/// whose memory is read into (fresh pages for an index of 100,000 entries
/// cost more than reading it).
pub fn read(git_dir: &Path, reuse: Option<IndexEntries>) -> Result<IndexEntries, Unfollowable> {
    use std::io::Read as _;
    let mut out = reuse.unwrap_or_default();
    out.raw.clear();
    out.spans.clear();
    out.mtime = None;
    out.attributes = false;
    match std::fs::File::open(git_dir.join("index")) {
        Ok(mut f) => {
            use std::os::unix::fs::MetadataExt as _;
            // The file read, not the path: git stats the index it reads.
            let meta = f.metadata().map_err(|e| Unfollowable::Read(e.kind()))?;
            out.mtime = Some((meta.mtime() as u32, meta.mtime_nsec() as u32));
            f.read_to_end(&mut out.raw)
                .map_err(|e| Unfollowable::Read(e.kind()))?;
            parse_into(out)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(out),
        Err(e) => Err(Unfollowable::Read(e.kind())),
    }
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// Git's offset varint (index v4's prefix length).
fn varint(b: &[u8], at: &mut usize) -> Option<usize> {
    let mut c = *b.get(*at)?;
    *at += 1;
    let mut val = usize::from(c & 127);
    while c & 128 != 0 {
        val = val.checked_add(1)?;
        c = *b.get(*at)?;
        *at += 1;
        val = val.checked_mul(128)?.checked_add(usize::from(c & 127))?;
    }
    Some(val)
}

/// Parses an index file's bytes (see the module docs).
pub fn parse(b: &[u8]) -> Result<IndexEntries, Unfollowable> {
    parse_into(IndexEntries {
        raw: b.to_vec(),
        spans: Vec::new(),
        mtime: None,
        attributes: false,
    })
}

/// Parses the index file in `out.raw` (see the module docs).
fn parse_into(mut out: IndexEntries) -> Result<IndexEntries, Unfollowable> {
    let bad = Unfollowable::Format;
    let b = &out.raw;
    let (version, count, body_end) = header(b)?;
    let mut spans = std::mem::take(&mut out.spans);
    // Version 4's paths, rebuilt: fixed part then path, back to back.
    let mut arena: Vec<u8> = Vec::new();
    let mut name: Vec<u8> = Vec::new();
    let mut unmerged = false;
    let mut attributes = false;
    let mut at = 12;
    for _ in 0..count {
        let fixed = b.get(at..at + 62).ok_or(bad("entry past the end"))?;
        let flags = u16::from_be_bytes([fixed[60], fixed[61]]);
        unmerged |= flags & 0x3000 != 0;
        let extended = flags & 0x4000 != 0;
        if extended && version < 3 {
            return Err(bad("extended flags in a version 2 index"));
        }
        let head = if extended { 64 } else { 62 };
        let mut p = at + head;
        if version == 4 {
            let strip = varint(b, &mut p).ok_or(bad("bad prefix length"))?;
            let keep = name
                .len()
                .checked_sub(strip)
                .ok_or(bad("prefix too long"))?;
            name.truncate(keep);
        }
        let rest = b.get(p..body_end).ok_or(bad("entry past the end"))?;
        let nul = memchr::memchr(0, rest).ok_or(bad("unterminated path"))?;
        let path = if version == 4 {
            name.extend_from_slice(&rest[..nul]);
            &name[..]
        } else {
            &rest[..nul]
        };
        attributes |= is_attributes_file(path);
        if path.ends_with(b".noma") {
            if let Some(&(s, h, l)) = spans.last() {
                let last = if version == 4 { &arena } else { b };
                if last[s + h..s + h + l] >= *path {
                    return Err(bad("entries out of order"));
                }
            }
            if version == 4 {
                spans.push((arena.len(), head, path.len()));
                arena.extend_from_slice(&b[at..at + head]);
                arena.extend_from_slice(path);
            } else {
                spans.push((at, head, path.len()));
            }
        }
        at = if version == 4 {
            p + nul + 1
        } else {
            // Padded with 1 to 8 NULs to a multiple of 8 bytes.
            at + (head + nul + 8) / 8 * 8
        };
        if at > body_end {
            return Err(bad("entry past the end"));
        }
    }
    extensions(b, at, body_end)?;
    if unmerged {
        return Err(Unfollowable::Unmerged);
    }
    if version == 4 {
        out.raw = arena;
    }
    out.spans = spans;
    out.attributes = attributes;
    Ok(out)
}

/// The index file's version, entry count and where its entries end (the
/// checksum starts).
fn header(b: &[u8]) -> Result<(u32, usize, usize), Unfollowable> {
    let bad = Unfollowable::Format;
    if b.get(..4) != Some(b"DIRC") {
        return Err(bad("no DIRC signature"));
    }
    let version = be32(b, 4).ok_or(bad("short header"))?;
    if !(2..=4).contains(&version) {
        return Err(bad("unknown version"));
    }
    let count = be32(b, 8).ok_or(bad("short header"))? as usize;
    let body_end = b.len().checked_sub(OID).ok_or(bad("no checksum"))?;
    Ok((version, count, body_end))
}

/// Whether an index path is a `.gitattributes` file (at any depth).
fn is_attributes_file(path: &[u8]) -> bool {
    path.ends_with(b".gitattributes") && (path.len() == 14 || path[path.len() - 15] == b'/')
}

/// Walks the extensions between `at` and the checksum; a split or sparse
/// index is refused.
fn extensions(b: &[u8], mut at: usize, end: usize) -> Result<(), Unfollowable> {
    while at < end {
        let sig = b
            .get(at..at + 4)
            .ok_or(Unfollowable::Format("short extension"))?;
        let sig = [sig[0], sig[1], sig[2], sig[3]];
        if &sig == b"link" || &sig == b"sdir" {
            return Err(Unfollowable::Extension(sig));
        }
        let size = be32(b, at + 4).ok_or(Unfollowable::Format("short extension"))? as usize;
        at = at
            .checked_add(8 + size)
            .ok_or(Unfollowable::Format("extension past the end"))?;
    }
    if at != end {
        return Err(Unfollowable::Format("extension past the end"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@e"])
            .args(args)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    fn paths(e: &IndexEntries) -> Vec<String> {
        (0..e.len())
            .map(|i| String::from_utf8(e.entry(i).1.to_vec()).unwrap())
            .collect()
    }

    const EMPTY: &str = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";

    /// A path longer than an entry's 12-bit length field.
    fn long_path() -> String {
        format!("{}.noma", vec!["l".repeat(200); 25].join("/"))
    }

    /// A repository whose index holds documents, other files and long
    /// shared prefixes (index v4 strips them).
    fn repo(version: &str) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        git(d, &["init", "-q"]);
        git(d, &["config", "index.version", version]);
        for p in [
            "a.noma",
            "b.txt",
            "dir/deep/c.noma",
            "dir/deep/d.noma",
            "z.noma",
        ] {
            let p = d.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x\n").unwrap();
        }
        std::fs::write(d.join("empty.txt"), "").unwrap();
        git(d, &["add", "-A"]);
        // Longer than a file name may be: an entry only, of the empty blob.
        let entry = format!("100644,{EMPTY},{}", long_path());
        git(d, &["update-index", "--add", "--cacheinfo", &entry]);
        tmp
    }

    #[test]
    fn reads_the_documents_of_every_index_version() {
        for version in ["2", "3", "4"] {
            let tmp = repo(version);
            let d = tmp.path();
            // An intent-to-add entry has extended flags (version 3 on).
            std::fs::write(d.join("new.noma"), "n\n").unwrap();
            git(d, &["add", "-N", "new.noma"]);
            let e = read(&d.join(".git"), None).unwrap_or_else(|w| panic!("v{version}: {w:?}"));
            let long = long_path();
            assert_eq!(
                paths(&e),
                [
                    "a.noma",
                    "dir/deep/c.noma",
                    "dir/deep/d.noma",
                    &long,
                    "new.noma",
                    "z.noma"
                ],
                "v{version}"
            );
            assert!(e.contains("dir/deep/c.noma") && e.contains(&long) && !e.contains("b.txt"));
        }
    }

    #[test]
    fn a_stat_refresh_changes_no_entry_and_an_add_changes_one() {
        let tmp = repo("2");
        let d = tmp.path();
        let before = read(&d.join(".git"), None).unwrap();
        git(d, &["status", "--porcelain"]);
        let after = read(&d.join(".git"), None).unwrap();
        let reused = read(&d.join(".git"), Some(before.clone())).unwrap();
        assert_eq!(reused, after, "read into an earlier read's memory");
        assert_eq!(before.changed_paths(&after, 10), Some(vec![]));
        std::fs::write(d.join("dir/deep/c.noma"), "changed\n").unwrap();
        std::fs::write(d.join("new.noma"), "new\n").unwrap();
        git(d, &["add", "dir/deep/c.noma", "new.noma"]);
        git(d, &["rm", "-q", "--cached", "z.noma"]);
        let added = read(&d.join(".git"), None).unwrap();
        let changed = before.changed_paths(&added, 10).unwrap();
        assert_eq!(changed, ["dir/deep/c.noma", "new.noma", "z.noma"]);
        assert_eq!(before.changed_paths(&added, 2), None, "past the limit");
    }

    #[test]
    fn split_unmerged_and_broken_indexes_are_not_followed() {
        let tmp = repo("2");
        let d = tmp.path();
        let bytes = std::fs::read(d.join(".git/index")).unwrap();
        assert!(parse(&bytes).is_ok());
        for cut in [0, 3, 12, 40, bytes.len() - 21] {
            assert!(
                matches!(parse(&bytes[..cut]), Err(Unfollowable::Format(_))),
                "cut at {cut}"
            );
        }
        git(d, &["commit", "-qm", "one"]);
        git(d, &["update-index", "--split-index"]);
        assert_eq!(
            read(&d.join(".git"), None),
            Err(Unfollowable::Extension(*b"link"))
        );
        git(d, &["update-index", "--no-split-index"]);
        // Stage 1 of a document: unmerged.
        let out = Command::new("git")
            .current_dir(d)
            .args(["update-index", "--index-info"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write as _;
                let mut i = c.stdin.take().unwrap();
                writeln!(i, "100644 {EMPTY} 1\tu.noma")?;
                drop(i);
                c.wait()
            })
            .unwrap();
        assert!(out.success());
        assert_eq!(read(&d.join(".git"), None), Err(Unfollowable::Unmerged));
    }
}
