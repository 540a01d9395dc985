//! Load-robust speed probe for single ops on the ~3 MB synthetic document:
//! interleaves parse-only and each op for several rounds and reports the
//! minimum of each (`cargo bench --bench patch_speed`). On a loaded machine
//! the minimum of interleaved runs moves less than criterion's means; the
//! criterion bench `benches/patch.rs` has the same ops.

use std::time::{Duration, Instant};

use serde_json::json;

// The CLI's allocator, so costs are those of `noma patch`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and
    // then there is nothing to check here.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let src = noma_testutil::synth::document(10_000);
    let ops = [
        json!({"op": "update_attribute", "id": "claim-5000", "key": "confidence", "value": 0.9}),
        json!({"op": "replace_block", "id": "claim-5000",
               "content": "::claim{id=\"claim-5000\" confidence=0.7}\nRewritten.\n::"}),
        json!({"op": "add_block", "parent": "section-5000",
               "content": "::note{id=\"note-new\"}\nAdded.\n::", "position": 1}),
        json!({"op": "delete_block", "id": "ev-5000"}),
        json!({"op": "move_block", "id": "claim-5000", "parent": "section-9000"}),
        json!({"op": "replace_body", "id": "claim-5000", "content": "New body."}),
        json!({"op": "rename_id", "from": "claim-5000", "to": "claim-renamed"}),
    ];
    let mut best = vec![Duration::MAX; ops.len() + 1];
    for _ in 0..15 {
        let t = Instant::now();
        drop(std::hint::black_box(noma_core::doc::parse(&src)));
        best[0] = best[0].min(t.elapsed());
        for (i, op) in ops.iter().enumerate() {
            let t = Instant::now();
            let out = noma_core::patch::apply_ops(&src, std::slice::from_ref(op));
            best[i + 1] = best[i + 1].min(t.elapsed());
            assert!(out.is_ok(), "{op}");
        }
    }
    eprintln!("{} bytes; minimum of 15 rounds:", src.len());
    eprintln!("  parse only          {:?}", best[0]);
    for (op, t) in ops.iter().zip(&best[1..]) {
        eprintln!("  {:<19} {:?}", op["op"].as_str().unwrap_or("?"), t);
    }
}
