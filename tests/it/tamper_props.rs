//! Property: a single mutation of a transcript written by the engine (the
//! code behind `noma patch --inplace`) never replays as ok unless the
//! mutated transcript still satisfies every rule, and replay never changes
//! a file.
//!
//! The rule, as replay enforces it: every line is a valid record; the first
//! line has no `prev_entry_sha256` and a later line's, where present (§5.3
//! makes it optional), is the sha256 of the line before; `op_id`s are unique; every record starts from the state
//! the records before it leave (from `--base`); applied records reproduce
//! their `post_sha256`; the final state is the document. Nothing after the
//! last line vouches for it, so an edit of the last line that keeps it a
//! valid record with the same op, hashes, result and chain link, or none (a
//! changed `ts`, `reason` or message; the link's key mangled into an unknown
//! field; another `op_id` that stays unique; the op of a
//! rejected record swapped for another refused with the same code, since
//! replay re-applies it and checks the code) satisfies the rule, and so
//! does dropping trailing records that changed nothing (the document is still
//! the state the rest leave); any other mutation breaks it. Both are what
//! the hooks anchor through git: a committed line may never change.

use std::path::Path;

use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::{parse_record, Actor, ActorKind, PatchResult};
use noma_store::engine::{self, Options, WriteMode};
use proptest::prelude::*;
use serde_json::{json, Value};

const DOC: &str = "# Doc\n\n::claim{id=\"a\"}\nA.\n::\n\n::claim{id=\"b\"}\nB.\n::\n\n::claim{id=\"c\"}\nC.\n::\n";

/// The requests: (block index or 3 for a missing block, attribute value).
fn requests() -> impl Strategy<Value = Vec<(usize, u8)>> {
    prop::collection::vec((0usize..4, any::<u8>()), 2..6)
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipByte { at: usize, with: u8 },
    Drop(usize),
    Duplicate(usize),
    Swap(usize, usize),
    Truncate { line: usize, keep: usize },
    ChangeHash { line: usize, field: usize },
    InsertJunk(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(at, with)| Mutation::FlipByte { at, with }),
        any::<usize>().prop_map(Mutation::Drop),
        any::<usize>().prop_map(Mutation::Duplicate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(line, keep)| Mutation::Truncate { line, keep }),
        (any::<usize>(), 0usize..3).prop_map(|(line, field)| Mutation::ChangeHash { line, field }),
        any::<usize>().prop_map(Mutation::InsertJunk),
    ]
}

fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Applies `m`; also returns the index of the only line it touched when it
/// touched exactly one line in place (`None` otherwise).
fn apply(bytes: &[u8], m: &Mutation) -> (Vec<u8>, Option<usize>) {
    let mut ls = lines(bytes);
    let n = ls.len();
    match *m {
        Mutation::FlipByte { at, with } => {
            let mut out = bytes.to_vec();
            let at = at % out.len();
            out[at] ^= with;
            let line = bytes[..at].iter().filter(|&&b| b == b'\n').count();
            (out, Some(line))
        }
        Mutation::Drop(i) => {
            ls.remove(i % n);
            (ls.concat(), None)
        }
        Mutation::Duplicate(i) => {
            let l = ls[i % n].clone();
            ls.insert(i % n, l);
            (ls.concat(), None)
        }
        Mutation::Swap(a, b) => {
            ls.swap(a % n, b % n);
            (ls.concat(), None)
        }
        Mutation::Truncate { line, keep } => {
            let i = line % n;
            let body = ls[i].len() - 1;
            ls[i].truncate(keep % body);
            ls[i].push(b'\n');
            (ls.concat(), Some(i))
        }
        Mutation::ChangeHash { line, field } => {
            let i = line % n;
            let mut v: Value = serde_json::from_slice(&ls[i]).unwrap();
            let key = ["pre_sha256", "post_sha256", "prev_entry_sha256"][field];
            v[key] = json!(sha256_hex(b"forged"));
            ls[i] = format!("{v}\n").into_bytes();
            (ls.concat(), Some(i))
        }
        Mutation::InsertJunk(i) => {
            ls.insert(i % (n + 1), b"{\"junk\":true}\n".to_vec());
            (ls.concat(), None)
        }
    }
}

/// The fields of a last record line that replay can check, or `None` when
/// it is no record. A rejected record's op produced nothing, so nothing can
/// check it; the `op_id` is only checked for uniqueness (`unique_op_ids`).
fn semantic(line: &[u8]) -> Option<Value> {
    let r = parse_record(1, line).ok()?;
    let op = (r.patch_result != PatchResult::Rejected).then_some(r.op);
    Some(json!([
        r.pre_sha256,
        r.post_sha256,
        op,
        r.patch_result.as_str(),
    ]))
}

/// The chain link of a record line (`None` for a line that is no record
/// or carries none).
fn link(line: &[u8]) -> Option<String> {
    parse_record(1, line).ok()?.prev_entry_sha256
}

/// The rule of the module doc, for a mutation of `original` into `mutated`.
fn satisfies_rule(original: &[u8], mutated: &[u8], touched: Option<usize>) -> bool {
    if original == mutated {
        return true;
    }
    let (a, b) = (lines(original), lines(mutated));
    // A line-prefix whose dropped records changed nothing: the document is
    // still the state the kept records leave.
    if b.len() < a.len()
        && a[..b.len()] == b[..]
        && a[b.len()..]
            .iter()
            .all(|l| parse_record(1, l).is_ok_and(|r| r.patch_result != PatchResult::Applied))
    {
        return true;
    }
    let last = a.len() - 1;
    touched == Some(last)
        && b.len() == a.len()
        && a[..last] == b[..last]
        && b[last].ends_with(b"\n")
        && semantic(&b[last]).is_some()
        && semantic(&a[last]) == semantic(&b[last])
        && (link(&b[last]).is_none() || link(&a[last]) == link(&b[last]))
        && unique_op_ids(&b)
}

/// Whether no two record lines share an `op_id`.
fn unique_op_ids(lines: &[Vec<u8>]) -> bool {
    let mut seen = std::collections::HashSet::new();
    lines
        .iter()
        .filter_map(|l| parse_record(1, l).ok())
        .all(|r| seen.insert(r.op_id))
}

fn build(dir: &Path, reqs: &[(usize, u8)]) {
    let doc = dir.join("d.noma");
    std::fs::write(&doc, DOC).unwrap();
    std::fs::write(dir.join("base.noma"), DOC).unwrap();
    let mut opts = Options::new(Actor {
        kind: ActorKind::Agent,
        name: "prop".into(),
        model: None,
        version: None,
    });
    opts.write = WriteMode::InPlace;
    for &(block, value) in reqs {
        let id = ["a", "b", "c", "missing"][block];
        let op = json!({"op":"update_attribute","id":id,"key":"v","value":value});
        engine::patch_file(&doc, &[op], &opts).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn a_mutated_transcript_never_replays_unless_it_keeps_every_rule(
        reqs in requests(),
        m in mutation(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        build(dir.path(), &reqs);
        let doc = dir.path().join("d.noma");
        let tpath = dir.path().join("d.noma.patches");
        let base = dir.path().join("base.noma");
        let original = std::fs::read(&tpath).unwrap();
        let (_, report) = engine::replay_file(&doc, None, Some(&base), &mut |_: Option<&str>, _: &str| None).unwrap();
        prop_assert!(report.ok, "unmutated: {:?}", report.divergence);

        let (mutated, touched) = apply(&original, &m);
        std::fs::write(&tpath, &mutated).unwrap();
        let doc_before = std::fs::read(&doc).unwrap();
        let ok = match engine::replay_file(&doc, None, Some(&base), &mut |_: Option<&str>, _: &str| None) {
            Ok((_, r)) => r.ok,
            Err(_) => false,
        };
        prop_assert_eq!(std::fs::read(&tpath).unwrap(), mutated.clone(), "replay wrote the transcript");
        prop_assert_eq!(std::fs::read(&doc).unwrap(), doc_before, "replay wrote the document");
        if ok {
            prop_assert!(
                satisfies_rule(&original, &mutated, touched),
                "{:?} replayed as ok:\n{}",
                m,
                String::from_utf8_lossy(&mutated)
            );
        }
    }
}
