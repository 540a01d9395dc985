//! Concurrency: 8 processes × 50 patches to different blocks of one
//! document. The transcript lock serialises them: every update survives
//! and the 400 records replay.

use std::process::Command;

use serde_json::{json, Value};

const WORKERS: usize = 8;
const PATCHES: usize = 50;

#[test]
fn eight_processes_fifty_patches_each() {
    let bin = assert_cmd::cargo::cargo_bin("noma");
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("d.noma");
    let base = dir.path().join("base.noma");
    let mut text = String::from("# Shared\n");
    for w in 0..WORKERS {
        text.push_str(&format!("\n::claim{{id=\"w{w}\"}}\nworker {w}.\n::\n"));
    }
    std::fs::write(&doc, &text).unwrap();
    std::fs::write(&base, &text).unwrap();

    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (bin, doc) = (bin.clone(), doc.clone());
            std::thread::spawn(move || {
                for k in 0..PATCHES {
                    let op = json!({"op": "update_attribute", "id": format!("w{w}"), "key": format!("k{k}"), "value": k});
                    let out = Command::new(&bin)
                        .arg("patch")
                        .arg(&doc)
                        .args(["--inplace", "--format", "json", "--actor-kind", "agent"])
                        .args(["--actor-name", &format!("worker-{w}"), "--op"])
                        .arg(op.to_string())
                        .output()
                        .unwrap();
                    assert!(out.status.success(), "worker {w} patch {k}: {}", String::from_utf8_lossy(&out.stderr));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }

    let final_text = std::fs::read_to_string(&doc).unwrap();
    let parsed = noma_core::doc::parse(&final_text);
    for w in 0..WORKERS {
        let node = parsed.find(&format!("w{w}")).unwrap();
        let attrs = node.attrs().unwrap();
        for k in 0..PATCHES {
            assert!(attrs.has(&format!("k{k}")), "w{w} lost k{k}:\n{final_text}");
        }
    }
    let raw = std::fs::read_to_string(dir.path().join("d.noma.patches")).unwrap();
    let recs: Vec<Value> = raw
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), WORKERS * PATCHES);
    assert!(recs.iter().all(|r| r["patch_result"] == "applied"));
    for pair in recs.windows(2) {
        assert_eq!(
            pair[1]["pre_sha256"], pair[0]["post_sha256"],
            "hash chain is linear"
        );
    }
    let out = Command::new(&bin)
        .arg("replay")
        .arg(&doc)
        .arg("--base")
        .arg(&base)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("400 applied"));
}
