//! Randomized: for random pairs of op sequences on disjoint blocks, the
//! transcript reconciliation and the block-level document merge both give
//! what applying the two sequences in either order gives, without
//! conflicts, and the merged transcript replays from the base.

use proptest::prelude::*;
use serde_json::{json, Value};

use noma_core::plan::{chain_and_serialise, plan, Context, Request};
use noma_core::transcript::{Actor, ActorKind};
use noma_merge::blocks::{merge_documents, Labels};
use noma_merge::transcript::{reconcile, Side};

const BLOCKS: usize = 8;

fn base_doc() -> String {
    let mut s = String::from("# Doc\n\n");
    for i in 0..BLOCKS {
        if i == BLOCKS / 2 {
            s.push_str("## Part two\n\nSome prose.\n\n");
        }
        s.push_str(&format!(
            "::note{{id=\"n{i}\" k=\"v{i}\"}}\nbody {i}\n::\n\n"
        ));
    }
    s
}

fn op_strategy(ids: Vec<usize>) -> impl Strategy<Value = Value> {
    let pick = proptest::sample::select(ids);
    (pick, 0..3u8, "[a-z]{1,8}( [a-z]{1,8}){0,2}").prop_map(|(i, kind, word)| {
        let id = format!("n{i}");
        match kind {
            0 => json!({"op": "replace_body", "id": id, "content": word}),
            1 => json!({"op": "update_attribute", "id": id, "key": "k", "value": word}),
            _ => json!({
                "op": "replace_block",
                "id": id,
                "content": format!("::note{{id=\"{id}\" k=\"r\"}}\n{word}\n::"),
            }),
        }
    })
}

/// A disjoint split of the blocks and an op sequence for each side.
fn sides() -> impl Strategy<Value = (Vec<Value>, Vec<Value>)> {
    proptest::collection::vec(any::<bool>(), BLOCKS)
        .prop_filter("both sides need a block", |m| {
            m.iter().any(|b| *b) && m.iter().any(|b| !*b)
        })
        .prop_flat_map(|mask| {
            let ours: Vec<usize> = (0..BLOCKS).filter(|i| mask[*i]).collect();
            let theirs: Vec<usize> = (0..BLOCKS).filter(|i| !mask[*i]).collect();
            (
                proptest::collection::vec(op_strategy(ours), 1..5),
                proptest::collection::vec(op_strategy(theirs), 1..5),
            )
        })
}

fn transcript(base: &str, ops: &[Value], name: &str) -> (String, Vec<u8>) {
    let opts = Request::new(Actor {
        kind: ActorKind::Agent,
        name: name.into(),
        model: None,
        version: None,
    });
    let ctx = Context {
        doc_uri: "file:///repo/doc.noma".into(),
        ..Default::default()
    };
    let mut p = plan(base, &ctx, ops, &opts);
    assert!(p.accepted, "generated ops must apply: {ops:?}");
    (p.new_text, chain_and_serialise(&mut p.records, None))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn disjoint_sequences_merge_like_either_order((ours_ops, theirs_ops) in sides()) {
        let base = base_doc();
        let (ours, ot) = transcript(&base, &ours_ops, "ours");
        let (theirs, tt) = transcript(&base, &theirs_ops, "theirs");
        let both: Vec<Value> = ours_ops.iter().chain(&theirs_ops).cloned().collect();
        let rev: Vec<Value> = theirs_ops.iter().chain(&ours_ops).cloned().collect();
        let expect = noma_core::patch::apply_ops(&base, &both).unwrap();
        prop_assert_eq!(&noma_core::patch::apply_ops(&base, &rev).unwrap(), &expect);

        let r = reconcile(
            Side { doc: Some(&base), transcript: None },
            Side { doc: Some(&ours), transcript: Some(&ot) },
            Side { doc: Some(&theirs), transcript: Some(&tt) },
        ).unwrap();
        prop_assert!(r.conflicts.is_empty(), "{:?}", r.conflicts);
        prop_assert_eq!(&r.doc, &expect);
        let rep = noma_core::transcript::replay::replay(&r.transcript, Some(&base), &r.doc);
        prop_assert!(rep.ok, "{:?}", rep.divergence);
        prop_assert_eq!(r.rebased.len(), theirs_ops.len());

        // The other way round gives the same document.
        let r2 = reconcile(
            Side { doc: Some(&base), transcript: None },
            Side { doc: Some(&theirs), transcript: Some(&tt) },
            Side { doc: Some(&ours), transcript: Some(&ot) },
        ).unwrap();
        prop_assert_eq!(&r2.doc, &expect);

        // Without transcripts the block merge agrees, in both orders.
        let m = merge_documents(&base, &ours, &theirs, &Labels::default());
        prop_assert!(m.conflicts.is_empty(), "{:?}", m.conflicts);
        prop_assert_eq!(&m.text, &expect);
        let m2 = merge_documents(&base, &theirs, &ours, &Labels::default());
        prop_assert_eq!(&m2.text, &expect);
    }
}
