//! The streamed reading of the transcript (`scan`, `state`) against the
//! whole-file one it replaced (`whole_file`, the oracle): over generated
//! repositories, transcripts and hand edits, `noma record` answers the
//! same (outcome or error, word for word) and appends the same records.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::scan::{scan, Scanned};
use super::whole_file::WholeFile;
use super::*;
use noma_core::transcript::{split_lines, ActorKind};

/// A document with two notes, `a` and `b`.
const BASE: &str = "# T\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n";

/// One request of the generated history.
#[derive(Debug, Clone)]
enum Step {
    /// `replace_body` of note `a` or `b` with one of three texts: applied,
    /// or a noop when the note already says it (states recur).
    Body(bool, u8),
    /// An op on a block that does not exist.
    Rejected,
}

/// What HEAD holds at the document's path.
#[derive(Debug, Clone, Copy)]
enum Head {
    /// The first commit only: the first state, or no document.
    First,
    /// A state of the transcript (an index into its states): records after
    /// it are not committed yet.
    State(usize),
    /// A version no record leads to: the state is found in history.
    Foreign,
}

/// The file as the person left it.
#[derive(Debug, Clone, Copy)]
enum Edit {
    /// The transcript's last state: nothing to record.
    None,
    /// A paragraph added (replace_lines).
    Prose,
    /// The heading renamed (update_heading).
    Heading,
    /// Back to an earlier state.
    Earlier(usize),
    /// The heading renamed, saved with CRLF line endings (the file is
    /// given back LF: the repository converts nothing).
    CrlfHeading,
    /// The last state saved with CRLF line endings, nothing else.
    CrlfOnly,
}

/// What happened to the transcript besides the engine's appends.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// An interrupted append: bytes after the last newline.
    Torn,
    /// A line that is no record.
    Invalid(usize),
    /// Another branch's record joined after the records, chained onto an
    /// earlier line (or onto nothing, from the start).
    Joined(usize),
    /// A record's op edited in place: the next line's chain breaks, and
    /// re-applying it fails to reproduce its hash.
    Edited(usize),
    /// A record's `prev_entry_sha256` removed.
    Unchained(usize),
}

#[derive(Debug, Clone)]
struct Case {
    genesis: bool,
    base_committed: bool,
    steps: Vec<Step>,
    head: Head,
    edit: Edit,
    damage: Vec<Damage>,
}

/// The transcript of a case, the states it passes through (the first
/// one first) and the state after each of its lines.
struct Built {
    genesis: bool,
    transcript: Vec<u8>,
    states: Vec<String>,
    after_line: Vec<String>,
}

fn actor(kind: ActorKind) -> Actor {
    Actor {
        kind,
        name: "t".into(),
        model: None,
        version: None,
    }
}

/// Plans `op` on `text` and appends its records, chained, to `t`.
fn append(t: &mut Vec<u8>, text: &str, op: Value) -> String {
    let opts = Request::new(actor(ActorKind::Agent));
    let mut p = noma_core::plan::plan(text, &Context::default(), &[op], &opts);
    let (lines, _) = split_lines(t);
    let prev = lines.last().map(|l| sha256_hex(l.raw));
    t.extend(chain_and_serialise(&mut p.records, prev));
    p.new_text
}

fn build(case: &Case) -> Built {
    // "alpha" and "beta" are BASE's own: states recur.
    const TEXTS: [&str; 3] = ["one", "alpha", "beta"];
    let mut b = Built {
        genesis: case.genesis,
        transcript: Vec::new(),
        states: Vec::new(),
        after_line: Vec::new(),
    };
    let mut text = BASE.to_string();
    if case.genesis {
        text = append(&mut b.transcript, "", noma_core::patch::genesis_op(BASE));
        b.after_line.push(text.clone());
    }
    b.states.push(text.clone());
    for step in &case.steps {
        let op = match step {
            Step::Body(a, k) => json!({"op": "replace_body", "id": if *a {"a"} else {"b"},
                "content": TEXTS[*k as usize % 3]}),
            Step::Rejected => json!({"op": "replace_body", "id": "zz", "content": "x"}),
        };
        let next = append(&mut b.transcript, &text, op);
        if next != text {
            b.states.push(next.clone());
        }
        text = next;
        b.after_line.push(text.clone());
    }
    b
}

/// `t` with its line `i` (of those there are) replaced by `f`'s.
fn with_line(t: &[u8], i: usize, f: impl FnOnce(&[u8]) -> Vec<u8>) -> Vec<u8> {
    let (lines, _) = split_lines(t);
    let Some(l) = lines.get(i % lines.len().max(1)) else {
        return t.to_vec();
    };
    let mut out = t[..l.offset].to_vec();
    out.extend(f(l.raw));
    out.extend_from_slice(&t[l.offset + l.raw.len()..]);
    out
}

/// The record line `raw` with `f` applied to its JSON (a line already
/// made no record stays as it is).
fn edited(raw: &[u8], f: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Vec<u8> {
    let Ok(Value::Object(mut o)) = serde_json::from_slice(raw) else {
        return raw.to_vec();
    };
    f(&mut o);
    format!("{}\n", Value::Object(o)).into_bytes()
}

fn damage(mut t: Vec<u8>, b: &Built, d: Damage) -> Vec<u8> {
    match d {
        Damage::Torn => t.extend_from_slice(b"{\"protocol_version\":\"1.0\""),
        Damage::Invalid(i) => t = with_line(&t, i, |_| b"{not json}\n".to_vec()),
        Damage::Joined(i) => {
            // `P` is the first `common` lines; `Y` starts from their state.
            let common = i % (b.after_line.len() + 1);
            let (lines, _) = split_lines(&t);
            let end = lines.get(common).map_or(t.len(), |l| l.offset);
            let start = match common {
                0 if b.genesis => String::new(),
                0 => BASE.to_string(),
                n => b.after_line[n - 1].clone(),
            };
            let mut y = t[..end].to_vec();
            let op = if start.is_empty() {
                noma_core::patch::genesis_op(BASE)
            } else {
                json!({"op": "replace_body", "id": "b", "content": "joined"})
            };
            append(&mut y, &start, op);
            t.extend_from_slice(&y[end..]);
        }
        Damage::Edited(i) => {
            t = with_line(&t, i, |raw| {
                edited(raw, |o| {
                    if let Some(Value::Object(op)) = o.get_mut("op") {
                        op.insert("content".into(), json!("edited"));
                    }
                })
            })
        }
        Damage::Unchained(i) => {
            t = with_line(&t, i, |raw| {
                edited(raw, |o| {
                    o.remove("prev_entry_sha256");
                })
            })
        }
    }
    t
}

/// A repository for `case`: its commits, the file as edited and the
/// transcript. Returns the document's path.
fn repository(dir: &Path, case: &Case, b: &Built) -> std::path::PathBuf {
    let git = |args: &[&str]| noma_testutil::git(dir, args);
    git(&["init", "-q"]);
    let doc = dir.join("plan.noma");
    if case.base_committed {
        std::fs::write(&doc, BASE).unwrap();
    } else {
        std::fs::write(dir.join("README"), "r").unwrap();
    }
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "first"]);
    let head = match case.head {
        Head::First => None,
        Head::State(k) => Some(b.states[k % b.states.len()].clone()),
        Head::Foreign => Some(format!("{BASE}\nForeign prose.\n")),
    };
    if let Some(head) = head {
        std::fs::write(&doc, head).unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-q", "--allow-empty", "-m", "head"]);
    }
    let last = b.states.last().unwrap();
    let file = match case.edit {
        Edit::None => last.clone(),
        Edit::Prose => format!("{last}\nA paragraph by hand.\n"),
        Edit::Heading => last.replacen("# T\n", "# T, by hand\n", 1),
        Edit::Earlier(j) => b.states[j % b.states.len()].clone(),
        Edit::CrlfHeading => last
            .replacen("# T\n", "# T, by hand\n", 1)
            .replace('\n', "\r\n"),
        Edit::CrlfOnly => last.replace('\n', "\r\n"),
    };
    std::fs::write(&doc, file).unwrap();
    doc
}

/// `noma record` of `doc` with the transcript read whole (the oracle) or
/// streamed: its kind (the outcome or the error's variant), and the
/// outcome as JSON or the error's class, fields and message.
fn answer(doc: &Path, whole: bool) -> (String, String) {
    let tpath = engine::default_transcript_path(doc);
    let text = fsio::read_document(doc).unwrap();
    let prior: Result<Box<dyn Prior>, RecordError> = if whole {
        WholeFile::read(doc, &tpath).map(|p| Box::new(p) as Box<dyn Prior>)
    } else {
        scan(doc, &tpath).map(|p| Box::new(p) as Box<dyn Prior>)
    };
    let acting = (actor(ActorKind::Human), None, None);
    match prior.and_then(|p| record_after((doc, &tpath), &text, p.as_ref(), acting)) {
        Ok(o) => {
            let json = serde_json::to_value(&o).unwrap();
            (json["result"].as_str().unwrap().into(), json.to_string())
        }
        Err(RecordError::Usage(e)) => ("usage".into(), format!("{e:?}: {e}")),
        Err(RecordError::Check(e)) => {
            let debug = format!("{e:?}");
            let kind = debug.split([' ', '(', '{']).next().unwrap().to_string();
            (kind, format!("{debug}: {e}"))
        }
    }
}

/// The appended records with what differs from run to run (op ids,
/// times, and the chain between the new records) left out.
fn normalised(appended: &[u8]) -> Vec<Value> {
    let (lines, _) = split_lines(appended);
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let mut v: Value = serde_json::from_slice(l.raw).unwrap();
        let o = v.as_object_mut().unwrap();
        for k in ["op_id", "ts", "elapsed_ms"] {
            o.remove(k);
        }
        if i > 0 {
            o.remove("prev_entry_sha256");
        }
        out.push(v);
    }
    out
}

/// Runs both readings on the same files and checks they agree; returns
/// the answer's kind (its first words).
fn compare(case: &Case) -> String {
    let b = build(case);
    let mut t = b.transcript.clone();
    for d in &case.damage {
        t = damage(t, &b, *d);
    }
    let dir = tempfile::tempdir().unwrap();
    let doc = repository(dir.path(), case, &b);
    let tpath = engine::default_transcript_path(&doc);
    let mut runs = Vec::new();
    // A file saved with other line endings may be given back its own.
    let file = std::fs::read(&doc).unwrap();
    for whole in [true, false] {
        std::fs::write(&tpath, &t).unwrap();
        std::fs::write(&doc, &file).unwrap();
        let answer = answer(&doc, whole);
        let after = std::fs::read(&tpath).unwrap();
        assert!(
            after.starts_with(&t),
            "{case:?}: the transcript was rewritten"
        );
        let doc_after = std::fs::read(&doc).unwrap();
        runs.push((answer, normalised(&after[t.len()..]), doc_after));
    }
    assert_eq!(runs[0], runs[1], "{case:?}");
    runs.swap_remove(0).0 .0
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (any::<bool>(), 0u8..3).prop_map(|(a, k)| Step::Body(a, k)),
        1 => Just(Step::Rejected),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let head = prop_oneof![
        Just(Head::First),
        (0usize..8).prop_map(Head::State),
        Just(Head::Foreign)
    ];
    let edit = prop_oneof![
        Just(Edit::None),
        Just(Edit::Prose),
        Just(Edit::Heading),
        (0usize..8).prop_map(Edit::Earlier),
        Just(Edit::CrlfHeading),
        Just(Edit::CrlfOnly)
    ];
    let damage = prop_oneof![
        Just(Damage::Torn),
        (0usize..8).prop_map(Damage::Invalid),
        (0usize..8).prop_map(Damage::Joined),
        (0usize..8).prop_map(Damage::Edited),
        (1usize..8).prop_map(Damage::Unchained),
    ];
    let damages = prop_oneof![
        3 => Just(Vec::new()),
        2 => proptest::collection::vec(damage, 1..3),
    ];
    (
        (any::<bool>(), prop::bool::weighted(0.8)),
        proptest::collection::vec(step(), 0..7),
        head,
        edit,
        damages,
    )
        .prop_map(
            |((genesis, base_committed), steps, head, edit, damage)| Case {
                genesis,
                base_committed,
                steps,
                head,
                edit,
                damage,
            },
        )
}

/// Cases chosen so that every answer occurs (the generated ones below
/// may miss some).
fn chosen() -> Vec<Case> {
    use Damage::*;
    let steps = vec![
        Step::Body(true, 0),
        Step::Rejected,
        Step::Body(false, 1),
        Step::Body(true, 0),
        Step::Body(true, 2),
        Step::Body(false, 1),
    ];
    let c = |genesis, head, edit, damage: Vec<Damage>| Case {
        genesis,
        base_committed: true,
        steps: steps.clone(),
        head,
        edit,
        damage,
    };
    let back = vec![
        Step::Body(true, 0),
        Step::Body(true, 1),
        Step::Body(false, 0),
    ];
    let mut out = vec![
        c(false, Head::State(4), Edit::Prose, vec![]),
        c(false, Head::State(1), Edit::Heading, vec![]),
        c(false, Head::First, Edit::Prose, vec![]),
        c(false, Head::Foreign, Edit::Prose, vec![]),
        c(true, Head::State(2), Edit::Heading, vec![]),
        c(false, Head::State(4), Edit::None, vec![]),
        c(false, Head::State(4), Edit::Earlier(4), vec![]),
        c(false, Head::State(4), Edit::CrlfHeading, vec![]),
        c(true, Head::State(2), Edit::CrlfHeading, vec![]),
        c(false, Head::State(4), Edit::CrlfOnly, vec![]),
        c(false, Head::State(4), Edit::Prose, vec![Torn]),
        c(false, Head::State(4), Edit::Prose, vec![Invalid(3)]),
        c(false, Head::State(4), Edit::Prose, vec![Invalid(0)]),
        c(false, Head::State(4), Edit::Prose, vec![Joined(2)]),
        c(false, Head::State(4), Edit::Prose, vec![Joined(0)]),
        c(
            false,
            Head::State(4),
            Edit::Prose,
            vec![Joined(2), Invalid(0)],
        ),
        c(false, Head::State(4), Edit::Prose, vec![Joined(2), Torn]),
        c(false, Head::State(1), Edit::Prose, vec![Edited(2)]),
        c(false, Head::State(1), Edit::Prose, vec![Edited(0)]),
        c(false, Head::State(4), Edit::Prose, vec![Unchained(5)]),
        // From a genesis record every record is re-applied, even those
        // before the state HEAD holds.
        c(true, Head::State(1), Edit::Prose, vec![Edited(1)]),
    ];
    // The transcript passes through BASE twice: a record it re-applies only
    // from the first time fails; from the last time, as the oracle does, none.
    out.push(Case {
        steps: back.clone(),
        ..c(false, Head::First, Edit::Prose, vec![Edited(0)])
    });
    out.push(Case {
        steps: back,
        ..c(false, Head::First, Edit::Prose, vec![Edited(2)])
    });
    // A first line that is no record, then one chained onto nothing: a
    // join (the first line is never read for one), not an invalid line.
    out.push(Case {
        steps: vec![Step::Body(true, 0), Step::Body(false, 0)],
        ..c(
            false,
            Head::First,
            Edit::Prose,
            vec![Invalid(0), Unchained(1)],
        )
    });
    out.push(Case {
        base_committed: false,
        ..c(false, Head::First, Edit::Prose, vec![])
    });
    out.push(Case {
        steps: vec![Step::Rejected],
        ..c(false, Head::First, Edit::Prose, vec![])
    });
    out
}

#[test]
fn the_streamed_transcript_answers_as_the_whole_file() {
    let kinds: BTreeSet<String> = chosen().iter().map(compare).collect();
    for want in [
        "recorded",
        "nothing_to_record",
        "line_endings_restored",
        "Joined",
        "TranscriptInvalid",
        "TornTranscript",
        "ReapplyMismatch",
        "NoBaseFound",
    ] {
        assert!(kinds.contains(want), "{want} never answered: {kinds:?}");
    }
}

#[test]
fn generated_transcripts_answer_as_the_whole_file() {
    let kinds = RefCell::new(BTreeSet::new());
    proptest!(ProptestConfig::with_cases(64), |(case in case())| {
        kinds.borrow_mut().insert(compare(&case));
    });
    let kinds = kinds.into_inner();
    assert!(kinds.contains("recorded") && kinds.len() >= 4, "{kinds:?}");
}

/// Under the lock, the length and the last line show every write since the
/// scan that the whole file shows.
#[test]
fn the_witness_under_the_lock_sees_every_write() {
    let case = Case {
        genesis: false,
        base_committed: true,
        steps: vec![Step::Body(true, 0), Step::Body(false, 1)],
        head: Head::First,
        edit: Edit::None,
        damage: vec![],
    };
    let b = build(&case);
    let t = b.transcript;
    let dir = tempfile::tempdir().unwrap();
    let (doc, tpath) = (dir.path().join("d.noma"), dir.path().join("d.noma.patches"));
    std::fs::write(&doc, BASE).unwrap();
    let mut more = t.clone();
    append(
        &mut more,
        b.states.last().unwrap(),
        json!({"op": "delete_block", "id": "a"}),
    );
    let last_changed = with_line(&t, 1, |raw| {
        edited(raw, |o| {
            o.insert("ts".into(), json!("2026-01-01T00:00:00.001Z"));
        })
    });
    let first_changed = with_line(&t, 0, |raw| {
        edited(raw, |o| {
            o.insert("ts".into(), json!("2026-01-01T00:00:00.001Z"));
        })
    });
    let cut = t[..t.len() - 1].to_vec();
    assert_eq!(first_changed.len(), t.len());
    // (what, the file under the lock, unchanged for the witness, for the
    // whole file). An earlier line edited in place to the same length, by
    // a writer that takes no lock, is seen by the whole file only: noma's
    // writers append or cut back under the lock, and a transcript edited
    // so before the read would have been recorded onto just the same.
    for (what, now, same, whole_same) in [
        ("untouched", &t, true, true),
        ("appended", &more, false, false),
        ("cut", &cut, false, false),
        ("last line replaced", &last_changed, false, false),
        ("first line edited in place", &first_changed, true, false),
    ] {
        std::fs::write(&tpath, &t).unwrap();
        let scanned: Scanned = scan(&doc, &tpath).unwrap();
        let whole = WholeFile::read(&doc, &tpath).unwrap();
        std::fs::write(&tpath, now).unwrap();
        let mut locked = fsio::LockedTranscript::open(&tpath).unwrap();
        assert_eq!(scanned.unchanged(&mut locked).unwrap(), same, "{what}");
        assert_eq!(whole.unchanged(&mut locked).unwrap(), whole_same, "{what}");
    }
}

/// The policy file is named where the refusal is worded (the edit's ops
/// are computed without one).
#[test]
fn text_edits_off_names_the_policy_file() {
    let err = edit_ops("# Plan\n\nsome prose\n", "# Plan\n\nother prose\n", false).unwrap_err();
    let said = CannotRecord::from(err).to_string();
    assert!(said.starts_with("lines 3-3 of the file"), "{said}");
    assert!(
        said.ends_with(
            "(.noma/config.yml has record_text_edits: false, so only v1.0 block ops may record it)"
        ),
        "{said}"
    );
}
