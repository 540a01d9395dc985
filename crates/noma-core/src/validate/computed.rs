//! Computed-interaction checks: `::control` defaults and lock modes, and the
//! static contract of `::computed_metric` / `::computed_plot` (and
//! `::computed_table`, which the reference treats the same way): a formula
//! that parses, whose names resolve, in a dependency chain at most two deep.

use super::label;
use super::util::{attr_number, display};
use super::{formula, noverify, Ctx, FastMap, FastSet};
use crate::doc::slug::is_js_space;
use crate::doc::{AttrValue, Attrs, Node, NodeKind};

/// Computed chains deeper than this are flagged.
const MAX_CHAIN: u32 = 2;

/// Lock modes accepted after lower-casing and removing spaces, `_` and `-`
/// (the documented `control`, `content`, `all`, `unlocked`, `none` and the
/// synonyms the reference accepts).
const LOCK_MODES: &[&str] = &[
    "control",
    "field",
    "container",
    "sdt",
    "sdtlocked",
    "content",
    "value",
    "contentlocked",
    "all",
    "both",
    "full",
    "sdtcontentlocked",
    "controlandcontent",
    "fieldandcontent",
    "unlocked",
    "none",
    "off",
    "false",
    "0",
    "no",
    "",
];

/// A non-blank trimmed string attribute.
fn str_attr<'a>(attrs: &'a Attrs, key: &str) -> Option<&'a str> {
    attrs
        .get_str(key)
        .map(|s| s.trim_matches(is_js_space))
        .filter(|s| !s.is_empty())
}

/// The text after `key:` on the first body line that starts with it
/// (case-insensitive, leading whitespace allowed); `None` when that text is blank.
fn body_field<'a>(body: Option<&'a str>, key: &str) -> Option<&'a str> {
    let line = body?.split('\n').find(|l| {
        let l = l.trim_start_matches(is_js_space);
        l.get(..key.len())
            .is_some_and(|k| k.eq_ignore_ascii_case(key))
            && l[key.len()..]
                .trim_start_matches(is_js_space)
                .starts_with(':')
    })?;
    let l = line.trim_start_matches(is_js_space);
    let rest = l[key.len()..].trim_start_matches(is_js_space);
    let value = rest.get(1..)?.trim_matches(is_js_space);
    (!value.is_empty()).then_some(value)
}

fn directive_parts(node: &Node) -> Option<(&str, &Attrs, Option<&str>)> {
    match &node.kind {
        NodeKind::Directive { name, attrs, .. } => Some((name, attrs, node.body())),
        _ => None,
    }
}

/// The formula of a computed block: `formula=` or a `formula:` body line.
pub fn formula_text(node: &Node) -> Option<&str> {
    let (_, attrs, body) = directive_parts(node)?;
    str_attr(attrs, "formula").or_else(|| body_field(body, "formula"))
}

/// Variables a computed block's domain declares (`domain="x: 0..10"`).
fn domain_vars(attrs: &Attrs, body: Option<&str>) -> FastSet<String> {
    let raw = str_attr(attrs, "domain")
        .or_else(|| str_attr(attrs, "range"))
        .or_else(|| body_field(body, "domain"))
        .or_else(|| body_field(body, "range"));
    let mut out = FastSet::default();
    for part in raw
        .unwrap_or("")
        .split(|c: char| c == ',' || is_js_space(c))
    {
        let Some((name, _)) = part.split_once(':') else {
            continue;
        };
        let mut chars = name.chars();
        let starts = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if starts && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')) {
            out.insert(name.to_string());
        }
    }
    out
}

/// The control's numeric default: `default=` as a number, or for checkbox
/// and toggle controls a boolean word (`true`/`yes`/`on`/`checked` = 1).
fn control_default(attrs: &Attrs, body: Option<&str>) -> Option<f64> {
    if let Some(n) = attr_number(attrs.get("default")) {
        return Some(n);
    }
    let kind = str_attr(attrs, "type").map(str::to_lowercase);
    if !matches!(kind.as_deref(), Some("checkbox" | "toggle")) {
        return None;
    }
    let text = match attrs.get("default") {
        Some(AttrValue::Str(s)) if !s.trim_matches(is_js_space).is_empty() => {
            Some(s.trim_matches(is_js_space).to_string())
        }
        Some(v @ (AttrValue::Num(_) | AttrValue::Bool(_))) => Some(display(v)),
        _ => body_field(body, "default").map(String::from),
    }?
    .to_lowercase();
    match text.as_str() {
        "true" | "yes" | "on" | "checked" => Some(1.0),
        "false" | "no" | "off" | "unchecked" => Some(0.0),
        _ => None,
    }
}

/// `control-missing-default`, `control-out-of-range-default`, `control-invalid-lock`.
pub(crate) fn check_control(cx: &mut Ctx<'_>, node: &Node, attrs: &Attrs, body: Option<&str>) {
    // Controls without a type are numeric sliders by default.
    let numeric = match attrs
        .get_str("type")
        .map(|t| t.trim_matches(is_js_space).to_lowercase())
    {
        Some(t) if !t.is_empty() => matches!(
            t.as_str(),
            "slider" | "range" | "number" | "checkbox" | "toggle"
        ),
        _ => true,
    };
    if numeric {
        match control_default(attrs, body) {
            None => cx.emit_at(
                "control-missing-default",
                format!("numeric control {} has no numeric default= (needed for static rendering and LLM context)", label(node)),
                node,
            ),
            Some(def) => {
                let min = attr_number(attrs.get("min"));
                let max = attr_number(attrs.get("max"));
                if min.is_some_and(|m| def < m) || max.is_some_and(|m| def > m) {
                    let bound = |b: Option<f64>| b.map_or("…".to_string(), crate::doc::format_number);
                    cx.emit_at(
                        "control-out-of-range-default",
                        format!(
                            "control {} default={} lies outside its range [{}, {}]",
                            label(node),
                            crate::doc::format_number(def),
                            bound(min),
                            bound(max)
                        ),
                        node,
                    );
                }
            }
        }
    }
    let lock = ["lock", "content_control_lock", "sdt_lock"]
        .iter()
        .find_map(|k| attrs.get(k));
    let Some(lock) = lock else { return };
    if matches!(lock, AttrValue::Bool(_)) {
        return;
    }
    let raw = display(lock);
    let normalized: String = raw
        .trim_matches(is_js_space)
        .to_lowercase()
        .chars()
        .filter(|c| !(is_js_space(*c) || *c == '_' || *c == '-'))
        .collect();
    if !LOCK_MODES.contains(&normalized.as_str()) {
        cx.emit_at(
            "control-invalid-lock",
            format!("control {} lock=\"{raw}\" is not a lock mode; use control, content, all, unlocked or none", label(node)),
            node,
        );
    }
}

/// Formula, dependency and chain-depth checks over every computed block.
pub(crate) fn check_computed(cx: &mut Ctx<'_>) {
    let nodes = std::mem::take(&mut cx.computed_nodes);
    // Dependencies of each computed id (the last block with an id wins).
    let mut deps: FastMap<&str, Vec<String>> = FastMap::default();
    for &node in &nodes {
        let Some((name, attrs, body)) = directive_parts(node) else {
            continue;
        };
        if noverify(node) {
            continue;
        }
        let Some(text) = formula_text(node) else {
            cx.emit_at(
                "computed-missing-formula",
                format!(
                    "{name} {} has no formula= attribute or formula: body line",
                    label(node)
                ),
                node,
            );
            continue;
        };
        let expr = match formula::parse(text) {
            Ok(e) => e,
            Err(e) => {
                cx.emit_at(
                    "formula-parse-error",
                    format!(
                        "{name} {} formula does not parse at character {}: {}",
                        label(node),
                        e.pos + 1,
                        e.message
                    ),
                    node,
                );
                continue;
            }
        };
        let names: Vec<String> = expr.identifiers().into_iter().map(String::from).collect();
        let domain = domain_vars(attrs, body);
        for dep in &names {
            if domain.contains(dep)
                || cx.controls.contains_key(dep.as_str())
                || cx.computed.contains_key(dep.as_str())
            {
                continue;
            }
            cx.emit_at(
                "computed-unknown-dependency",
                format!("{name} {} formula uses \"{dep}\", which is not a ::control, a computed block or a domain variable", label(node)),
                node,
            );
        }
        if let Some(id) = node.id.as_deref() {
            deps.insert(id, names);
        }
    }

    let depth = chain_depths(cx, &deps);
    for &node in &nodes {
        let Some(id) = node.id.as_deref() else {
            continue;
        };
        if noverify(node) {
            continue;
        }
        let d = depth.get(id).copied().unwrap_or(Some(1));
        if d.is_none_or(|d| d > MAX_CHAIN) {
            let what = d.map_or("is part of (or depends on) a cycle".to_string(), |d| {
                format!("has dependency depth {d}")
            });
            let name = node.directive_name().unwrap_or("computed");
            cx.emit_at(
                "computed-chain-too-deep",
                format!("{name} \"{id}\" {what}; keep computed chains at most {MAX_CHAIN} deep"),
                node,
            );
        }
    }
}

/// The chain depth of every computed id: 1 + the deepest computed
/// dependency, `None` when a cycle is reachable. Controls are depth 0.
/// Iterative depth-first search, so long chains cannot overflow the stack.
fn chain_depths<'a>(
    cx: &Ctx<'a>,
    deps: &FastMap<&str, Vec<String>>,
) -> FastMap<&'a str, Option<u32>> {
    let mut done: FastMap<&'a str, Option<u32>> = FastMap::default();
    let mut on_stack: FastSet<&'a str> = FastSet::default();
    let computed_ids: Vec<&'a str> = cx.computed.keys().copied().collect();
    let is_computed = |id: &str| cx.computed.contains_key(id) && !cx.controls.contains_key(id);
    for start in computed_ids {
        if done.contains_key(start) || !is_computed(start) {
            continue;
        }
        // Frame: (id, index of next dependency, depth so far).
        let mut stack: Vec<(&'a str, usize, Option<u32>)> = vec![(start, 0, Some(1))];
        on_stack.insert(start);
        while let Some(frame) = stack.last_mut() {
            let (id, next, _) = *frame;
            let list = deps.get(id).map(Vec::as_slice).unwrap_or(&[]);
            let Some(dep) = list.get(next) else {
                let (id, _, d) = *frame;
                stack.pop();
                on_stack.remove(id);
                done.insert(id, d);
                if let Some(parent) = stack.last_mut() {
                    parent.2 = combine(parent.2, d);
                }
                continue;
            };
            frame.1 += 1;
            let Some((&dep_key, _)) = cx.computed.get_key_value(dep.as_str()) else {
                continue;
            };
            if !is_computed(dep_key) {
                continue;
            }
            if on_stack.contains(dep_key) {
                frame.2 = None;
            } else if let Some(d) = done.get(dep_key) {
                frame.2 = combine(frame.2, *d);
            } else {
                on_stack.insert(dep_key);
                stack.push((dep_key, 0, Some(1)));
            }
        }
    }
    done
}

/// Folds a dependency's depth into its dependant's (`None` = cycle).
fn combine(current: Option<u32>, dep: Option<u32>) -> Option<u32> {
    Some(current?.max(dep?.saturating_add(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_fields() {
        let body = Some("label: x\n  Formula : a * 2\ndefault:\n");
        assert_eq!(body_field(body, "formula"), Some("a * 2"));
        assert_eq!(body_field(body, "default"), None);
        assert_eq!(body_field(body, "missing"), None);
        assert_eq!(body_field(Some("formulas: x"), "formula"), None);
    }

    #[test]
    fn domains_and_defaults() {
        let attrs = crate::doc::attrs::parse_attrs(r#"{domain="x: 0..10" range="y:1..2"}"#);
        assert_eq!(
            domain_vars(&attrs, None).into_iter().collect::<Vec<_>>(),
            ["x"]
        );
        let attrs = crate::doc::attrs::parse_attrs(r#"{domain="x:0..10, t:1..3"}"#);
        assert_eq!(domain_vars(&attrs, None).len(), 2);
        let a = crate::doc::attrs::parse_attrs(r#"{type=toggle default=on}"#);
        assert_eq!(control_default(&a, None), Some(1.0));
        let a = crate::doc::attrs::parse_attrs(r#"{type=slider default=on}"#);
        assert_eq!(control_default(&a, None), None);
        let a = crate::doc::attrs::parse_attrs(r#"{default="1e2"}"#);
        assert_eq!(control_default(&a, None), Some(100.0));
    }
}
