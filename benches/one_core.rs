//! One-core parse + validate throughput, paired with a reference workload
//! of fixed size so that a slow run can be told apart from a slow machine.
//!
//! `cargo bench --bench parse` gives the criterion figure. On the build VM
//! that figure sometimes drops for seconds while the pure-arithmetic
//! calibration beside it stays at full speed: the host slows code with
//! memory traffic more than a chain of register operations. This bench alternates
//! one parse + validate of the ~3 MB, 10,000-section document with one run
//! of a reference workload that has the same kind of memory traffic (small
//! allocations, string hashing, a hash-map build and lookups, a sort) but
//! none of noma's code, for about 20 seconds. It prints:
//!
//! - the median parse + validate throughput over all pairs;
//! - the median throughput over the pairs in which the reference workload
//!   ran within 10% of its fastest time: the machine was at full speed;
//! - the median throughput and the reference's slowdown in the other pairs.
//!
//! If noma's throughput falls only where the reference workload falls too,
//! the machine was slow, not noma.
//!
//!     cargo bench --bench one_core [-- SECONDS]

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// An allocation- and hash-heavy job of fixed size built from `std` only
/// (`seed` varies the keys, not the amount of work).
fn reference_workload(seed: u64) -> usize {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let keys: Vec<String> = (0..20_000)
        .map(|_| format!("block-{:x}", next() % 1_000_000))
        .collect();
    let mut map: HashMap<&str, usize> = HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        map.entry(k.as_str()).or_insert(i);
    }
    let mut hits = 0usize;
    for _ in 0..20_000 {
        let probe = &keys[(next() % keys.len() as u64) as usize];
        hits += map.get(probe.as_str()).copied().unwrap_or(0) & 1;
    }
    let mut sorted: Vec<&String> = keys.iter().collect();
    sorted.sort_unstable();
    hits + sorted.len()
}

/// One alternation: noma's throughput (MiB/s), the reference's time (ms).
type Pair = (f64, f64);

/// The median of `values` (NaN when there are none).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let seconds: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20)
        .max(1);
    let src = noma_testutil::synth::document(10_000);
    let mib = src.len() as f64 / (1024.0 * 1024.0);
    let opts = noma_core::validate::Options::default();
    let mut pairs: Vec<Pair> = Vec::new();
    let warmup = Instant::now() + Duration::from_secs(1);
    let deadline = Instant::now() + Duration::from_secs(seconds + 1);
    let mut round = 0u64;
    while Instant::now() < deadline {
        round += 1;
        let t = Instant::now();
        let doc = noma_core::doc::parse(black_box(&src));
        let diags = noma_core::validate::validate(&doc, &opts);
        let noma_s = t.elapsed().as_secs_f64();
        // Freed outside the timing, as in the criterion bench.
        drop(black_box((doc, diags)));
        let t = Instant::now();
        black_box(reference_workload(black_box(round)));
        let ref_s = t.elapsed().as_secs_f64();
        if Instant::now() > warmup {
            pairs.push((mib / noma_s, ref_s * 1e3));
        }
    }
    let best_ref = pairs.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let (fast, slow): (Vec<Pair>, Vec<Pair>) = pairs.iter().partition(|p| p.1 <= best_ref * 1.1);
    let throughput = |set: &[Pair]| median(set.iter().map(|p| p.0));
    println!(
        "parse+validate, one core: {:.1} MiB/s median of {} runs (min {:.1})",
        throughput(&pairs),
        pairs.len(),
        pairs.iter().map(|p| p.0).fold(f64::INFINITY, f64::min)
    );
    println!(
        "  machine at full speed (reference within 10% of its best {:.2} ms): {:.1} MiB/s median of {}",
        best_ref,
        throughput(&fast),
        fast.len()
    );
    println!(
        "  machine slower (reference {:.2}x its best, median): {:.1} MiB/s median of {}",
        median(slow.iter().map(|p| p.1 / best_ref)),
        throughput(&slow),
        slow.len()
    );
}
