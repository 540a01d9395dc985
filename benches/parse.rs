//! Parse + validate throughput on a ~3 MB, 10,000-section document.
//! Target (issue 2): at least 100 MB/s on one core, so `parse` and
//! `parse+validate` use the sequential parser and a single-threaded
//! validation; `parse (2 threads)` is the split parse `noma::doc::parse`
//! uses for big documents.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

fn bench(c: &mut Criterion) {
    let src = noma::synth::document(10_000);
    let mut group = c.benchmark_group("document-10k-sections");
    group.throughput(Throughput::Bytes(src.len() as u64));
    group.sample_size(30);
    group.bench_function("parse", |b| {
        b.iter_with_large_drop(|| noma::doc::parse::parse_sequential(black_box(&src)))
    });
    group.bench_function("parse (2 threads)", |b| {
        b.iter_with_large_drop(|| noma::doc::parse(black_box(&src)))
    });
    group.bench_function("parse+validate", |b| {
        let opts = noma::validate::Options {
            single_thread: true,
            ..Default::default()
        };
        // The tree is returned so that freeing it is not timed: the CLI
        // never frees it either (it exits right after checking).
        b.iter_with_large_drop(|| {
            let doc = noma::doc::parse::parse_sequential(black_box(&src));
            let diags = noma::validate::validate(&doc, &opts);
            (doc, diags)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
