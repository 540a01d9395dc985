//! Parse + validate throughput on a ~3 MB, 10,000-section document.
//! Target: at least 100 MB/s on one core (parsing and
//! validation run on the calling thread only).
//!
//! `cpu-calibration` times a fixed integer loop (no memory traffic) before
//! and after the document benches. This VM has phases in which every
//! process runs about half as fast, pure arithmetic included; the
//! calibration figure tells such a run apart from a regression in the code.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

/// A dependent chain of xorshift steps: pure ALU work whose time per step
/// only changes when the core itself runs slower.
fn calibrate(c: &mut Criterion, when: &str) {
    let mut group = c.benchmark_group("cpu-calibration");
    group.sample_size(30);
    group.bench_function(format!("xorshift 1M steps ({when})"), |b| {
        b.iter(|| {
            let mut x = black_box(0x9E37_79B9_7F4A_7C15u64);
            for _ in 0..1_000_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            x
        })
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    calibrate(c, "before");
    let src = noma_testutil::synth::document(10_000);
    let mut group = c.benchmark_group("document-10k-sections");
    group.throughput(Throughput::Bytes(src.len() as u64));
    group.sample_size(30);
    group.bench_function("parse", |b| {
        b.iter_with_large_drop(|| noma_core::doc::parse(black_box(&src)))
    });
    group.bench_function("parse+validate", |b| {
        let opts = noma_core::validate::Options::default();
        // The tree is returned so that freeing it is not timed: the target
        // is the throughput of reading and checking.
        b.iter_with_large_drop(|| {
            let doc = noma_core::doc::parse(black_box(&src));
            let diags = noma_core::validate::validate(&doc, &opts);
            (doc, diags)
        })
    });
    group.finish();
    calibrate(c, "after");
}

criterion_group!(benches, bench);
criterion_main!(benches);
