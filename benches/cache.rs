//! Block cache: parse + block hashes (a miss) against a cache hit, for a
//! ~100 KB and a ~3 MB document. Target: a hit costs < 10% of
//! the parse for 100 KB.
//!
//! - `parse+hashes`: what every command paid before the cache.
//! - `hit (sqlite)`: one lookup in the on-disk database + decode (what a
//!   new process pays), with the in-process memo off.
//! - `open+hit`: opening the cache as a fresh process does, plus the hit.
//! - `layout/*`: the storage choice — one blob per document against one
//!   row per block, same data, same database file.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use noma_core::doc::hash::BlockHash;
use noma_git::cache::BlockCache;

fn bench(c: &mut Criterion) {
    for (label, sections) in [("100KB", 330usize), ("3MB", 10_000)] {
        let src = noma_testutil::synth::document(sections);
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = BlockCache::open(dir.path());
        cache.set_memo(false);
        let warm = cache.doc_info(&src);
        let mut group = c.benchmark_group(format!("cache-{label}"));
        group.throughput(Throughput::Bytes(src.len() as u64));
        group.sample_size(if sections > 1000 { 10 } else { 40 });
        eprintln!("{label}: {} bytes, {} blocks", src.len(), warm.blocks.len());
        group.bench_function("parse+hashes", |b| {
            b.iter(|| {
                let doc = noma_core::doc::parse(black_box(&src));
                let blocks = noma_core::doc::hash::block_hashes(&src, &doc);
                let sha = noma_core::doc::hash::sha256_hex(src.as_bytes());
                (blocks, sha)
            })
        });
        group.bench_function("hit (sqlite)", |b| {
            b.iter(|| cache.doc_info(black_box(&src)))
        });
        group.bench_function("open+hit", |b| {
            b.iter(|| {
                let fresh = BlockCache::open(dir.path());
                fresh.doc_info(black_box(&src))
            })
        });
        if sections <= 1000 {
            layout(&mut group, &warm.blocks);
        }
        group.finish();
    }
}

/// One serialized blob per document against one row per block.
fn layout(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    blocks: &[BlockHash],
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let conn = rusqlite::Connection::open(dir.path().join("rows.sqlite3")).expect("open");
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE blocks(doc_key BLOB, position INTEGER, id TEXT, kind TEXT, name TEXT,
                             start INTEGER, end INTEGER, sha256 BLOB, parent TEXT,
                             PRIMARY KEY (doc_key, position)) WITHOUT ROWID;",
    )
    .expect("schema");
    let key = [7u8; 32];
    {
        let mut ins = conn
            .prepare("INSERT INTO blocks VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
            .expect("prepare");
        for (i, b) in blocks.iter().enumerate() {
            let sha: Vec<u8> = (0..32)
                .map(|k| u8::from_str_radix(&b.sha256[k * 2..k * 2 + 2], 16).unwrap_or(0))
                .collect();
            ins.execute(rusqlite::params![
                &key[..],
                i as i64,
                b.id,
                b.kind,
                b.name,
                b.lines[0],
                b.lines[1],
                sha,
                b.parent
            ])
            .expect("insert");
        }
    }
    group.bench_function(BenchmarkId::new("layout", "row-per-block"), |b| {
        b.iter(|| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT id, kind, name, start, end, sha256, parent FROM blocks
                     WHERE doc_key = ?1 ORDER BY position",
                )
                .expect("prepare");
            let rows = stmt
                .query_map([&key[..]], |r| {
                    let sha: Vec<u8> = r.get(5)?;
                    let kind: String = r.get(1)?;
                    Ok((
                        r.get::<_, String>(0)?,
                        kind,
                        r.get::<_, Option<String>>(2)?,
                        [r.get::<_, u32>(3)?, r.get::<_, u32>(4)?],
                        hex(&sha),
                        r.get::<_, Option<String>>(6)?,
                    ))
                })
                .expect("query");
            rows.collect::<Result<Vec<_>, _>>().expect("rows")
        })
    });
}

/// Lowercase hex, as the cache's own decoder does it.
fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 15)]));
    }
    s
}

criterion_group!(benches, bench);
criterion_main!(benches);
