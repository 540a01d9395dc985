//! Tests of [`crate::transcript::replay`] on transcripts the planner
//! writes ([`super::plan`], [`super::chain_and_serialise`]). They live
//! with the planner so that the transcript module never imports it.

use super::tests::actor;
use super::{chain_and_serialise, plan, Context, Request};
use crate::doc::hash::sha256_hex;
use crate::patch::testing::{append_applier, use_applier};
use crate::transcript::replay::*;
use crate::transcript::split_lines;
use serde_json::json;

fn transcript_for(src: &str, batches: &[&[&str]]) -> (String, Vec<u8>) {
    let _stand_in = use_applier(append_applier);
    let mut text = src.to_string();
    let mut bytes = Vec::new();
    for b in batches {
        let ops: Vec<_> = b.iter().map(|t| json!({"op":"append","text":t})).collect();
        let mut p = plan(&text, &Context::default(), &ops, &Request::new(actor()));
        let prev = split_lines(&bytes).0.last().map(|l| sha256_hex(l.raw));
        bytes.extend(chain_and_serialise(&mut p.records, prev));
        text = p.new_text;
    }
    (text, bytes)
}

#[test]
fn verifies_a_good_chain() {
    let _stand_in = use_applier(append_applier);
    let (text, bytes) = transcript_for("x", &[&["a", "b"], &["c"]]);
    let r = replay(&bytes, Some("x"), &text);
    assert!(r.ok, "{:?}", r.divergence);
    assert_eq!((r.records, r.applied), (3, 3));
    // Without a base, the document itself is not the first pre-state.
    let r = replay(&bytes, None, &text);
    assert!(!r.ok);
    assert!(r.divergence.unwrap().message.contains(&sha256_hex(b"x")));
}

#[test]
fn a_genesis_transcript_replays_from_the_empty_document() {
    let _stand_in = use_applier(append_applier);
    let (text, bytes) = transcript_for("", &[&["# New\n"], &["more\n"]]);
    let r = replay(&bytes, None, &text);
    assert!(r.ok, "{:?}", r.divergence);
    assert_eq!(r.base, Some(BaseSource::Genesis));
    // The final state is still checked against the document.
    let r = replay(&bytes, None, "# New\nother\n");
    assert!(!r.ok);
}

#[test]
fn names_broken_chain_and_final_mismatch() {
    let _stand_in = use_applier(append_applier);
    let (text, bytes) = transcript_for("x", &[&["a"], &["b"], &["c"]]);
    let lines: Vec<&[u8]> = split_lines(&bytes).0.iter().map(|l| l.raw).collect();
    let dropped: Vec<u8> = [lines[0], lines[2]].concat();
    let r = replay(&dropped, Some("x"), &text);
    let d = r.divergence.unwrap();
    assert_eq!(d.line, 2);
    assert!(d.message.contains("chain"), "{}", d.message);
    let r = replay(&bytes, Some("x"), "::n{id=\"z\"}\n::\n");
    let d = r.divergence.unwrap();
    assert!(d.message.contains("document on disk"));
    assert_eq!(d.blocks[0].id, "z");
    assert_eq!(d.blocks[0].change, "extra");
}

#[test]
fn torn_and_malformed_lines_are_named() {
    let _stand_in = use_applier(append_applier);
    let r = replay(b"{bad\n", None, "");
    assert_eq!(r.divergence.unwrap().line, 1);
    let (text, mut bytes) = transcript_for("x", &[&["a"]]);
    bytes.extend_from_slice(b"{\"protocol");
    let d = replay(&bytes, Some("x"), &text).divergence.unwrap();
    assert_eq!(d.line, 2);
    assert!(d.message.contains("torn"));
}

/// Every line of `bytes` with `f` applied to the parsed record of line
/// `at` (0-based), re-serialised; the rest verbatim.
fn edit_line(bytes: &[u8], at: usize, f: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
    let lines = split_lines(bytes).0;
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if i == at {
            let mut v: serde_json::Value = serde_json::from_slice(l.raw).unwrap();
            f(&mut v);
            out.extend_from_slice(format!("{v}\n").as_bytes());
        } else {
            out.extend_from_slice(l.raw);
        }
    }
    out
}

/// The one line of a rejected request on "x", as a transcript's first.
fn rejected_request() -> Vec<u8> {
    let _stand_in = use_applier(append_applier);
    let mut p = plan(
        "x",
        &Context::default(),
        &[json!({"op":"fail"})],
        &Request::new(actor()),
    );
    chain_and_serialise(&mut p.records, None)
}

/// A transcript with a leading rejected request, then two applied ones.
fn with_leading_rejected() -> (String, Vec<u8>) {
    let mut bytes = rejected_request();
    let (text, rest) = transcript_for("x", &[&["a"], &["b"]]);
    let prev = split_lines(&bytes).0.last().map(|l| sha256_hex(l.raw));
    let rest = edit_line(&rest, 0, |v| v["prev_entry_sha256"] = json!(prev));
    // Re-chain the second line onto the edited first.
    let first = split_lines(&rest).0[0].raw.to_vec();
    let rest = edit_line(&rest, 1, |v| {
        v["prev_entry_sha256"] = json!(sha256_hex(&first))
    });
    bytes.extend(rest);
    (text, bytes)
}

#[test]
fn every_tamper_kind_is_named_with_its_line() {
    let _stand_in = use_applier(append_applier);
    let (text, bytes) = with_leading_rejected();
    assert!(replay(&bytes, Some("x"), &text).ok);
    let lines: Vec<&[u8]> = split_lines(&bytes).0.iter().map(|l| l.raw).collect();
    let cases: Vec<(&str, Vec<u8>, usize)> = vec![
        ("drop first", lines[1..].concat(), 1),
        (
            "duplicate first",
            [lines[0], lines[0], lines[1], lines[2]].concat(),
            2,
        ),
        (
            "duplicate op_id",
            {
                let id =
                    serde_json::from_slice::<serde_json::Value>(lines[1]).unwrap()["op_id"].clone();
                edit_line(&bytes, 2, |v| v["op_id"] = id.clone())
            },
            3,
        ),
        (
            "edited last patch_result",
            edit_line(&bytes, 2, |v| v["patch_result"] = json!("noop")),
            3,
        ),
    ];
    for (what, tampered, line) in cases {
        let r = replay(&tampered, Some("x"), &text);
        let d = r
            .divergence
            .unwrap_or_else(|| panic!("{what}: replay said ok"));
        assert_eq!(d.line, line, "{what}: {}", d.message);
    }
    // Without --base the leading rejected record anchors the start.
    assert!(!replay(&lines[1..].concat(), None, &text).ok);
}

#[test]
fn chain_less_records_replay_and_a_present_chain_is_checked() {
    let _stand_in = use_applier(append_applier);
    let (text, bytes) = with_leading_rejected();
    let unchain = |v: &mut serde_json::Value| {
        v.as_object_mut().unwrap().remove("prev_entry_sha256");
    };
    // §5.3: the field is optional; the state still has to follow on.
    let chainless = edit_line(&edit_line(&bytes, 1, unchain), 2, unchain);
    let r = replay(&chainless, Some("x"), &text);
    assert!(r.ok, "{:?}", r.divergence);
    // A chained line after a chain-less one names that line's bytes.
    let middle = edit_line(&bytes, 1, unchain);
    let r = replay(&middle, Some("x"), &text);
    assert_eq!(r.divergence.map(|d| d.line), Some(3));
    let second = split_lines(&middle).0[1].raw.to_vec();
    let rechained = edit_line(&middle, 2, |v| {
        v["prev_entry_sha256"] = json!(sha256_hex(&second))
    });
    assert!(replay(&rechained, Some("x"), &text).ok);
    // Without a chain, state continuity still catches a dropped record.
    let lines: Vec<&[u8]> = split_lines(&chainless).0.iter().map(|l| l.raw).collect();
    let r = replay(&[lines[0], lines[2]].concat(), Some("x"), &text);
    assert_eq!(r.divergence.map(|d| d.line), Some(2));
}

#[test]
fn the_base_is_always_checked() {
    let _stand_in = use_applier(append_applier);
    // Only a rejected record: --base must still be the document.
    let bytes = rejected_request();
    assert!(replay(&bytes, Some("x"), "x").ok);
    assert!(replay(&bytes, None, "x").ok);
    let r = replay(&bytes, Some("x"), "edited");
    assert!(!r.ok);
    assert!(!replay(&bytes, None, "edited").ok);
    // An empty transcript: the document must be the base.
    assert!(replay(b"", Some("x"), "x").ok);
    assert!(!replay(b"", Some("x"), "edited").ok);
    // A base that is not the first record's pre-state.
    let (text, bytes) = transcript_for("x", &[&["a"]]);
    let d = replay(&bytes, Some("y"), &text).divergence.unwrap();
    assert_eq!(d.line, 1);
    assert!(d.message.contains("--base"), "{}", d.message);
    // The same on a continuation (the hook) names the previous commit's
    // document, not a flag the hook has no use for.
    let (text, bytes) = transcript_for("x", &[&["a"], &["b"]]);
    let lines = split_lines(&bytes).0;
    let after = Continuation {
        prev_line_sha256: &sha256_hex(lines[0].raw),
        lines_before: 1,
    };
    let rest = &bytes[lines[0].raw.len()..];
    let good = replay_after(Some(after), rest, Some("xa"), &text);
    assert!(good.ok, "{:?}", good.divergence);
    let d = replay_after(Some(after), rest, Some("y"), &text)
        .divergence
        .unwrap();
    assert_eq!(d.line, 2);
    assert!(
        d.message.contains("document committed before it"),
        "{}",
        d.message
    );
}

#[test]
fn an_applied_record_must_change_the_document() {
    let _stand_in = use_applier(append_applier);
    let (text, bytes) = transcript_for("x", &[&["a"]]);
    // Claim a change that is none: pre == post, result "applied".
    let forged = edit_line(&bytes, 0, |v| {
        v["post_sha256"] = v["pre_sha256"].clone();
        v["post_sha"] = v["pre_sha"].clone();
    });
    assert!(!replay(&forged, Some("x"), &text).ok);
}

/// A rejected record's op is re-applied to the state it was
/// tried on, so the last line's op cannot be swapped for one that applies
/// (or fails otherwise); a rolled-back list's earlier ops must apply.
#[test]
fn a_trailing_rejected_records_op_is_checked() {
    let _stand_in = use_applier(append_applier);
    let (text, mut bytes) = transcript_for("x", &[&["a"]]);
    let mut p = plan(
        &text,
        &Context::default(),
        &[json!({"op":"append","text":"b"}), json!({"op":"fail"})],
        &Request::new(actor()),
    );
    let prev = split_lines(&bytes).0.last().map(|l| sha256_hex(l.raw));
    bytes.extend(chain_and_serialise(&mut p.records, prev));
    let r = replay(&bytes, Some("x"), &text);
    assert!(r.ok, "{:?}", r.divergence);
    assert_eq!(r.rejected, 2);
    // The failing op swapped for one that applies.
    let swapped = edit_line(&bytes, 2, |v| v["op"] = json!({"op":"append","text":"z"}));
    let d = replay(&swapped, Some("x"), &text).divergence.unwrap();
    assert_eq!(d.line, 3);
    assert!(d.message.contains("applies"), "{}", d.message);
    // The rolled-back op swapped for one that does not apply.
    let swapped = edit_line(&bytes, 1, |v| v["op"] = json!({"op":"fail"}));
    let swapped = edit_line(&swapped, 2, |v| {
        v["prev_entry_sha256"] = json!("0".repeat(64))
    });
    let d = replay(&swapped, Some("x"), &text).divergence.unwrap();
    assert_eq!(d.line, 2);
    assert!(d.message.contains("rolled-back"), "{}", d.message);
    // A refusal code that is not the one re-application gives.
    let recoded = edit_line(&bytes, 2, |v| {
        for d in v["diagnostics"].as_array_mut().unwrap() {
            if d["code"] == "target_missing" {
                d["code"] = json!("id_conflict");
            }
        }
    });
    let d = replay(&recoded, Some("x"), &text).divergence.unwrap();
    assert_eq!(d.line, 3);
    assert!(d.message.contains("id_conflict"), "{}", d.message);
}

/// The exact check behind a fingerprint hit: with fingerprints that
/// collide (all equal, or a few values), replay still accepts distinct
/// op_ids and names the first repeat with the line it repeats, from a
/// reader (re-read from where it started) and from bytes (a continuation).
mod op_id_fingerprints {
    use super::*;
    use proptest::prelude::*;

    fn all_collide(_: &str) -> u64 {
        0
    }

    fn few_values(id: &str) -> u64 {
        id.bytes().map(u64::from).sum::<u64>() % 3
    }

    const FINGERPRINTS: [fn(&str) -> u64; 3] = [all_collide, few_values, op_id_fingerprint];

    /// `n` applied records from "x"; record `dup.1` takes record `dup.0`'s
    /// op_id (0-based, `dup.0 < dup.1`) before the lines are chained.
    fn transcript(n: usize, dup: Option<(usize, usize)>) -> (String, Vec<u8>) {
        let _stand_in = use_applier(append_applier);
        let ops: Vec<_> = (0..n)
            .map(|i| json!({"op":"append","text":format!("{i};")}))
            .collect();
        let mut p = plan("x", &Context::default(), &ops, &Request::new(actor()));
        if let Some((i, j)) = dup {
            p.records[j].op_id = p.records[i].op_id.clone();
        }
        (p.new_text, chain_and_serialise(&mut p.records, None))
    }

    proptest! {
        #[test]
        fn repeats_are_found_exactly(n in 2usize..12, pick in any::<(usize, usize)>(), dup in any::<bool>(), which in 0usize..3) {
            let _stand_in = use_applier(append_applier);
            let i = pick.0 % (n - 1);
            let j = i + 1 + pick.1 % (n - 1 - i);
            let dup = dup.then_some((i, j));
            let (text, bytes) = transcript(n, dup);
            let fingerprint = FINGERPRINTS[which];
            let mut cursor = std::io::Cursor::new(bytes.clone());
            let from_reader = replay_reader_fingerprinted(&mut cursor, (Some("x"), &text), fingerprint);
            let from_bytes = replay_after_fingerprinted(None, &bytes, (Some("x"), &text), fingerprint);
            for r in [from_reader, from_bytes] {
                match dup {
                    None => prop_assert!(r.ok, "fingerprint {which}: {:?}", r.divergence),
                    Some((i, j)) => {
                        let d = r.divergence.expect("a repeated op_id is refused");
                        prop_assert_eq!(d.line, j + 1);
                        prop_assert!(d.message.contains(&format!("repeats line {}", i + 1)), "{}", d.message);
                    }
                }
            }
        }
    }

    #[test]
    fn a_continuation_counts_the_files_lines() {
        let _stand_in = use_applier(append_applier);
        // Lines before the slice are the committed ones: the repeat is
        // named by its line in the file, with every fingerprint colliding.
        let (text, bytes) = transcript(5, Some((3, 4)));
        let (lines, _) = split_lines(&bytes);
        let head: usize = lines[..2].iter().map(|l| l.raw.len()).sum();
        let prev = sha256_hex(lines[1].raw);
        let after = Continuation {
            prev_line_sha256: &prev,
            lines_before: 2,
        };
        let base = "x0;1;";
        let r = replay_after_fingerprinted(
            Some(after),
            &bytes[head..],
            (Some(base), &text),
            all_collide,
        );
        let d = r.divergence.expect("refused");
        assert_eq!(d.line, 5, "{d:?}");
        assert!(d.message.contains("repeats line 4"), "{}", d.message);
    }
}

/// A replay through a waypoint passes exactly when the state after that
/// line is the waypoint's, counts the applied records up to it, and names
/// the line when it is another state or the transcript ends before it.
#[test]
fn a_waypoint_is_the_state_after_its_line() {
    let _stand_in = use_applier(append_applier);
    let (text, bytes) = transcript_for("", &[&["# New\n"], &["a\n"], &["b\n"]]);
    let mid = "# New\na\n";
    let run = |line: usize, sha: &str| {
        let via = Waypoint { line, sha256: sha };
        replay_reader_via(&mut std::io::Cursor::new(&bytes), &mut |_| None, via, &text)
    };
    let (r, applied) = run(2, &sha256_hex(mid.as_bytes()));
    assert!(r.ok, "{:?}", r.divergence);
    assert_eq!((r.records, applied), (3, 2));
    // The state after line 1 is "# New\n", not the one after line 2.
    let d = run(1, &sha256_hex(mid.as_bytes())).0.divergence.unwrap();
    assert_eq!(d.line, 1);
    assert_eq!(d.expected_sha256, Some(sha256_hex(mid.as_bytes())));
    assert_eq!(d.actual_sha256, Some(sha256_hex(b"# New\n")));
    let d = run(4, &sha256_hex(text.as_bytes())).0.divergence.unwrap();
    assert_eq!(d.line, 4);
    assert!(d.message.contains("ends before line 4"), "{}", d.message);
    // The final state is still checked against the document.
    let via = Waypoint {
        line: 2,
        sha256: &sha256_hex(mid.as_bytes()),
    };
    let (r, _) = replay_reader_via(
        &mut std::io::Cursor::new(&bytes),
        &mut |_| None,
        via,
        "other\n",
    );
    assert!(!r.ok);
}

/// The trees a replay through a waypoint hands out are the parses of the
/// waypoint's state and of the document; a replay that fails hands out
/// none.
#[test]
fn a_waypoint_replay_hands_out_the_trees_it_built() {
    let _stand_in = use_applier(append_applier);
    let (text, bytes) = transcript_for("", &[&["# New\n"], &["a\n"], &["b\n"]]);
    let mid = "# New\na\n";
    let mid_sha = sha256_hex(mid.as_bytes());
    let run = |doc: &str| {
        let via = Waypoint {
            line: 2,
            sha256: &mid_sha,
        };
        replay_reader_via_trees(&mut std::io::Cursor::new(&bytes), &mut |_| None, via, doc)
    };
    let (r, applied, trees) = run(&text);
    assert!(r.ok, "{:?}", r.divergence);
    assert_eq!(applied, 2);
    assert_eq!(trees.via.as_deref(), Some(&crate::doc::parse(mid)));
    assert_eq!(trees.last.as_deref(), Some(&crate::doc::parse(&text)));
    let (r, _, trees) = run("other\n");
    assert!(!r.ok);
    assert!(trees.via.is_none() && trees.last.is_none(), "{trees:?}");
}
