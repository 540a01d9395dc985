//! The checks the shells run: the trust read from a revision's files, and
//! a transcript range verified against a sidecar, with what cannot be read
//! reported as problems too.

use std::collections::HashSet;
use std::path::Path;

use noma_core::transcript::{transcript_path, Entry};
use noma_provenance::config::{Policy, SignatureLevel, CONFIG_PATH};
use noma_provenance::sidecar::{sidecar_path, Sidecar};
use noma_provenance::signers::{AllowedSigners, ALLOWED_SIGNERS_PATH, SIGNERS_WARNING};
use noma_provenance::verify::{verify_where, Problem, RecordStatus, Trust};
use noma_provenance::{canonical, sidecar, sidecar_change};

/// The code of a sidecar that cannot be read.
pub const SIDECAR_INVALID: &str = "sidecar-invalid";

/// The trust in a revision's `.noma/config.yml` and
/// `.noma/allowed_signers` (absent files: defaults, no signer). `Ok(None)`
/// when its policy turns provenance off: nothing else is read or checked.
pub fn trust_from(
    config: Option<&[u8]>,
    signers: impl FnOnce() -> Option<Vec<u8>>,
) -> Result<Option<Trust>, super::Error> {
    let text = config.map(String::from_utf8_lossy).unwrap_or_default();
    let policy = Policy::from_yaml(&text).map_err(super::Error::Policy)?;
    if policy.file.provenance.is_off() {
        return Ok(None);
    }
    let signers = signers().unwrap_or_default();
    let signers = AllowedSigners::parse(&String::from_utf8_lossy(&signers));
    Ok(Some(Trust::new(policy, signers)))
}

/// The trust's warnings (see [`Trust::warnings`]) as problems of
/// `.noma/allowed_signers`, at warning level: reported, never failing.
pub fn signer_warnings(trust: &Trust) -> Vec<Located> {
    trust
        .warnings()
        .into_iter()
        .map(|w| Located {
            path: ALLOWED_SIGNERS_PATH.into(),
            problem: Problem {
                level: "warning",
                code: SIGNERS_WARNING,
                line: w.line,
                op_id: String::new(),
                message: w.message,
            },
        })
        .collect()
}

/// Which records of a transcript are history, not the checked range.
#[derive(Debug, Clone, Copy)]
pub enum History<'a> {
    /// The first this many records.
    Lines(usize),
    /// The records of this transcript (an older version of the same one,
    /// e.g. the merge base's) that the checked one proves to hold: the
    /// same intent under the same op_id, or a merge copy that says what
    /// its original there says (see [`proved_history`]), so a merge of the
    /// base into the branch brings no base record into the range, and a
    /// record that merely claims to be one does not leave it.
    Of(&'a [u8]),
}

/// A sidecar's entries (none when there is no sidecar), or its
/// [`SIDECAR_INVALID`] problem.
pub fn parse_sidecar(sidecar: Option<&[u8]>) -> Result<Sidecar, Problem> {
    Sidecar::parse(sidecar.unwrap_or_default()).map_err(sidecar_problem)
}

/// The [`SIDECAR_INVALID`] problem of a sidecar line that is no entry.
pub fn sidecar_problem(e: noma_provenance::sidecar::SidecarError) -> Problem {
    Problem {
        level: "error",
        code: SIDECAR_INVALID,
        line: e.line,
        op_id: String::new(),
        message: format!("the provenance sidecar does not parse: {}", e.message),
    }
}

/// The statuses of the records of `transcript` past its `history`, with
/// the records named in `touched` (op_ids whose sidecar lines changed,
/// [`noma_provenance::sidecar_change::touched_op_ids`]) in the checked
/// range too, history or not: a change to the sidecar alone re-signs,
/// un-signs or re-approves them. Against a sidecar already parsed, so its
/// bytes need not be held while the records are parsed and verified.
pub fn check_parsed(
    trust: &Trust,
    transcript: &[u8],
    history: History<'_>,
    side: &Sidecar,
    touched: &HashSet<String>,
) -> Vec<RecordStatus> {
    // Records with their lines; no line hashes (the chain is replay's).
    let (lines, _) = noma_core::transcript::split_lines(transcript);
    let mut entries = Vec::with_capacity(lines.len());
    for l in lines {
        let Ok(record) = noma_core::transcript::parse_record(l.number, l.raw) else {
            return Vec::new();
        };
        entries.push(noma_core::transcript::Entry {
            line: l.number,
            offset: l.offset,
            line_sha256: String::new(),
            record,
        });
    }
    let history_of = match history {
        History::Lines(from) => {
            return verify_where(trust, &entries, side, &|i, e| {
                i >= from || touched.contains(&e.record.op_id)
            })
        }
        History::Of(bytes) => proved_history(&entries, bytes),
    };
    // A merge copy verifies by its original's sidecar lines: when those
    // changed, the copy is checked again too.
    let copy_touched = |e: &noma_core::transcript::Entry| {
        !touched.is_empty()
            && canonical::original_of(&e.record).is_some_and(|o| touched.contains(&o.op_id))
    };
    verify_where(trust, &entries, side, &|i, e| {
        !history_of[i] || touched.contains(&e.record.op_id) || copy_touched(e)
    })
}

/// Which of `entries` the older transcript `base` holds, proved, not
/// claimed: a record is history only when it says what a base record says (its
/// op_id and the intent a signature binds: the same line does), or is a merge copy whose rebuilt original says exactly what
/// the base record it names says. Each base record is matched once, by
/// the first record that proves to be it; a second one, or a record that
/// merely names a base record (a `parent_op_id` and a `reconciled:`
/// reason over another op), stays in the checked range and is verified
/// like any other. The base is trusted (the branch cannot change it), so
/// a record equal to one of its records needs no signature of its own.
fn proved_history(entries: &[noma_core::transcript::Entry], base: &[u8]) -> Vec<bool> {
    use canonical::{canonical, intent};
    let (lines, _) = noma_core::transcript::split_lines(base);
    let mut by_origin: std::collections::HashMap<String, Vec<u8>> =
        std::collections::HashMap::with_capacity(lines.len());
    for l in &lines {
        let Ok(r) = noma_core::transcript::parse_record(l.number, l.raw) else {
            continue;
        };
        let o = canonical::original_of(&r).unwrap_or(r);
        by_origin
            .entry(o.op_id.clone())
            .or_insert_with(|| canonical(&intent(&o)));
    }
    entries
        .iter()
        .map(|e| {
            let o = canonical::original_of(&e.record);
            let origin = o.as_ref().unwrap_or(&e.record);
            let Some(said) = by_origin.get(origin.op_id.as_str()) else {
                return false;
            };
            let same = canonical(&intent(origin)) == *said;
            if same {
                by_origin.remove(origin.op_id.as_str());
            }
            same
        })
        .collect()
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
    /// What the allowed-signers file's owner should know (skipped lines,
    /// local times, agent keys listed for someone else too).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<noma_provenance::signers::SignersWarning>,
}

/// The trust of the work tree `doc` is in (its directory outside a
/// repository): its policy and allowed signers, and the root they were
/// read from. A policy with provenance off reads as `warn`: asked for,
/// signatures are reported, but only forgeries fail.
pub fn worktree_trust(doc: &Path) -> Result<(Trust, std::path::PathBuf), super::Error> {
    let dir = doc
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let root = crate::git::blob::worktree_root(dir).unwrap_or_else(|| dir.to_path_buf());
    let read = |rel: &str| match noma_store::fsio::read_regular(&root.join(rel)) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(super::Error::io(root.join(rel))(e)),
    };
    let config = read(CONFIG_PATH)?;
    let signers = read(ALLOWED_SIGNERS_PATH)?;
    let text = config
        .as_deref()
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    let mut policy = Policy::from_yaml(&text).map_err(super::Error::Policy)?;
    if policy.file.provenance.signatures == SignatureLevel::Off {
        policy.file.provenance.signatures = SignatureLevel::Warn;
    }
    let signers = AllowedSigners::parse(&String::from_utf8_lossy(
        signers.as_deref().unwrap_or_default(),
    ));
    // Only the records' signed `ts` is known here: no commit holds them.
    Ok((Trust::new(policy, signers), root))
}

/// Verifies every record of `transcript` (the document `doc`'s) against
/// its sidecar, trusting the policy and allowed signers of the work tree
/// `doc` is in ([`worktree_trust`]).
pub fn check_worktree(doc: &Path, transcript: &[u8]) -> Result<WorktreeReport, super::Error> {
    let (trust, root) = worktree_trust(doc)?;
    let side = read_sidecar(doc)?;
    // Parsed, and its bytes dropped, before the transcript's records are
    // parsed and verified: both held at once set the peak.
    let parsed = parse_sidecar(side.as_deref());
    drop(side);
    let (mut records, sidecar) = match parsed {
        Ok(s) => {
            let all = History::Lines(0);
            (
                check_parsed(&trust, transcript, all, &s, &HashSet::new()),
                None,
            )
        }
        Err(p) => (Vec::new(), Some(p)),
    };
    super::adoption::mark_pre_policy(doc, transcript, &mut records);
    Ok(WorktreeReport {
        trust: trust_source(&root),
        records,
        sidecar,
        warnings: trust.warnings(),
    })
}

/// Where [`worktree_trust`] read the trust, as a report names it.
pub fn trust_source(root: &Path) -> String {
    format!(
        "{} and {} in {}",
        CONFIG_PATH,
        ALLOWED_SIGNERS_PATH,
        root.display()
    )
}

/// The bytes of `doc`'s sidecar (None: it has none). The sidecar grows
/// with the history, as the transcript does: no size cap (a FIFO or
/// device is still refused), so a long history is never refused at some
/// record count.
fn read_sidecar(doc: &Path) -> Result<Option<Vec<u8>>, super::Error> {
    let path = sidecar_path(doc);
    let mut bytes = Vec::new();
    let read = noma_store::fsio::open_lines(&path)
        .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes));
    match read {
        Ok(_) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(super::Error::io(path)(e)),
    }
}

/// [`check_worktree`]'s statuses of the records `shown` only (records of
/// `doc`'s work-tree transcript, with their lines), in line order: only
/// their signatures are verified. `related` gives every record of the
/// transcript that stands for one of the given ops (by
/// [`canonical::origin_op_id`]), in line order. A status depends on
/// no other record but those: an earlier record for the same op makes it
/// a repeat, and an approval is judged by the records it names, whose ops
/// are asked for too; so each status is the one the whole transcript's
/// check gives it. None when the sidecar does not parse (as the whole
/// check then has no status).
pub fn check_worktree_shown(
    doc: &Path,
    shown: &[Entry],
    related: impl FnOnce(&HashSet<String>) -> Result<Vec<Entry>, super::Error>,
) -> Result<Option<Vec<RecordStatus>>, super::Error> {
    use canonical::origin_op_id;
    let (trust, _) = worktree_trust(doc)?;
    let side = read_sidecar(doc)?;
    let Ok(side) = Sidecar::parse(side.as_deref().unwrap_or_default()) else {
        return Ok(None);
    };
    let mut ops: HashSet<String> = (shown.iter())
        .map(|e| origin_op_id(&e.record).to_string())
        .collect();
    let named: Vec<String> = (side.approvals.iter())
        .filter(|(_, a)| a.body.op_ids.iter().any(|id| ops.contains(id)))
        .flat_map(|(_, a)| a.body.op_ids.iter().cloned())
        .collect();
    ops.extend(named);
    let entries = related(&ops)?;
    let lines: HashSet<usize> = shown.iter().map(|e| e.line).collect();
    let in_range = |_: usize, e: &Entry| lines.contains(&e.line);
    // `entries` are some of the transcript's records: the lineage is its
    // first record's.
    let tpath = noma_store::engine::default_transcript_path(doc);
    let first = match noma_store::fsio::open_lines(&tpath) {
        Ok(mut r) => noma_core::transcript::genesis::first_record_in(&mut r)
            .map_err(super::Error::io(&tpath))?,
        Err(_) => None,
    };
    let lineage = first.map(|r| canonical::Lineage::of(&r));
    let mut statuses =
        noma_provenance::verify::verify_part(&trust, lineage.as_ref(), &entries, &side, &in_range);
    super::adoption::mark_pre_policy_of(doc, &mut statuses, || {
        (entries.iter())
            .filter(|e| lines.contains(&e.line))
            .map(|e| Some(origin_op_id(&e.record).to_string()))
            .collect()
    });
    Ok(Some(statuses))
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

/// What `noma reconcile` learns of a document's branch records.
#[derive(Debug, Clone, Default)]
pub struct BranchCheck {
    /// Every problem, with the file its line is in.
    pub problems: Vec<Located>,
    /// Each record of the checked range: who it names, who verifiably
    /// signed it and who approved it (problems are in `problems`).
    pub records: Vec<RecordStatus>,
}

/// `noma reconcile`'s check of a document: the records HEAD's transcript
/// has beyond `prefix` (the merge base's transcript; see
/// [`History::Of`]), against HEAD's sidecar, trusting `base`'s policy and
/// allowed signers. Nothing is read past the base's policy when it turns
/// provenance off. Also the sidecars it read, when the merge base's is the
/// document's own (not a moved one's).
pub fn branch_check(
    repo: &crate::git::repo::Repo,
    [base, head, merge_base]: [crate::git::Oid; 3],
    doc: &str,
    head_transcript: &[u8],
    prefix: &[u8],
) -> (BranchCheck, Option<SidecarsRead>) {
    let blob = |c, p: &str| repo.blob_at(c, p).ok().flatten();
    // A document the branch moved where git did not pair the move: its
    // history is the merge base's transcript under the path its first
    // record names, only when that transcript is gone at HEAD (moved, not
    // copied: a new document beside the old one is all in range). Only
    // the records proved equal to that transcript's are left out.
    let old = prefix
        .is_empty()
        .then(|| first_doc_uri(head_transcript))
        .flatten()
        .filter(|old| old != doc && !old.contains(':'))
        .filter(|old| blob(head, &transcript_path(old)).is_none());
    let moved = old
        .as_deref()
        .and_then(|old| blob(merge_base, &transcript_path(old)));
    let prefix = moved.as_deref().unwrap_or(prefix);
    // The sidecar the branch started from: a record whose lines the
    // branch changed is checked even when the merge base has it.
    let mb_doc = old.as_deref().filter(|_| moved.is_some()).unwrap_or(doc);
    let mb_side = blob(merge_base, &sidecar::sidecar_rel(mb_doc));
    let mut trust = match trust_from(blob(base, CONFIG_PATH).as_deref(), || {
        blob(base, ALLOWED_SIGNERS_PATH)
    }) {
        Ok(Some(t)) => t,
        Ok(None) => return (BranchCheck::default(), None),
        Err(message) => {
            let problem = Located {
                path: CONFIG_PATH.into(),
                problem: Problem {
                    level: "error",
                    code: TRUST_INVALID,
                    line: 0,
                    op_id: String::new(),
                    message: format!("the base's provenance settings cannot be read: {message}"),
                },
            };
            return (BranchCheck::problems(vec![problem]), None);
        }
    };
    // None of the branch's records was signed after this check runs.
    // HEAD's committer time would be a cap the branch chooses: dated
    // forward, it lets a record borrow a key's later `valid-after`
    // window; dated back, an expired key's window.
    trust.not_after = Some(noma_provenance::signers::now());
    let side_path = sidecar::sidecar_rel(doc);
    let side = blob(head, &side_path);
    let touched = sidecar_change::touched_op_ids(mb_side.as_deref(), side.as_deref());
    let parsed = parse_sidecar(side.as_deref());
    let check = match &parsed {
        Ok(parsed) => {
            let history = (head_transcript, History::Of(prefix));
            judged(&trust, history, parsed, &touched, &transcript_path(doc))
        }
        Err(problem) => {
            let mut problems = signer_warnings(&trust);
            problems.push(Located {
                path: side_path,
                problem: problem.clone(),
            });
            BranchCheck::problems(problems)
        }
    };
    let read = moved.is_none().then(|| {
        let merge_base = mb_side.unwrap_or_default();
        let extended = side.is_some_and(|h| h.starts_with(&merge_base));
        SidecarsRead {
            head: parsed.ok().filter(|_| extended),
            merge_base,
        }
    });
    (check, read)
}

/// [`branch_check`]'s verdict on the records of `transcript` beyond its
/// `history`, against HEAD's parsed sidecar `side`, each problem located
/// in the transcript `tpath`.
fn judged(
    trust: &Trust,
    (transcript, history): (&[u8], History<'_>),
    side: &Sidecar,
    touched: &HashSet<String>,
    tpath: &str,
) -> BranchCheck {
    let statuses = check_parsed(trust, transcript, history, side, touched);
    BranchCheck::located(signer_warnings(trust), statuses, tpath)
}

/// The sidecars [`branch_check`] read, for what the PR check remembers of
/// the merge base.
#[derive(Debug)]
pub struct SidecarsRead {
    /// The merge base's sidecar bytes (empty when it has none).
    pub merge_base: Vec<u8>,
    /// HEAD's sidecar entries, when its bytes start with the merge base's
    /// and parse: the merge base's lines are then its first lines.
    pub head: Option<Sidecar>,
}

impl BranchCheck {
    /// The check of `records`: `problems` (the trust's), then each
    /// record's problems, moved out of it and located in the transcript
    /// `tpath`.
    pub fn located(
        mut problems: Vec<Located>,
        mut records: Vec<RecordStatus>,
        tpath: &str,
    ) -> BranchCheck {
        for s in &mut records {
            problems.extend(s.problems.drain(..).map(|problem| Located {
                path: tpath.to_string(),
                problem,
            }));
        }
        BranchCheck { problems, records }
    }

    fn problems(problems: Vec<Located>) -> BranchCheck {
        BranchCheck {
            problems,
            records: Vec::new(),
        }
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
    let (s_new, s_old) = (sidecar::sidecar_rel(doc), sidecar::sidecar_rel(old));
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

/// The parent a merge being committed brings in (MERGE_HEAD): the trust
/// its own base files state (`None` when its policy turns provenance off)
/// and the document's transcript and sidecar there.
pub struct MergedIn<'a> {
    /// MERGE_HEAD's policy and allowed signers.
    pub trust: Option<&'a Trust>,
    /// The document's transcript in MERGE_HEAD.
    pub transcript: Option<&'a [u8]>,
    /// The document's sidecar in MERGE_HEAD.
    pub sidecar: Option<&'a [u8]>,
}

/// A problem of [`hook_problems`], and whether the record came with the
/// merged-in parent (so its fix is on that side, not the committer's).
pub struct HookProblem {
    /// The problem, located in the transcript (or the sidecar).
    pub located: Located,
    /// The record is the merged-in parent's (or a faithful copy of one).
    pub merged_in: bool,
}

/// The pre-commit and pre-merge-commit hooks' check of one staged
/// document: the records its staged transcript adds to the reference
/// commit's, and those whose sidecar lines the commit changed (the
/// reference commit's sidecar against the staged one), against the staged
/// sidecar. Signature problems only, at their level (errors block: a
/// forgery, and under `required` an unsigned or untrusted record);
/// approval is a review gate, never a commit gate.
///
/// During a merge (`merged_in`), a record the merged-in parent holds (as
/// itself or as a faithful merge copy, proved as the PR check proves its
/// history) was judged on that side, so it is judged by that side's trust,
/// never by the reference commit's: a branch older than a key main added
/// must be able to merge main. Only what the merge itself adds, and the
/// records whose sidecar lines the merge changed against both parents, are
/// judged by the reference commit's trust.
pub fn hook_problems(
    trust: &Trust,
    doc: &str,
    [staged_transcript, reference_transcript]: [Option<&[u8]>; 2],
    [staged_sidecar, reference_sidecar]: [Option<&[u8]>; 2],
    merged_in: Option<MergedIn<'_>>,
) -> Vec<HookProblem> {
    let Some(t) = staged_transcript else {
        return Vec::new();
    };
    // What the commit appends; a transcript that does not keep the
    // committed bytes (a rewrite, which the guard blocks anyway) is
    // checked whole, so a forged committed line is named too.
    let prefix = reference_transcript.unwrap_or_default();
    let from = if t.starts_with(prefix) {
        memchr::memchr_iter(b'\n', prefix).count()
    } else {
        0
    };
    let tpath = transcript_path(doc);
    // The sidecar is a set: both parents' lines, read together, are what
    // the merge started from.
    let both;
    let before = match &merged_in {
        Some(m) => {
            let mut b = reference_sidecar.unwrap_or_default().to_vec();
            b.push(b'\n');
            b.extend_from_slice(m.sidecar.unwrap_or_default());
            both = b;
            Some(both.as_slice())
        }
        None => reference_sidecar,
    };
    let touched = sidecar_change::touched_op_ids(before, staged_sidecar);
    let side = match parse_sidecar(staged_sidecar) {
        Ok(side) => side,
        Err(problem) => {
            return vec![HookProblem {
                located: Located {
                    path: sidecar::sidecar_rel(doc),
                    problem,
                },
                merged_in: false,
            }]
        }
    };
    let Some(entries) = parsed_entries(t) else {
        return Vec::new();
    };
    let copy_touched = |e: &Entry| {
        touched.contains(&e.record.op_id)
            || canonical::original_of(&e.record).is_some_and(|o| touched.contains(&o.op_id))
    };
    let theirs = match &merged_in {
        Some(m) => proved_history(&entries, m.transcript.unwrap_or_default()),
        None => vec![false; entries.len()],
    };
    let mut statuses: Vec<(RecordStatus, bool)> = verify_where(trust, &entries, &side, &|i, e| {
        (i >= from && !theirs[i]) || copy_touched(e)
    })
    .into_iter()
    .map(|s| (s, false))
    .collect();
    if let Some(their_trust) = merged_in.as_ref().and_then(|m| m.trust) {
        statuses.extend(
            verify_where(their_trust, &entries, &side, &|i, e| {
                i >= from && theirs[i] && !copy_touched(e)
            })
            .into_iter()
            .map(|s| (s, true)),
        );
    }
    hook_located(statuses, &tpath)
}

/// The hook's problems of `statuses` (each with whether the merged-in
/// side's trust judged it), at `tpath`; approvals are reconcile's.
fn hook_located(statuses: Vec<(RecordStatus, bool)>, tpath: &str) -> Vec<HookProblem> {
    statuses
        .into_iter()
        .flat_map(|(s, merged_in)| s.problems.into_iter().map(move |p| (p, merged_in)))
        .filter(|(p, _)| !p.code.starts_with("approval-"))
        .map(|(problem, merged_in)| HookProblem {
            located: Located {
                path: tpath.to_string(),
                problem,
            },
            merged_in,
        })
        .collect()
}

/// The records of a transcript with their lines, or `None` when one does
/// not parse (replay reports it).
fn parsed_entries(transcript: &[u8]) -> Option<Vec<Entry>> {
    let (lines, _) = noma_core::transcript::split_lines(transcript);
    let mut entries = Vec::with_capacity(lines.len());
    for l in lines {
        let record = noma_core::transcript::parse_record(l.number, l.raw).ok()?;
        entries.push(Entry {
            line: l.number,
            offset: l.offset,
            line_sha256: String::new(),
            record,
        });
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_core::transcript::Entry;
    use noma_provenance::tests::record;

    fn lines(entries: &[Entry]) -> Vec<u8> {
        let mut out = Vec::new();
        for e in entries {
            out.extend_from_slice(serde_json::to_string(&e.record).unwrap().as_bytes());
            out.push(b'\n');
        }
        out
    }

    /// A merge copy of `of` at line `line`; `op_value` changes its op
    /// (a disguise) when it is not the original's.
    fn copy(of: &Entry, line: usize, op_value: Option<i64>) -> Entry {
        let mut r = of.record.clone();
        r.parent_op_id = Some(of.record.op_id.clone());
        r.op_id = format!("00000000-0000-4000-9000-{line:012}");
        r.reason = Some(format!(
            "reconciled: op {} from the merged branch; original reason: why",
            of.record.op_id
        ));
        if let Some(v) = op_value {
            r.op["value"] = serde_json::json!(v);
        }
        Entry {
            line,
            offset: 0,
            line_sha256: String::new(),
            record: r,
        }
    }

    #[test]
    fn history_is_what_the_base_holds_not_what_a_record_claims() {
        let (r1, r2, r3) = (record(1, false), record(2, false), record(3, true));
        let base = lines(&[r1.clone(), r2.clone(), r3.clone()]);
        // The base's own lines, and a faithful copy of a base record the
        // branch does not hold itself, are history.
        let head = [r1.clone(), r2.clone(), copy(&r3, 3, None)];
        assert_eq!(proved_history(&head, &base), [true, true, true]);
        // A copy whose op is not its original's, a second copy of one
        // original, and a record reusing an op_id with another intent stay
        // in the range.
        let mut reused = record(3, false);
        reused.record.op["value"] = serde_json::json!(99);
        let head = [
            r1.clone(),
            copy(&r2, 2, Some(7)),
            copy(&r1, 3, None),
            reused,
            copy(&r2, 5, None),
        ];
        assert_eq!(
            proved_history(&head, &base),
            [true, false, false, false, true]
        );
        // Nothing is history against an empty base.
        assert_eq!(proved_history(&[r1, r2], b""), [false, false]);
    }

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
