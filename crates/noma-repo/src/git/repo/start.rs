//! A transcript's history read along HEAD's first-parent line by
//! bisection, where that line is the whole history (no merge on it):
//! where the transcript started, for the document state its first record
//! starts from ([`Repo::transcript_start_documents`]), and the commit
//! that brought each of some of its lines ([`Repo::introducing_on_line`]).
//! A transcript, once committed, stays, and it only grows (the hook and
//! reconcile refuse anything else), so on such a line its presence and
//! its length only go up: some log2(n) trees and object headers are read
//! where a walk reads every commit's tree and every version's header, and
//! a search by content every version of the document. Every answer is
//! checked by content; what does not check out is left to those walks.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{libgit2, GitError, Repo};
use crate::git::Oid;

/// HEAD's first-parent line, oldest first, when it is the whole history
/// reachable from HEAD within `max` commits: no commit on it has a second
/// parent, and it ends at a root commit.
struct Line(Vec<Oid>);

impl Repo {
    fn linear_history(&self, max: usize) -> Result<Option<Line>, GitError> {
        let Some(head) = self.head_commit() else {
            return Ok(None);
        };
        let mut line = vec![head];
        loop {
            let commit = self
                .repo
                .find_commit(line[line.len() - 1].raw())
                .map_err(libgit2)?;
            match commit.parent_count() {
                0 => break,
                1 if line.len() < max => {
                    line.push(Oid::from_raw(commit.parent_id(0).map_err(libgit2)?));
                }
                _ => return Ok(None),
            }
        }
        line.reverse();
        Ok(Some(Line(line)))
    }

    /// The documents at `doc` that the commits around the start of the
    /// transcript `transcript` hold, most likely first, for a caller that
    /// checks them by content: the version in the commit before the
    /// oldest one that has the transcript, then the version in that
    /// commit. Empty when the history is not one line of at most
    /// `max_commits` commits, when HEAD has no transcript there, and when
    /// a version is a blob this clone lacks (a partial clone: the
    /// caller's search fetches its candidates together instead).
    pub fn transcript_start_documents(
        &self,
        doc: &str,
        transcript: &str,
        max_commits: usize,
    ) -> Result<Vec<Vec<u8>>, GitError> {
        let Some(Line(line)) = self.linear_history(max_commits)? else {
            return Ok(Vec::new());
        };
        let has = |k: usize| self.blob_id_at(line[k], transcript).map(|b| b.is_some());
        let Some(first) = first_where(line.len(), has)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for commit in line[first.saturating_sub(1)..=first].iter() {
            let Some(id) = self.blob_id_at(*commit, doc)? else {
                continue;
            };
            if self.lacks_blob(id) {
                return Ok(Vec::new());
            }
            out.push(self.blob(id)?);
        }
        Ok(out)
    }

    /// What [`Repo::introducing_commits`] answers, found along a history
    /// that is one line (None: it is not, or an answer did not check out,
    /// and the walk must answer): for each op_id of `wanted`, the oldest
    /// commit whose version of the transcript at `path` is at least as
    /// long as the op_id's line end (found by bisection), checked to hold
    /// the op_id by reading that version (unless it is `holds_all`), and
    /// only where the commit before it had the transcript too (else it
    /// came under another name, which only the walk finds). An op_id
    /// whose line ends past HEAD's version is not committed: absent.
    pub fn introducing_on_line(
        &self,
        path: &str,
        (wanted, holds_all): (&HashMap<String, u64>, Option<Oid>),
        max_commits: usize,
        op_ids_of: &dyn Fn(&[u8]) -> Vec<String>,
    ) -> Result<Option<HashMap<String, Oid>>, GitError> {
        let Some(Line(line)) = self.linear_history(max_commits)? else {
            return Ok(None);
        };
        let odb = self.repo.odb().map_err(libgit2)?;
        // Each commit's version (blob, size; None: absent), read once;
        // a header that cannot be read (a partial clone) ends the try.
        let mut versions: HashMap<usize, Option<(Oid, u64)>> = HashMap::new();
        let unknown = std::cell::Cell::new(false);
        let mut version = |k: usize| -> Result<Option<(Oid, u64)>, GitError> {
            if let Some(v) = versions.get(&k) {
                return Ok(*v);
            }
            let v = match self.blob_id_at(line[k], path)? {
                Some(id) => match odb.read_header(id.raw()) {
                    Ok((size, _)) => Some((id, size as u64)),
                    Err(_) => {
                        unknown.set(true);
                        None
                    }
                },
                None => None,
            };
            versions.insert(k, v);
            Ok(v)
        };
        let last = line.len() - 1;
        let Some((_, head_len)) = version(last)? else {
            return Ok(None);
        };
        // The op_ids each commit brought, by the commit's position.
        let mut by_commit: BTreeMap<usize, Vec<&String>> = BTreeMap::new();
        for (id, &end) in wanted {
            if end > head_len {
                continue;
            }
            let reaches = |k: usize| Ok(version(k)?.is_some_and(|(_, len)| len >= end));
            let Some(k) = first_where(line.len(), reaches)? else {
                return Ok(None);
            };
            if k > 0 && version(k - 1)?.is_none() {
                return Ok(None);
            }
            by_commit.entry(k).or_default().push(id);
        }
        if unknown.get() {
            return Ok(None);
        }
        let mut found = HashMap::new();
        for (k, ids) in by_commit {
            let Some((blob, _)) = version(k)? else {
                return Ok(None);
            };
            if holds_all != Some(blob) {
                let bytes = match self.repo.find_blob(blob.raw()) {
                    Ok(b) => op_ids_of(b.content()),
                    Err(_) => return Ok(None),
                };
                let held: HashSet<&String> = bytes.iter().collect();
                if !ids.iter().all(|id| held.contains(id)) {
                    return Ok(None);
                }
            }
            found.extend(ids.into_iter().map(|id| (id.clone(), line[k])));
        }
        Ok(Some(found))
    }
}

/// The first of `0..n` where `holds` is true, by bisection, for a
/// `holds` that stays true once true; None when it is false at `n - 1`.
fn first_where(
    n: usize,
    mut holds: impl FnMut(usize) -> Result<bool, GitError>,
) -> Result<Option<usize>, GitError> {
    if n == 0 || !holds(n - 1)? {
        return Ok(None);
    }
    // holds(hi) is true; every index below lo is known false.
    let (mut lo, mut hi) = (0, n - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if holds(mid)? {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(Some(hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_testutil::git;
    use std::path::Path;

    /// The op_ids of a fake transcript: one per line.
    fn ids(bytes: &[u8]) -> Vec<String> {
        (bytes.split(|b| *b == b'\n'))
            .filter(|l| !l.is_empty())
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect()
    }

    /// Each line of `t` (the working tree's transcript) and its end.
    fn ends(t: &str) -> HashMap<String, u64> {
        let mut end = 0;
        (t.lines())
            .map(|l| {
                end += l.len() as u64 + 1;
                (l.to_string(), end)
            })
            .collect()
    }

    /// Appends `lines` to `d/t.noma.patches` (made if need be).
    fn append(d: &Path, name: &str, lines: &[&str]) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(d.join(name))
            .unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
    }

    fn commit(d: &Path, m: &str) {
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "--allow-empty", "-m", m]);
    }

    /// The walk's answer and the bisection's, for every line of the
    /// working tree's transcript at `name`.
    fn both(d: &Path, name: &str) -> (HashMap<String, Oid>, Option<HashMap<String, Oid>>) {
        let r = Repo::discover(d).unwrap();
        let t = std::fs::read_to_string(d.join(name)).unwrap();
        let wanted = ends(&t);
        let walk = r
            .introducing_commits((".noma.patches", None), (&wanted, None), 1000, ids)
            .unwrap();
        let line = r
            .introducing_on_line(name, (&wanted, None), 1000, &ids)
            .unwrap();
        (walk, line)
    }

    #[test]
    fn on_one_line_the_bisection_answers_what_the_walk_answers() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::write(d.join("d.noma"), "# D\n").unwrap();
        commit(d, "document");
        for k in 0..23 {
            // Some commits bring no record, some several.
            let lines: Vec<String> = (0..k % 3).map(|i| format!("r{k}-{i}")).collect();
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            append(d, "d.noma.patches", &lines);
            std::fs::write(d.join("d.noma"), format!("# D {k}\n")).unwrap();
            commit(d, &format!("c{k}"));
        }
        // Not committed: absent from both answers.
        append(d, "d.noma.patches", &["pending"]);
        let (walk, line) = both(d, "d.noma.patches");
        assert_eq!(walk.len(), 22, "{walk:?}");
        assert_eq!(line, Some(walk));
    }

    #[test]
    fn a_renamed_transcript_or_a_merge_is_left_to_the_walk() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        git(d, &["init", "-q", "-b", "main"]);
        append(d, "a.noma.patches", &["r1", "r2"]);
        commit(d, "one");
        append(d, "a.noma.patches", &["r3"]);
        commit(d, "two");
        git(d, &["mv", "a.noma.patches", "b.noma.patches"]);
        commit(d, "renamed");
        append(d, "b.noma.patches", &["r4"]);
        commit(d, "three");
        let (walk, line) = both(d, "b.noma.patches");
        assert_eq!(walk.len(), 4);
        assert_eq!(line, None, "r1..r3 came under another name");

        git(d, &["checkout", "-q", "-b", "side"]);
        append(d, "b.noma.patches", &["s1"]);
        commit(d, "side");
        git(d, &["checkout", "-q", "main"]);
        std::fs::write(d.join("other"), "x").unwrap();
        commit(d, "main moves on");
        git(d, &["merge", "-q", "--no-ff", "-m", "merge", "side"]);
        let (walk, line) = both(d, "b.noma.patches");
        assert_eq!(walk.len(), 5);
        assert_eq!(
            line, None,
            "a merge: the first-parent line is not the history"
        );
    }

    #[test]
    fn the_document_before_the_transcript_began_is_offered_first() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        git(d, &["init", "-q", "-b", "main"]);
        for k in 0..9 {
            std::fs::write(d.join("d.noma"), format!("# D {k}\n")).unwrap();
            if k >= 5 {
                append(d, "d.noma.patches", &[&format!("r{k}")]);
            }
            commit(d, &format!("c{k}"));
        }
        let r = Repo::discover(d).unwrap();
        let found = r
            .transcript_start_documents("d.noma", "d.noma.patches", 1000)
            .unwrap();
        assert_eq!(found, vec![b"# D 4\n".to_vec(), b"# D 5\n".to_vec()]);
        assert!(r
            .transcript_start_documents("d.noma", "none.noma.patches", 1000)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn bisection_finds_the_first_true_of_a_monotone_predicate() {
        for n in 0..40usize {
            for first in 0..=n {
                let mut asked = 0;
                let got = first_where(n, |k| {
                    asked += 1;
                    Ok(k >= first)
                })
                .unwrap();
                assert_eq!(got, (first < n).then_some(first), "n {n} first {first}");
                assert!(
                    asked <= 2 + (n as f64).log2().ceil() as usize,
                    "n {n}: {asked} asks"
                );
            }
        }
    }
}
