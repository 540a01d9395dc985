//! Property: for random documents and random op sequences, the transcript the
//! engine writes replays from the original bytes to the final document's
//! sha256 exactly, and an applied single-block op never changes bytes outside
//! the touched block's lines.

use noma_core::doc::hash::sha256_hex;
use noma_core::plan::{chain_and_serialise, Context, Request};
use noma_core::transcript::{replay::replay, Actor, ActorKind};
use proptest::prelude::*;
use serde_json::{json, Value};

/// A random document: sections holding claims and notes with unique ids.
fn document() -> impl Strategy<Value = (String, Vec<String>, Vec<String>)> {
    (
        prop::collection::vec(prop::collection::vec(0u8..3, 0..4), 1..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(sections, crlf, frontmatter)| {
            let mut out = String::new();
            let mut directive_ids = Vec::new();
            let mut section_ids = Vec::new();
            if frontmatter {
                out.push_str("---\ntitle: Random\n---\n\n");
            }
            for (s, blocks) in sections.iter().enumerate() {
                out.push_str(&format!("## Part {s}\n\nIntro text for part {s}.\n\n"));
                section_ids.push(format!("part-{s}"));
                for (b, kind) in blocks.iter().enumerate() {
                    let id = format!("b{s}-{b}");
                    match kind {
                        0 => out.push_str(&format!(
                            "::claim{{id=\"{id}\" confidence=0.5}}\nClaim {id}.\n::\n\n"
                        )),
                        1 => out.push_str(&format!(
                            "::note{{id=\"{id}\"}}\nA note\nover two lines.\n::\n\n"
                        )),
                        _ => out.push_str(&format!(
                            "::evidence{{id=\"{id}\" for=\"{}\"}}\nEvidence text.\n::\n\n",
                            directive_ids.first().cloned().unwrap_or_else(|| id.clone())
                        )),
                    }
                    directive_ids.push(id);
                }
            }
            if crlf {
                out = out.replace('\n', "\r\n");
            }
            (out, directive_ids, section_ids)
        })
}

/// A random op over the known ids (some will be rejected: that is fine).
fn op(directives: Vec<String>, sections: Vec<String>) -> impl Strategy<Value = Value> {
    let d = if directives.is_empty() {
        vec!["missing".to_string()]
    } else {
        directives
    };
    let s = sections;
    (0u8..7, 0usize..64, 0usize..64, 0u32..1000).prop_map(move |(kind, i, j, n)| {
        let id = &d[i % d.len()];
        let parent = &s[j % s.len()];
        match kind {
            0 => json!({"op": "update_attribute", "id": id, "key": "confidence", "value": (n as f64) / 1000.0}),
            1 => json!({"op": "update_attribute", "id": id, "key": "status", "value": format!("s{n}")}),
            2 => json!({"op": "replace_block", "id": id, "content": format!("::claim{{id=\"{id}\"}}\nRewritten {n}.\n::")}),
            3 => json!({"op": "add_block", "parent": parent, "content": format!("::note{{id=\"new-{n}\"}}\nAdded.\n::")}),
            4 => json!({"op": "delete_block", "id": id}),
            5 => json!({"op": "replace_body", "id": id, "content": format!("Body {n}\nsecond line")}),
            _ => json!({"op": "rename_id", "from": id, "to": format!("renamed-{n}")}),
        }
    })
}

fn case() -> impl Strategy<Value = (String, Vec<Vec<Value>>)> {
    document().prop_flat_map(|(text, ds, ss)| {
        let requests = prop::collection::vec(prop::collection::vec(op(ds, ss), 1..3), 1..6);
        (Just(text), requests)
    })
}

/// Line numbers `(start, end)` of the block an op targets, before the op.
fn target_span(text: &str, op: &Value) -> Option<(u32, u32)> {
    let id = op.get("id").and_then(Value::as_str)?;
    let doc = noma_core::doc::parse(text);
    let node = doc.find(id)?;
    Some((node.span.start, node.span.end))
}

static APPLIED_CASES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[test]
fn most_generated_cases_apply_ops() {
    // Runs the property once more on a fixed seed range and checks that the
    // generator produces mostly applicable ops (a property over rejections
    // only would prove nothing).
    transcripts_replay_to_the_final_bytes();
    let applied = APPLIED_CASES.load(std::sync::atomic::Ordering::Relaxed);
    assert!(applied >= 48, "only {applied} of 96+ cases applied an op");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn transcripts_replay_to_the_final_bytes((original, requests) in case()) {
        let ctx = Context { doc_uri: "file:///tmp/random.noma".into(), ..Context::default() };
        let opts = Request::new(Actor { kind: ActorKind::Agent, name: "prop".into(), model: None, version: None });
        let mut text = original.clone();
        let mut transcript = Vec::new();
        let mut prev: Option<String> = None;
        for ops in &requests {
            let before = text.clone();
            let mut plan = noma_core::plan::plan(&text, &ctx, ops, &opts);
            let bytes = chain_and_serialise(&mut plan.records, prev.clone());
            if let Some(last) = bytes.split_inclusive(|&b| b == b'\n').next_back() {
                prev = Some(sha256_hex(last));
            }
            transcript.extend_from_slice(&bytes);
            if plan.accepted {
                text = plan.new_text;
            }
            // Single-op requests on a directive: bytes outside its lines stay put.
            if plan.accepted && ops.len() == 1 && text != before {
                let kind = ops[0]["op"].as_str().unwrap_or("");
                if matches!(kind, "update_attribute" | "replace_block" | "replace_body") {
                    if let Some((start, end)) = target_span(&before, &ops[0]) {
                        let old: Vec<&str> = before.split_inclusive('\n').collect();
                        let new: Vec<&str> = text.split_inclusive('\n').collect();
                        let head = (start - 1) as usize;
                        let tail = old.len() - end as usize;
                        prop_assert_eq!(&old[..head], &new[..head]);
                        prop_assert_eq!(&old[old.len() - tail..], &new[new.len() - tail..]);
                    }
                }
            }
        }
        let report = replay(&transcript, Some(&original), &text);
        prop_assert!(report.ok, "replay failed: {:?}", report.divergence);
        if report.applied > 0 {
            let expected = sha256_hex(text.as_bytes());
            prop_assert_eq!(report.final_sha256.as_deref(), Some(expected.as_str()));
            // And the check has teeth: one extra byte in the document is caught.
            let tampered = format!("{text}x");
            prop_assert!(!replay(&transcript, Some(&original), &tampered).ok);
        }
        APPLIED_CASES.fetch_add(usize::from(report.applied > 0), std::sync::atomic::Ordering::Relaxed);
    }
}
