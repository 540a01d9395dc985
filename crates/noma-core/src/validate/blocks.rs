//! Per-block rules: profile membership, research checks, agent tasks,
//! state changes, citations, diagrams, plots, Plotly, figures, datasets and
//! escape hatches.

use super::label;
use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use super::util::{attr_positive, display, parse_iso_ms, truthy};
use super::{computed, noverify, Ctx, FastMap, FastSet};
use crate::doc::inline::split_delimited_row;
use crate::doc::slug::is_js_space;
use crate::doc::{AttrValue, Attrs, Node, NodeKind};

/// The default `stale-citation` window, in days.
pub const DEFAULT_STALE_DAYS: f64 = 365.0;

/// Dataset files larger than this are checked for existence only; their
/// columns are not read.
const MAX_DATASET_BYTES: u64 = 16 * 1024 * 1024;

fn body_is_blank(body: Option<&str>) -> bool {
    body.is_none_or(|b| b.trim_matches(is_js_space).is_empty())
}

/// The first non-blank (trimmed) string among `keys`.
fn first_str<'a>(attrs: &'a Attrs, keys: &[&'static str]) -> Option<(&'static str, &'a str)> {
    keys.iter().find_map(|k| {
        let v = attrs.get_str(k)?.trim_matches(is_js_space);
        (!v.is_empty()).then_some((*k, v))
    })
}

/// The id prefix of the `::conflict` blocks the merge driver writes
/// (`src/merge/blocks.rs`: `merge-conflict-<n>-<slug>`).
pub const CONFLICT_ID_PREFIX: &str = "merge-conflict-";

/// The `unresolved-conflict` message for a directive the merge driver
/// wrote, `None` for any other directive. The driver's shape is
/// `::conflict{id="merge-conflict-…" block="…" ours="…" theirs="…"}` holding
/// ours then theirs in two fenced blocks.
fn unresolved_conflict(name: &str, attrs: &Attrs, id: Option<&str>) -> Option<String> {
    if name != "conflict" || !id.is_some_and(|i| i.starts_with(CONFLICT_ID_PREFIX)) {
        return None;
    }
    let block = attrs.get_str("block").unwrap_or("(unknown)");
    let ours = attrs.get_str("ours").unwrap_or("ours");
    let theirs = attrs.get_str("theirs").unwrap_or("theirs");
    Some(format!(
        "unresolved merge conflict on block `{block}`: keep the first fenced version \
         (ours, {ours}) or the second (theirs, {theirs}) in place of this ::conflict \
         block, then delete the block"
    ))
}

/// Runs every rule that needs only the block itself, and registers the block
/// with the whole-document checks.
pub(crate) fn check_directive<'d>(cx: &mut Ctx<'d>, node: &'d Node, quiet: bool) {
    let body = node.body();
    let NodeKind::Directive {
        name,
        attrs,
        children,
        ..
    } = &node.kind
    else {
        return;
    };
    let name = name.as_str();
    let id = node.id.as_deref();

    // Checked even under `noverify`: committing an unresolved merge loses
    // one side's version silently.
    if let Some(message) = unresolved_conflict(name, attrs, id) {
        cx.emit_at("unresolved-conflict", message, node);
    }

    if !quiet && !cx.profiles.allows(name) {
        let profile = cx.profiles.label();
        cx.emit_at(
            "out-of-profile-directive",
            format!("directive ::{name} is not part of the declared \"{profile}\" profile; remove it, change the profile, or add noverify"),
            node,
        );
    }

    attribute_references(cx, node, name, attrs, quiet);
    register_for_document(cx, node, name, attrs, body, quiet);
    if quiet {
        return;
    }
    check_block_rules(cx, node, name, attrs, body, children.is_empty());
}

/// The references carried by attributes (`for=`, `block=`, `target=`, …),
/// queued for the whole-document check; evidence and state_change blocks
/// missing theirs are reported here.
fn attribute_references<'d>(
    cx: &mut Ctx<'d>,
    node: &'d Node,
    name: &str,
    attrs: &'d Attrs,
    quiet: bool,
) {
    let id = node.id.as_deref();
    let line = node.span.start;
    let attr_ref = |cx: &mut Ctx<'d>, attr: &'static str, target: &'d str| {
        if !quiet {
            cx.reference(target, line, id, Some(attr));
        }
    };
    match name {
        "evidence" | "counterevidence" => {
            if let Some(target) = attrs.get_str("for") {
                cx.evidence_targets.insert(target);
                attr_ref(cx, "for", target);
            } else if !quiet {
                cx.emit_at(
                    "evidence-missing-for",
                    format!(
                        "::{name} block {} has no for= attribute; add for=\"<claim id>\"",
                        label(node)
                    ),
                    node,
                );
            }
        }
        "state_change" => {
            if !quiet {
                check_state_change(cx, node, attrs);
            }
        }
        "comment" => {
            if let Some((k, t)) = first_str(attrs, &["target", "for", "parent", "block", "ref"]) {
                attr_ref(cx, k, t);
            }
            if let Some((k, t)) = first_str(attrs, &["reply_to", "replyTo", "reply"]) {
                attr_ref(cx, k, t);
            }
        }
        "change_request" => {
            if let Some((k, t)) = first_str(attrs, &["target", "for", "parent", "block"]) {
                attr_ref(cx, k, t);
            }
        }
        "footnote" | "endnote" => {
            if let Some((k, t)) = first_str(attrs, &["target", "for", "parent", "block", "ref"]) {
                attr_ref(cx, k, t);
            }
        }
        _ => {
            for key in ["for", "parent"] {
                if let Some(t) = attrs.get_str(key) {
                    attr_ref(cx, key, t);
                }
            }
            if name != "plot" {
                if let Some(t) = attrs.get_str("dataset") {
                    attr_ref(cx, "dataset", t);
                }
            }
        }
    }
}

/// `state-change-missing-block` and `state-change-missing-from-to`; a
/// `block=` is registered as a reference.
fn check_state_change<'d>(cx: &mut Ctx<'d>, node: &'d Node, attrs: &'d Attrs) {
    match attrs.get_str("block") {
        Some(target) => cx.reference(target, node.span.start, node.id.as_deref(), Some("block")),
        None => cx.emit_at(
            "state-change-missing-block",
            format!(
                "state_change {} has no block= attribute naming the changed block",
                label(node)
            ),
            node,
        ),
    }
    let missing: Vec<&str> = ["from", "to"]
        .into_iter()
        .filter(|k| !attrs.has(k))
        .collect();
    if !missing.is_empty() {
        cx.emit_at(
            "state-change-missing-from-to",
            format!(
                "state_change {} is missing {}; it needs both from= and to=",
                label(node),
                missing.join(" and ")
            ),
            node,
        );
    }
}

/// Records the blocks the whole-document checks need (claims, plots,
/// controls, computed blocks); controls are checked here too.
fn register_for_document<'d>(
    cx: &mut Ctx<'d>,
    node: &'d Node,
    name: &str,
    attrs: &'d Attrs,
    body: Option<&'d str>,
    quiet: bool,
) {
    let id = node.id.as_deref();
    match name {
        "claim" if id.is_some() => cx.claims.push(node),
        "plot" => cx.plots.push(node),
        "control" => {
            if let Some(id) = id {
                cx.controls.entry(id).or_insert(node);
            }
            if !quiet {
                computed::check_control(cx, node, attrs, body);
            }
        }
        "computed_metric" | "computed_plot" | "computed_table" => {
            if let Some(id) = id {
                // A later block with the same id replaces the earlier one, as in the reference.
                cx.computed.insert(id, node);
            }
            cx.computed_nodes.push(node);
        }
        _ => {}
    }
}

/// The rules of one directive kind that need only the block itself
/// (owners, statuses, scopes, escape hatches, diagrams, Plotly, figures,
/// datasets, citations); not run under `noverify`.
fn check_block_rules(
    cx: &mut Ctx<'_>,
    node: &Node,
    name: &str,
    attrs: &Attrs,
    body: Option<&str>,
    childless: bool,
) {
    match name {
        "risk" if !truthy(attrs.get("owner")) => cx.emit_at(
            "risk-without-owner",
            format!("risk {} has no owner= attribute; name who watches it", label(node)),
            node,
        ),
        "decision" | "adr" if !truthy(attrs.get("status")) => cx.emit_at(
            "decision-without-status",
            format!("{name} {} has no status= attribute (e.g. status=proposed|accepted)", label(node)),
            node,
        ),
        "agent_task" | "todo" if !truthy(attrs.get("scope")) && body_is_blank(body) && childless => {
            cx.emit_at(
                "agent-task-without-scope",
                format!("{name} {} has neither scope= nor a body describing the task", label(node)),
                node,
            )
        }
        "html" | "svg" | "script" if attrs.get("trusted") != Some(&AttrValue::Bool(true)) => cx.emit_at(
            "escape-hatch-untrusted",
            format!("::{name} escape hatch {} is not marked trusted; add the trusted flag to acknowledge it, or noverify to silence all checks", label(node)),
            node,
        ),
        "diagram" => {
            let kind = attrs.get("kind").map(display).unwrap_or_default();
            if kind.is_empty() {
                cx.emit_at(
                    "diagram-missing-kind",
                    format!("diagram {} has no kind= attribute (mermaid, graphviz or drawio)", label(node)),
                    node,
                );
            }
            if body_is_blank(body) {
                cx.emit_at("diagram-missing-source", format!("diagram {} has no source body", label(node)), node);
            }
        }
        "plotly" => {
            let spec = body.unwrap_or("").trim_matches(is_js_space);
            if spec.is_empty() {
                cx.emit_at("plotly-missing-spec", format!("plotly {} has no JSON spec body", label(node)), node);
            } else if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(spec) {
                cx.emit_at(
                    "plotly-invalid-json",
                    format!("plotly {} body is not valid JSON: {e}", label(node)),
                    node,
                );
            }
        }
        "figure" if !truthy(attrs.get("alt")) && !truthy(attrs.get("caption")) => cx.emit_at(
            "figure-missing-alt",
            format!("figure {} has neither alt= nor caption= text; add alt=\"…\" for accessibility", label(node)),
            node,
        ),
        "dataset" => check_dataset_src(cx, node, attrs),
        "citation" => check_citation(cx, node, attrs),
        _ => {}
    }
}

/// `citation-missing-source`: none of `url=`, `source=`, `doi=` (a rule
/// the reference validator has beyond the §4.4 table, which does not close
/// the list: §4.3 has readers tolerate unknown codes); `stale-citation`:
/// `accessed=` older than the window.
fn check_citation(cx: &mut Ctx<'_>, node: &Node, attrs: &Attrs) {
    if !["url", "source", "doi"]
        .iter()
        .any(|k| truthy(attrs.get(k)))
    {
        cx.emit_at(
            "citation-missing-source",
            format!(
                "citation {} has no url=, source= or doi= attribute; say where it comes from",
                label(node)
            ),
            node,
        );
    }
    let accessed = attrs.get("accessed");
    if !truthy(accessed) {
        return;
    }
    let accessed = accessed.map(display).unwrap_or_default();
    let Some(at) = parse_iso_ms(&accessed) else {
        return;
    };
    let window = attr_positive(attrs.get("stale_after_days")).unwrap_or(cx.stale_days);
    let age_ms = cx.now_ms.saturating_sub(at) as f64;
    if age_ms > window * 86_400_000.0 {
        cx.emit_at(
            "stale-citation",
            format!(
                "citation {} was last accessed {accessed}, more than {} days ago; re-check the source and update accessed=",
                label(node),
                crate::doc::format_number(window)
            ),
            node,
        );
    }
}

/// A dataset's local `src=` and where to read it, when loading is on.
fn dataset_src<'a>(
    cx: &'a Ctx<'_>,
    attrs: &'a Attrs,
) -> Option<(&'a dyn super::DatasetFiles, &'a str)> {
    let files = cx.opts.datasets.as_deref()?;
    let src = attrs.get_str("src")?;
    if src.contains("://") {
        return None; // remote sources are not fetched by the validator
    }
    Some((files, src))
}

/// `dataset-src-missing`: `src=` that cannot be read (only with a base dir).
fn check_dataset_src(cx: &mut Ctx<'_>, node: &Node, attrs: &Attrs) {
    let Some((files, src)) = dataset_src(cx, attrs) else {
        return;
    };
    if !files.readable(src) {
        cx.emit_at(
            "dataset-src-missing",
            format!("dataset {} src=\"{src}\" could not be loaded (missing or unreadable); fix the path relative to the document", label(node)),
            node,
        );
    }
}

/// `claim-without-evidence`: a claim no evidence targets by its id.
pub(crate) fn check_claims(cx: &mut Ctx<'_>) {
    if !cx.opts.require_evidence_for_claims {
        return;
    }
    let claims = std::mem::take(&mut cx.claims);
    if claims.is_empty() {
        return;
    }
    // Evidence may name a claim by alias; compare canonical ids.
    let backed: FastSet<&str> = if cx.aliases.is_empty() {
        std::mem::take(&mut cx.evidence_targets)
    } else {
        cx.evidence_targets
            .iter()
            .map(|t| cx.resolve(t).and_then(|n| n.id.as_deref()).unwrap_or(t))
            .collect()
    };
    for claim in claims {
        let Some(id) = claim.id.as_deref() else {
            continue;
        };
        if noverify(claim) || backed.contains(id) {
            continue;
        }
        cx.emit_at(
            "claim-without-evidence",
            format!("claim \"{id}\" has no ::evidence or ::counterevidence with for=\"{id}\"; add one, or noverify"),
            claim,
        );
    }
}

/// Plot rules, run after the walk so a plot may name a later dataset.
pub(crate) fn check_plots(cx: &mut Ctx<'_>) {
    let plots = std::mem::take(&mut cx.plots);
    // Columns per dataset node (by address): many plots may share one dataset.
    let mut columns: FastMap<usize, HashSet<String>> = FastMap::default();
    for plot in plots {
        let Some(attrs) = plot.attrs() else { continue };
        if noverify(plot) {
            continue;
        }
        if let Some(reference) = attrs.get_str("dataset") {
            match cx.resolve(reference).filter(|n| n.is_directive("dataset")) {
                None => cx.emit_at(
                    "plot-unknown-dataset",
                    format!("plot {} names dataset \"{reference}\", which is not a ::dataset id in this document", label(plot)),
                    plot,
                ),
                Some(ds) => {
                    if let Some(column) = attrs.get_str("column") {
                        let key = std::ptr::from_ref(ds) as usize;
                        let cols = columns.entry(key).or_insert_with(|| dataset_columns(cx, ds));
                        if !cols.is_empty() && !cols.contains(column) {
                            let mut known: Vec<&str> = cols.iter().map(String::as_str).collect();
                            known.sort_unstable();
                            cx.emit_at(
                                "plot-unknown-column",
                                format!(
                                    "plot {} names column \"{column}\", which dataset \"{reference}\" does not declare (columns: {})",
                                    label(plot),
                                    known.join(", ")
                                ),
                                plot,
                            );
                        }
                    }
                }
            }
        }
        if !attrs.has("data") && !attrs.has("dataset") {
            cx.emit_at(
                "plot-missing-data",
                format!("plot {} has neither data= nor dataset=; add inline data or reference a ::dataset", label(plot)),
                plot,
            );
        }
        let delim = |v: Option<&str>| -> Option<&'static str> {
            let s = v.unwrap_or("");
            let comma = s.contains(',');
            let space = s.trim_matches(is_js_space).chars().any(is_js_space);
            match (comma, space) {
                (true, false) => Some("comma"),
                (false, true) => Some("space"),
                _ => None,
            }
        };
        if let (Some(a), Some(b)) = (
            delim(attrs.get_str("data")),
            delim(attrs.get_str("xlabels")),
        ) {
            if a != b {
                cx.emit_at(
                    "plot-mixed-delimiters",
                    format!("plot {} mixes {a}-separated data= with {b}-separated xlabels=; use commas in both", label(plot)),
                    plot,
                );
            }
        }
    }
}

/// The columns a dataset declares: `columns=`, plus the CSV/TSV header, the
/// JSON keys, or the YAML `schema:` keys of its body (or loaded `src=` file
/// when the body is empty).
fn dataset_columns(cx: &Ctx<'_>, ds: &Node) -> HashSet<String> {
    let mut cols = HashSet::new();
    let body = ds.body();
    let NodeKind::Directive { attrs, .. } = &ds.kind else {
        return cols;
    };
    if let Some(list) = attrs.get_str("columns") {
        cols.extend(
            list.split(|c: char| c == ',' || is_js_space(c))
                .filter(|s| !s.is_empty())
                .map(String::from),
        );
    }
    let mut format = attrs
        .get("format")
        .map(display)
        .unwrap_or_default()
        .to_lowercase();
    let loaded;
    let text: &str = match body {
        Some(b) if !b.trim_matches(is_js_space).is_empty() => b,
        _ => {
            let Some((files, src)) = dataset_src(cx, attrs) else {
                return cols;
            };
            let Some(content) = files.read_small(src, MAX_DATASET_BYTES) else {
                return cols;
            };
            if format.is_empty() {
                format = Path::new(src)
                    .extension()
                    .and_then(|e| e.to_str())
                    .map(str::to_lowercase)
                    .unwrap_or_default();
            }
            loaded = content;
            &loaded
        }
    };
    if text.trim_matches(is_js_space).is_empty() {
        return cols;
    }
    match format.as_str() {
        "csv" | "tsv" => {
            let delim = if format == "tsv" { '\t' } else { ',' };
            let header = text.split(['\n', '\r']).find(|l| !l.is_empty());
            if let Some(header) = header {
                cols.extend(
                    split_delimited_row(header, delim)
                        .into_iter()
                        .filter(|c| !c.is_empty()),
                );
            }
        }
        "json" => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(rows)) => {
                if let Some(Value::Object(first)) = rows.first() {
                    cols.extend(first.keys().cloned());
                }
            }
            Ok(Value::Object(obj)) => {
                if let Some(Value::Array(names)) = obj.get("columns") {
                    cols.extend(names.iter().filter_map(Value::as_str).map(String::from));
                }
            }
            _ => {}
        },
        _ => {
            if let Ok(serde_yaml_ng::Value::Mapping(map)) =
                serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
            {
                if let Some(serde_yaml_ng::Value::Mapping(schema)) = map.get("schema") {
                    cols.extend(schema.keys().filter_map(yaml_key));
                }
            }
        }
    }
    cols
}

fn yaml_key(k: &serde_yaml_ng::Value) -> Option<String> {
    use serde_yaml_ng::Value as Y;
    match k {
        Y::String(s) => Some(s.clone()),
        Y::Number(n) => Some(n.to_string()),
        Y::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}
