//! Single patch ops on a ~3 MB, 10,000-section document, against parsing the
//! same document alone (an op parses once, so parse time is its floor).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use serde_json::{json, Value};

// The CLI's allocator, so op costs are those of `noma patch`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    let src = noma_testutil::synth::document(10_000);
    let ops: [(&str, Value); 7] = [
        (
            "update_attribute",
            json!({"op": "update_attribute", "id": "claim-5000", "key": "confidence", "value": 0.9}),
        ),
        (
            "replace_block",
            json!({"op": "replace_block", "id": "claim-5000",
                   "content": "::claim{id=\"claim-5000\" confidence=0.7}\nRewritten.\n::"}),
        ),
        (
            "add_block",
            json!({"op": "add_block", "parent": "section-5000",
                   "content": "::note{id=\"note-new\"}\nAdded.\n::", "position": 1}),
        ),
        (
            "delete_block",
            json!({"op": "delete_block", "id": "ev-5000"}),
        ),
        (
            "move_block",
            json!({"op": "move_block", "id": "claim-5000", "parent": "section-9000"}),
        ),
        (
            "replace_body",
            json!({"op": "replace_body", "id": "claim-5000", "content": "New body."}),
        ),
        (
            "rename_id",
            json!({"op": "rename_id", "from": "claim-5000", "to": "claim-renamed"}),
        ),
    ];
    for (_, op) in &ops {
        assert!(noma_core::patch::apply_one(&src, op).is_ok(), "{op}");
    }
    let mut group = c.benchmark_group("patch-10k-sections");
    group.throughput(Throughput::Bytes(src.len() as u64));
    group.sample_size(20);
    group.bench_function("parse-only", |b| {
        b.iter(|| noma_core::doc::parse(black_box(&src)))
    });
    for (name, op) in &ops {
        group.bench_function(*name, |b| {
            b.iter(|| noma_core::patch::apply_ops(black_box(&src), std::slice::from_ref(op)))
        });
    }
    // The whole pure pipeline of `noma patch` (no I/O): parse, pre-validate,
    // apply, splice, post-validate (re-validated from the
    // pre-validation when the edit allows), build the records.
    let ctx = noma_core::plan::Context {
        doc_uri: "file:///bench.noma".into(),
        ..Default::default()
    };
    let opts = noma_core::plan::Request::new(noma_core::transcript::Actor {
        kind: noma_core::transcript::ActorKind::Agent,
        name: "bench".into(),
        model: None,
        version: None,
    });
    let (_, op) = &ops[0];
    // Each plan parses through a memo of its own, as a fresh `noma patch` does.
    group.bench_function("engine plan (update_attribute)", |b| {
        b.iter(|| noma_core::plan::plan(black_box(&src), &ctx, std::slice::from_ref(op), &opts))
    });
    // Post-validation of that op's result: derived from the pre-validation
    // (what `noma patch` does) against a full validation of the new tree.
    let vopts = noma_core::validate::Options::default();
    let before = noma_core::doc::parse(&src);
    let pre = noma_core::validate::validate_report(&before, &vopts);
    let after_src = noma_core::patch::apply_one(&src, op).expect("the op applies");
    let splice = noma_core::doc::reparse::plan(&src, &before, &after_src).expect("a splice");
    let mut after = before.clone();
    let replaced = splice.apply(&mut after).expect("the splice applies");
    assert!(noma_core::validate::revalidate(&pre, &after, &replaced, &vopts).is_some());
    group.bench_function("post-validation: revalidate", |b| {
        b.iter(|| noma_core::validate::revalidate(&pre, black_box(&after), &replaced, &vopts))
    });
    group.bench_function("post-validation: full", |b| {
        b.iter(|| noma_core::validate::validate(black_box(&after), &vopts))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
