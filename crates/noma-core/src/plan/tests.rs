//! The planner's policy and record contents, with the stand-in applier
//! where the ops themselves do not matter.

use super::diagnostic_delta::{changed_diagnostics, tag};
use super::*;
use crate::diag::{Phase, Summary};
use crate::doc::hash::sha256_hex;
use crate::patch::testing::{append_applier, use_applier};
use crate::transcript::ActorKind;
use crate::transcript::{self, PatchResult};
use serde_json::json;

pub(super) fn actor() -> Actor {
    Actor {
        kind: ActorKind::Agent,
        name: "t".into(),
        model: None,
        version: None,
    }
}

fn codes(r: &Record) -> Vec<String> {
    r.diagnostics
        .iter()
        .flatten()
        .map(|d| d.code.clone())
        .collect()
}

#[test]
fn applied_noop_chain_is_exact() {
    let _stand_in = use_applier(append_applier);
    let ops = [
        json!({"op":"append","text":"a\n"}),
        json!({"op":"same"}),
        json!({"op":"append","text":"b\n"}),
    ];
    let p = plan("x\n", &Context::default(), &ops, &Request::new(actor()));
    assert!(p.accepted);
    assert_eq!(p.new_text, "x\na\nb\n");
    let r = &p.records;
    assert_eq!(
        r.iter().map(|r| r.patch_result).collect::<Vec<_>>(),
        [
            PatchResult::Applied,
            PatchResult::Noop,
            PatchResult::Applied
        ]
    );
    assert_eq!(r[0].pre_sha256, sha256_hex(b"x\n"));
    assert_eq!(r[1].pre_sha256, r[0].post_sha256);
    assert_eq!(r[1].post_sha256, r[1].pre_sha256);
    assert_eq!(r[2].pre_sha256, r[1].post_sha256);
    assert_eq!(r[2].post_sha256, sha256_hex(b"x\na\nb\n"));
    for rec in r {
        rec.check_shape().unwrap();
    }
}

#[test]
fn failure_aborts_earlier_ops_and_skips_later() {
    let _stand_in = use_applier(append_applier);
    let ops = [
        json!({"op":"append","text":"a"}),
        json!({"op":"fail"}),
        json!({"op":"append","text":"b"}),
    ];
    let p = plan("x", &Context::default(), &ops, &Request::new(actor()));
    assert!(!p.accepted);
    assert_eq!(p.new_text, "x");
    assert_eq!(p.records.len(), 2);
    assert_eq!(codes(&p.records[0]), ["op_list_aborted"]);
    assert_eq!(codes(&p.records[1]), ["target_missing"]);
    for r in &p.records {
        assert_eq!(r.patch_result, PatchResult::Rejected);
        assert_eq!(r.pre_sha256, r.post_sha256);
        assert_eq!(r.pre_validation, Summary::Error);
    }
}

#[test]
fn expected_sha_drift_manifest_and_chain() {
    let _stand_in = use_applier(append_applier);
    let ops = [
        json!({"op":"append","text":"a"}),
        json!({"op":"append","text":"b"}),
    ];
    let mut o = Request::new(actor());
    o.expected_sha = Some("00000000".into());
    let p = plan("x", &Context::default(), &ops, &o);
    assert!(p.records.iter().all(|r| codes(r) == ["sha_mismatch"]));
    o.expected_sha = Some(transcript::short_sha(&sha256_hex(b"x")));
    o.base_sha256 = Some(sha256_hex(b"older"));
    let mut p = plan("x", &Context::default(), &ops, &o);
    assert!(p.accepted);
    assert_eq!(codes(&p.records[0]), ["base_sha_drift"]);
    assert_eq!(p.records[0].pre_validation, Summary::Warn);
    let bytes = chain_and_serialise(&mut p.records, None);
    let t = transcript::parse_transcript(&bytes).unwrap();
    assert_eq!(t.entries[0].record.prev_entry_sha256, None);
    assert_eq!(
        t.entries[1].record.prev_entry_sha256.as_deref(),
        Some(t.entries[0].line_sha256.as_str())
    );
    let ctx = Context {
        book_manifest: true,
        ..Context::default()
    };
    let p = plan("x", &ctx, &ops, &Request::new(actor()));
    assert!(p.records.iter().all(|r| codes(r) == ["unsupported_op"]));
}

#[test]
fn strict_blocks_on_pre_errors() {
    // An unclosed directive is a parse issue, i.e. a pre-validation error.
    let src = "::claim{id=\"c\"}\nnever closed\n";
    if Summary::of(&validate_parsed(src)) != Summary::Error {
        return; // the parser recovered silently; nothing to test here
    }
    let mut o = Request::new(actor());
    o.strict = true;
    let p = plan_noop(src, &o);
    assert!(codes(&p.records[0])
        .iter()
        .any(|c| c == "pre_validation_blocked"));
    assert_eq!(p.records[0].patch_result, PatchResult::Rejected);
    o.strict = false;
    assert!(plan_noop(src, &o).accepted);
}

fn validate_parsed(src: &str) -> Vec<Diagnostic> {
    crate::validate::validate(&crate::doc::parse(src), &Default::default())
}

/// One `same` (noop) op on `src` with the test applier.
fn plan_noop(src: &str, opts: &Request) -> Plan {
    let _stand_in = use_applier(append_applier);
    plan(src, &Context::default(), &[json!({"op":"same"})], opts)
}

#[test]
fn records_carry_what_changed_and_a_count_of_the_rest() {
    // 300 standing warnings (claims without evidence) plus one the op
    // fixes: the record lists the resolved one and counts the rest.
    let mut src = String::new();
    for i in 0..300 {
        src.push_str(&format!("::claim{{id=\"c{i}\"}}\nText {i}.\n::\n\n"));
    }
    let p = plan(
        &src,
        &Context::default(),
        &[json!({"op":"delete_block","id":"c7"})],
        &Request::new(actor()),
    );
    assert!(p.accepted);
    let r = &p.records[0];
    let diags = r.diagnostics.as_ref().unwrap();
    let pre_all = tag(validate_parsed(&src), Phase::Pre);
    assert!(pre_all.len() >= 300, "{}", pre_all.len());
    assert!(diags.len() < 10, "{diags:?}");
    let unchanged: Vec<_> = diags
        .iter()
        .filter(|d| d.code == UNCHANGED_DIAGNOSTICS)
        .collect();
    assert_eq!(unchanged.len(), 2);
    assert!(unchanged[0]
        .message
        .starts_with(&format!("{} ", pre_all.len() - 1)));
    // The summaries stay derivable from the array (§4.2).
    assert_eq!(r.pre_validation, Summary::of(&pre_all));
    assert_eq!(r.post_validation, Summary::of(&p.post_diagnostics));
    assert_eq!(p.post_diagnostics.len(), pre_all.len() - 1);
    assert!(r.to_line().len() < 4096, "{}", r.to_line().len());
}

#[test]
fn a_re_validated_change_records_what_a_full_comparison_would() {
    // Single ops take the delta path; the record must hold exactly what
    // comparing the full pre and post reports gives.
    let src = "# A\n\n::claim{id=\"ca\"}\nA.\n::\n\n::claim{id=\"cb\" confidence=2}\nB.\n::\n\n\
               ::evidence{id=\"ev\" for=\"ca\"}\nE.\n::\n";
    let ops = [
        json!({"op":"update_attribute","id":"ca","key":"n","value":1}),
        json!({"op":"update_attribute","id":"cb","key":"confidence","value":0.5}),
        json!({"op":"replace_body","id":"ev","content":"F."}),
        json!({"op":"update_attribute","id":"cb","key":"confidence","value":7}),
    ];
    for op in ops {
        let p = plan(
            src,
            &Context::default(),
            std::slice::from_ref(&op),
            &Request::new(actor()),
        );
        assert!(p.accepted, "{op}");
        let pre = tag(validate_parsed(src), Phase::Pre);
        let post = tag(validate_parsed(&p.new_text), Phase::Post);
        let (pre_part, post_part) = changed_diagnostics(&pre, &post);
        let mut want = pre_part;
        want.extend(post_part);
        let got = p.records[0].diagnostics.clone().unwrap();
        let strip = |v: Vec<Diagnostic>| -> Vec<Diagnostic> {
            v.into_iter()
                .map(|mut d| {
                    d.pos = None;
                    d
                })
                .collect()
        };
        assert_eq!(strip(got), strip(want), "{op}");
        assert_eq!(p.post_diagnostics, post, "{op}");
    }
}

#[test]
fn records_are_stamped_by_the_caller_s_ids_and_clock() {
    use crate::transcript::stamp::{CountingIds, FixedClock};
    let _stand_in = use_applier(append_applier);
    let clock = FixedClock(time::OffsetDateTime::from_unix_timestamp(1_767_225_600).unwrap());
    let ops = [json!({"op":"append","text":"a"}), json!({"op":"same"})];
    let run = || {
        let ids = CountingIds::starting_at(0);
        let stamps = Stamps {
            ids: &ids,
            clock: &clock,
        };
        let mut memo = crate::doc::ParseMemo::new();
        plan_stamped(
            &mut memo,
            "x",
            &Context::default(),
            &ops,
            &Request::new(actor()),
            stamps,
        )
    };
    let (p, again) = (run(), run());
    let stamped: Vec<_> = p.records.iter().map(|r| (&r.op_id, &r.ts)).collect();
    assert_eq!(
        stamped,
        [
            (
                &"00000000-0000-4000-8000-000000000001".to_string(),
                &"2026-01-01T00:00:00.000Z".to_string()
            ),
            (
                &"00000000-0000-4000-8000-000000000002".to_string(),
                &"2026-01-01T00:00:00.000Z".to_string()
            ),
        ]
    );
    // Everything but the elapsed time is the same on a second run.
    let strip = |p: &Plan| -> Vec<Record> {
        p.records
            .iter()
            .cloned()
            .map(|mut r| {
                r.elapsed_ms = None;
                r
            })
            .collect()
    };
    assert_eq!(strip(&p), strip(&again));
    assert!(p.records.iter().all(|r| r.elapsed_ms.is_some()));
}
