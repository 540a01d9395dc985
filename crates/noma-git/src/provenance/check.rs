//! The checks the shells run: the trust read from a revision's files, and
//! a transcript range verified against a sidecar, with what cannot be read
//! reported as problems too.

use std::collections::HashSet;
use std::path::Path;

use super::sidecar::{sidecar_path, Sidecar};
use super::signers::{AllowedSigners, ALLOWED_SIGNERS_PATH};
use super::verify::{verify_where, Problem, RecordStatus, Trust};
use crate::config::{Policy, SignatureLevel, CONFIG_PATH};
use noma_core::transcript::transcript_path;

/// The code of a sidecar that cannot be read.
pub const SIDECAR_INVALID: &str = "sidecar-invalid";

/// The trust in a revision's `.noma/config.yml` and
/// `.noma/allowed_signers` (absent files: defaults, no signer). `Ok(None)`
/// when its policy turns provenance off: nothing else is read or checked.
pub fn trust_from(
    config: Option<&[u8]>,
    signers: impl FnOnce() -> Option<Vec<u8>>,
) -> Result<Option<Trust>, String> {
    let text = config.map(String::from_utf8_lossy).unwrap_or_default();
    let policy = Policy::from_yaml(&text).map_err(|e| format!("{CONFIG_PATH}: {e}"))?;
    if policy.file.provenance.is_off() {
        return Ok(None);
    }
    let signers = signers().unwrap_or_default();
    let signers =
        AllowedSigners::parse(&String::from_utf8_lossy(&signers)).map_err(|e| e.to_string())?;
    Ok(Some(Trust { policy, signers }))
}

/// The statuses of the records after the first `from` lines of
/// `transcript`, against the sidecar's bytes (absent: no signature). A
/// transcript that does not parse is replay's to report: no status. A
/// sidecar that does not parse is one error problem ([`SIDECAR_INVALID`],
/// its line in `line`).
pub fn check_range(
    trust: &Trust,
    transcript: &[u8],
    from: usize,
    sidecar: Option<&[u8]>,
) -> Result<Vec<RecordStatus>, Problem> {
    check_after(trust, transcript, History::Lines(from), sidecar)
}

/// Which records of a transcript are history, not the checked range.
#[derive(Debug, Clone, Copy)]
pub enum History<'a> {
    /// The first this many records.
    Lines(usize),
    /// The records of this transcript (an older version of the same one,
    /// e.g. the merge base's): by op_id, and a merge's copy by the op it
    /// stands for, so a merge of the base into the branch brings no base
    /// record into the range.
    Of(&'a [u8]),
}

/// [`check_range`] with the history given as [`History`].
pub fn check_after(
    trust: &Trust,
    transcript: &[u8],
    history: History<'_>,
    sidecar: Option<&[u8]>,
) -> Result<Vec<RecordStatus>, Problem> {
    check_after_touched(trust, transcript, history, sidecar, &HashSet::new())
}

/// [`check_after`] with the records named in `touched` (op_ids whose
/// sidecar lines changed, [`super::sidecar_change::touched_op_ids`]) in the
/// checked range too, history or not: a change to the sidecar alone
/// re-signs, un-signs or re-approves them.
pub fn check_after_touched(
    trust: &Trust,
    transcript: &[u8],
    history: History<'_>,
    sidecar: Option<&[u8]>,
    touched: &HashSet<String>,
) -> Result<Vec<RecordStatus>, Problem> {
    let side = Sidecar::parse(sidecar.unwrap_or_default()).map_err(|e| Problem {
        level: "error",
        code: SIDECAR_INVALID,
        line: e.line,
        op_id: String::new(),
        message: format!("the provenance sidecar does not parse: {}", e.message),
    })?;
    // Records with their lines; no line hashes (the chain is replay's).
    let (lines, _) = noma_core::transcript::split_lines(transcript);
    let mut entries = Vec::with_capacity(lines.len());
    for l in lines {
        let Ok(record) = noma_core::transcript::parse_record(l.number, l.raw) else {
            return Ok(Vec::new());
        };
        entries.push(noma_core::transcript::Entry {
            line: l.number,
            offset: l.offset,
            line_sha256: String::new(),
            record,
        });
    }
    let known: std::collections::HashSet<String> = match history {
        History::Lines(from) => {
            return Ok(verify_where(trust, &entries, &side, &|i, e| {
                i >= from || touched.contains(&e.record.op_id)
            }))
        }
        History::Of(bytes) => {
            let (lines, _) = noma_core::transcript::split_lines(bytes);
            lines
                .iter()
                .filter_map(|l| noma_core::transcript::parse_record(l.number, l.raw).ok())
                .map(|r| origin_id(&r))
                .collect()
        }
    };
    Ok(verify_where(trust, &entries, &side, &|_, e| {
        !known.contains(&origin_id(&e.record)) || touched.contains(&e.record.op_id)
    }))
}

/// The `doc_uri` of a transcript's first record.
fn first_doc_uri(transcript: &[u8]) -> Option<String> {
    let (lines, _) = noma_core::transcript::split_lines(transcript);
    let first = lines.first()?;
    Some(
        noma_core::transcript::parse_record(1, first.raw)
            .ok()?
            .doc_uri,
    )
}

/// The op a record stands for: its own op_id, or a merge copy's original.
fn origin_id(r: &noma_core::transcript::Record) -> String {
    match super::canonical::original_of(r) {
        Some(o) => o.op_id,
        None => r.op_id.clone(),
    }
}

/// The problems of [`check_range`], flattened.
pub fn problems(result: Result<Vec<RecordStatus>, Problem>) -> Vec<Problem> {
    match result {
        Ok(statuses) => statuses.into_iter().flat_map(|s| s.problems).collect(),
        Err(p) => vec![p],
    }
}

/// What `noma replay --signatures` reports.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorktreeReport {
    /// Where the policy and the allowed signers were read.
    pub trust: String,
    /// One status per record.
    pub records: Vec<RecordStatus>,
    /// The sidecar's problem, when it cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sidecar: Option<Problem>,
}

impl WorktreeReport {
    /// Problems at error level.
    pub fn errors(&self) -> usize {
        self.all().filter(|p| p.level == "error").count()
    }

    /// Every problem.
    pub fn all(&self) -> impl Iterator<Item = &Problem> {
        self.records
            .iter()
            .flat_map(|r| &r.problems)
            .chain(self.sidecar.as_ref())
    }
}

/// Verifies every record of `transcript` (the document `doc`'s) against
/// its sidecar, trusting the policy and allowed signers of the work tree
/// `doc` is in (its directory outside a repository). A policy with
/// provenance off is checked as `warn`: asked for, signatures are
/// reported, but only forgeries fail.
pub fn check_worktree(doc: &Path, transcript: &[u8]) -> Result<WorktreeReport, String> {
    let dir = doc
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let root = crate::git::blob::worktree_root(dir).unwrap_or_else(|| dir.to_path_buf());
    let read = |rel: &str| match noma_store::fsio::read_regular(&root.join(rel)) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", root.join(rel).display())),
    };
    let config = read(CONFIG_PATH)?;
    let signers = read(ALLOWED_SIGNERS_PATH)?;
    let text = config
        .as_deref()
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    let mut policy = Policy::from_yaml(&text).map_err(|e| format!("{CONFIG_PATH}: {e}"))?;
    if policy.file.provenance.signatures == SignatureLevel::Off {
        policy.file.provenance.signatures = SignatureLevel::Warn;
    }
    let signers = AllowedSigners::parse(&String::from_utf8_lossy(
        signers.as_deref().unwrap_or_default(),
    ))
    .map_err(|e| e.to_string())?;
    let trust = Trust { policy, signers };
    let side_path = sidecar_path(doc);
    let side = match noma_store::fsio::read_regular(&side_path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", side_path.display())),
    };
    let (records, sidecar) = match check_range(&trust, transcript, 0, side.as_deref()) {
        Ok(r) => (r, None),
        Err(p) => (Vec::new(), Some(p)),
    };
    Ok(WorktreeReport {
        trust: format!(
            "{} and {} in {}",
            CONFIG_PATH,
            ALLOWED_SIGNERS_PATH,
            root.display()
        ),
        records,
        sidecar,
    })
}

/// A problem and the repository file its line is in.
#[derive(Debug, Clone)]
pub struct Located {
    /// The file (`<doc>.patches`, `<doc>.provenance`, `.noma/config.yml`,
    /// `.noma/allowed_signers`).
    pub path: String,
    /// The problem.
    pub problem: Problem,
}

/// The code of a policy or allowed-signers file that cannot be read.
pub const TRUST_INVALID: &str = "provenance-config-invalid";

/// `noma reconcile`'s check of a document: the records HEAD's transcript
/// has after `prefix` (the merge base's transcript), against HEAD's
/// sidecar, trusting `base`'s policy and allowed signers. Nothing is read
/// past the base's policy when it turns provenance off.
pub fn branch_problems(
    repo: &crate::git::repo::Repo,
    [base, head, merge_base]: [crate::git::Oid; 3],
    doc: &str,
    head_transcript: &[u8],
    prefix: &[u8],
) -> Vec<Located> {
    let blob = |c, p: &str| repo.blob_at(c, p).ok().flatten();
    // A document the branch moved: its history is the merge base's
    // transcript under the path its first record names.
    let old = prefix
        .is_empty()
        .then(|| first_doc_uri(head_transcript))
        .flatten()
        .filter(|old| old != doc && !old.contains(':'));
    let moved = old
        .as_deref()
        .and_then(|old| blob(merge_base, &transcript_path(old)));
    let prefix = moved.as_deref().unwrap_or(prefix);
    // The sidecar the branch started from: a record whose lines the
    // branch changed is checked even when the merge base has it.
    let mb_doc = old.as_deref().filter(|_| moved.is_some()).unwrap_or(doc);
    let mb_side = blob(merge_base, &super::sidecar::sidecar_rel(mb_doc));
    let trust = match trust_from(blob(base, CONFIG_PATH).as_deref(), || {
        blob(base, ALLOWED_SIGNERS_PATH)
    }) {
        Ok(Some(t)) => t,
        Ok(None) => return Vec::new(),
        Err(message) => {
            return vec![Located {
                path: CONFIG_PATH.into(),
                problem: Problem {
                    level: "error",
                    code: TRUST_INVALID,
                    line: 0,
                    op_id: String::new(),
                    message: format!("the base's provenance settings cannot be read: {message}"),
                },
            }]
        }
    };
    let side_path = super::sidecar::sidecar_rel(doc);
    let side = blob(head, &side_path);
    let tpath = transcript_path(doc);
    let touched = super::sidecar_change::touched_op_ids(mb_side.as_deref(), side.as_deref());
    match check_after_touched(
        &trust,
        head_transcript,
        History::Of(prefix),
        side.as_deref(),
        &touched,
    ) {
        Ok(statuses) => statuses
            .into_iter()
            .flat_map(|s| s.problems)
            .map(|problem| Located {
                path: tpath.clone(),
                problem,
            })
            .collect(),
        Err(problem) => vec![Located {
            path: side_path,
            problem,
        }],
    }
}

/// The code of a renamed document whose sidecar did not follow its
/// transcript (or followed without it).
pub const SIDECAR_NOT_RENAMED: &str = "sidecar-not-renamed";

/// A document renamed from `old` to `doc` whose transcript and sidecar
/// did not move together, in a revision whose files `has` tells: the
/// problem (on the file left behind) and the command that fixes it.
/// Signatures bind no path, so nothing else says it: the records would
/// simply read as unsigned under the new name.
pub fn rename_problem(
    doc: &str,
    old: &str,
    has: &dyn Fn(&str) -> bool,
) -> Option<(Located, String)> {
    if doc == old {
        return None;
    }
    let (t_new, t_old) = (transcript_path(doc), transcript_path(old));
    let (s_new, s_old) = (
        super::sidecar::sidecar_rel(doc),
        super::sidecar::sidecar_rel(old),
    );
    let (left, moved, gone, to) = if has(&t_new) && !has(&s_new) && has(&s_old) {
        (&s_old, &t_new, "sidecar", &s_new)
    } else if has(&s_new) && !has(&t_new) && has(&t_old) {
        (&t_old, &s_new, "transcript", &t_new)
    } else {
        return None;
    };
    let fix = format!(
        "git mv {} {}",
        noma_core::diag::shell_word(left),
        noma_core::diag::shell_word(to)
    );
    let problem = Problem {
        level: "error",
        code: SIDECAR_NOT_RENAMED,
        line: 0,
        op_id: String::new(),
        message: format!(
            "{old} was renamed to {doc} and {moved} moved with it, but its {gone} stayed at {left}: \
             the records' signatures and approvals no longer meet them; fix: {fix}"
        ),
    };
    Some((
        Located {
            path: left.clone(),
            problem,
        },
        fix,
    ))
}

/// The pre-commit and pre-merge-commit hooks' check of one staged
/// document: the records its staged transcript adds to the reference
/// commit's, and those whose sidecar lines the commit changed (the
/// reference commit's sidecar against the staged one), against the staged
/// sidecar. Signature problems only, at their level (errors block: a
/// forgery, and under `required` an unsigned or untrusted record);
/// approval is a review gate, never a commit gate.
pub fn hook_problems(
    trust: &Trust,
    doc: &str,
    [staged_transcript, reference_transcript]: [Option<&[u8]>; 2],
    [staged_sidecar, reference_sidecar]: [Option<&[u8]>; 2],
) -> Vec<Located> {
    let Some(t) = staged_transcript else {
        return Vec::new();
    };
    // What the commit appends; a transcript that does not keep the
    // committed bytes (a rewrite, which the guard blocks anyway) is
    // checked whole, so a forged committed line is named too.
    let prefix = reference_transcript.unwrap_or_default();
    let history = if t.starts_with(prefix) {
        History::Lines(memchr::memchr_iter(b'\n', prefix).count())
    } else {
        History::Lines(0)
    };
    let tpath = transcript_path(doc);
    let touched = super::sidecar_change::touched_op_ids(reference_sidecar, staged_sidecar);
    match check_after_touched(trust, t, history, staged_sidecar, &touched) {
        Ok(statuses) => statuses
            .into_iter()
            .flat_map(|s| s.problems)
            .filter(|p| !p.code.starts_with("approval-"))
            .map(|problem| Located {
                path: tpath.clone(),
                problem,
            })
            .collect(),
        Err(problem) => vec![Located {
            path: super::sidecar::sidecar_rel(doc),
            problem,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_that_splits_transcript_and_sidecar_is_named_either_way() {
        let files = |have: &'static [&'static str]| move |p: &str| have.contains(&p);
        // Everything moved, or nothing was signed: nothing to say.
        let moved = files(&["b.noma.patches", "b.noma.provenance"]);
        assert!(rename_problem("b.noma", "a.noma", &moved).is_none());
        assert!(rename_problem("b.noma", "a.noma", &files(&["b.noma.patches"])).is_none());
        assert!(rename_problem("a.noma", "a.noma", &files(&["a.noma.provenance"])).is_none());
        // The sidecar stayed behind.
        let (l, fix) = rename_problem(
            "b.noma",
            "a.noma",
            &files(&["b.noma.patches", "a.noma.provenance"]),
        )
        .unwrap();
        assert_eq!(l.path, "a.noma.provenance");
        assert_eq!(l.problem.code, SIDECAR_NOT_RENAMED);
        assert_eq!(fix, r#"git mv "a.noma.provenance" "b.noma.provenance""#);
        assert!(l.problem.message.contains(&fix), "{}", l.problem.message);
        // The sidecar moved without the transcript.
        let (l, fix) = rename_problem(
            "b.noma",
            "a.noma",
            &files(&["a.noma.patches", "b.noma.provenance"]),
        )
        .unwrap();
        assert_eq!(l.path, "a.noma.patches");
        assert_eq!(fix, r#"git mv "a.noma.patches" "b.noma.patches""#);
    }
}
