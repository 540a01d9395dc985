//! The validator (§4.4 of the protocol): every standard rule code, at its
//! stated severity, with the observable behaviour of the reference
//! implementation (see `DEVIATIONS` below for the deliberate differences).
//!
//! One pre-order walk over the tree collects ids, aliases, pending
//! references and per-family registries and runs the per-block rules; a few
//! linear passes afterwards resolve what needs the whole document
//! (references, claims, plots, computed chains). Output is deterministic:
//! parse issues first, then document order, then rule order.
//!
//! Rule families live in submodules: [`integrity`] (ids, references),
//! [`profiles`], [`blocks`] (research, state-change, citation, diagram, plot,
//! plotly, figure, dataset, escape-hatch checks), [`computed`] (controls and
//! computed blocks) with its [`formula`] parser.
//!
//! DEVIATIONS from the reference, each because the protocol text asks for it:
//! - `noverify` silences every rule on its block (the reference forgets
//!   `evidence-missing-for` and the plot data rules), except `duplicate-id`:
//!   ambiguous identity makes patching unsafe (§2.1), so it is never hidden.
//! - `broken-reference` is reported once per referencing block and target,
//!   positioned at the reference (the reference reports once per target,
//!   without a position); references from a `noverify` block are not checked.
//! - `for=` and `parent=` on any directive and `dataset=` on non-`::plot`
//!   directives are references too (§4.4 lists them without restriction).
//! - A `::plot` may name a `::dataset` defined later in the document, or
//!   name it by alias; evidence may name its claim by alias.
//! - Rules outside the §4.4 table (memory-profile, confidence, citation
//!   source and change-request checks of newer reference versions) are not
//!   emitted.

pub mod blocks;
pub mod computed;
pub mod formula;
pub mod integrity;
pub mod profiles;
mod util;

/// Hash map with a fast, per-process-seeded hasher (ids come from untrusted
/// input, so a fixed-seed hash would invite collision attacks).
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// Hash set companion of [`FastMap`].
pub(crate) type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

use std::path::PathBuf;
use std::time::SystemTime;

use crate::diag::{Diagnostic, Pos, Severity};
use crate::doc::{AttrValue, Document, Node, NodeKind};

/// Options for one validation run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rule codes to drop (`--ignore-rule`); unknown codes yield `unknown-ignore-rule`.
    pub ignore_rules: Vec<String>,
    /// Profile override (`--profile`); otherwise frontmatter `profile:`/`profiles:`.
    pub profile: Option<String>,
    /// Directory that `::dataset{src=...}` paths are relative to (None = skip loading).
    pub base_dir: Option<PathBuf>,
    /// Whether `claim-without-evidence` runs (default on).
    pub require_evidence_for_claims: bool,
    /// The clock for `stale-citation` (None = the system clock).
    pub now: Option<SystemTime>,
    /// Citation window override in days (`--stale-days`); a citation's own
    /// `stale_after_days=` still wins, as in the reference.
    pub stale_citation_days: Option<f64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ignore_rules: Vec::new(),
            profile: None,
            base_dir: None,
            require_evidence_for_claims: true,
            now: None,
            stale_citation_days: None,
        }
    }
}

/// Every code [`validate`] can emit with its severity, in reporting order:
/// parse issues, then the §4.4 table in table order, then the meta-rule.
const RULES: &[(&str, Severity)] = &[
    ("unclosed-frontmatter", Severity::Error),
    ("invalid-frontmatter", Severity::Error),
    ("unclosed-code-fence", Severity::Error),
    ("unclosed-directive", Severity::Error),
    ("stray-directive-close", Severity::Error),
    ("directive-depth-mismatch", Severity::Error),
    ("nesting-too-deep", Severity::Error),
    ("duplicate-id", Severity::Error),
    ("broken-reference", Severity::Error),
    ("unknown-profile", Severity::Warning),
    ("out-of-profile-directive", Severity::Warning),
    ("claim-without-evidence", Severity::Warning),
    ("evidence-missing-for", Severity::Warning),
    ("risk-without-owner", Severity::Warning),
    ("decision-without-status", Severity::Warning),
    ("agent-task-without-scope", Severity::Warning),
    ("control-missing-default", Severity::Warning),
    ("control-out-of-range-default", Severity::Warning),
    ("control-invalid-lock", Severity::Warning),
    ("computed-missing-formula", Severity::Warning),
    ("formula-parse-error", Severity::Error),
    ("computed-unknown-dependency", Severity::Error),
    ("computed-chain-too-deep", Severity::Warning),
    ("state-change-missing-block", Severity::Warning),
    ("state-change-missing-from-to", Severity::Warning),
    ("stale-citation", Severity::Warning),
    ("diagram-missing-kind", Severity::Warning),
    ("diagram-missing-source", Severity::Warning),
    ("plot-missing-data", Severity::Error),
    ("plot-unknown-dataset", Severity::Error),
    ("plot-unknown-column", Severity::Error),
    ("plot-mixed-delimiters", Severity::Warning),
    ("plotly-missing-spec", Severity::Warning),
    ("plotly-invalid-json", Severity::Error),
    ("figure-missing-alt", Severity::Warning),
    ("dataset-src-missing", Severity::Warning),
    ("escape-hatch-untrusted", Severity::Warning),
    ("unknown-ignore-rule", Severity::Info),
];

/// Every code the validator can emit (parse issues, the §4.4 rules and
/// `unknown-ignore-rule`), in reporting order.
pub fn rule_codes() -> &'static [&'static str] {
    static CODES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    CODES.get_or_init(|| RULES.iter().map(|(c, _)| *c).collect())
}

/// The severity the validator gives `code`, if it is one of its codes.
pub fn severity_of(code: &str) -> Option<Severity> {
    RULES.iter().find(|(c, _)| *c == code).map(|(_, s)| *s)
}

fn rule_index(code: &str) -> usize {
    RULES
        .iter()
        .position(|(c, _)| *c == code)
        .unwrap_or(RULES.len())
}

/// Whether a directive carries the `noverify` flag.
pub(crate) fn noverify(node: &Node) -> bool {
    node.attrs()
        .and_then(|a| a.get("noverify"))
        .is_some_and(|v| *v == AttrValue::Bool(true))
}

/// A reference waiting for the whole id set: `target` must resolve.
pub(crate) struct PendingRef<'d> {
    target: std::borrow::Cow<'d, str>,
    line: u32,
    node_id: Option<&'d str>,
    /// The attribute it came from (`None` for a `[[wikilink]]`).
    attr: Option<&'static str>,
}

/// State shared by the rule families during one run.
pub(crate) struct Ctx<'d> {
    pub opts: &'d Options,
    pub doc: &'d Document,
    out: Vec<Diagnostic>,
    /// Canonical id → first node carrying it.
    pub ids: FastMap<&'d str, &'d Node>,
    /// Alias → first node registering it.
    pub aliases: FastMap<&'d str, &'d Node>,
    pub refs: Vec<PendingRef<'d>>,
    pub claims: Vec<&'d Node>,
    pub evidence_targets: FastSet<&'d str>,
    pub plots: Vec<&'d Node>,
    pub controls: FastMap<&'d str, &'d Node>,
    pub computed: FastMap<&'d str, &'d Node>,
    pub computed_nodes: Vec<&'d Node>,
    pub profiles: profiles::Declared,
    pub now_ms: i64,
    pub stale_days: f64,
}

impl<'d> Ctx<'d> {
    /// Records a diagnostic; the severity comes from the rule table.
    pub fn emit(
        &mut self,
        code: &'static str,
        message: String,
        line: Option<u32>,
        node_id: Option<&str>,
    ) {
        let severity = severity_of(code).unwrap_or(Severity::Warning);
        let mut d = Diagnostic::new(severity, code, message).with_node(node_id);
        d.pos = line.map(|line| Pos { line, column: 1 });
        self.out.push(d);
    }

    /// Records a diagnostic about a directive block.
    pub fn emit_at(&mut self, code: &'static str, message: String, node: &Node) {
        self.emit(code, message, Some(node.span.start), node.id.as_deref());
    }

    /// Queues a reference to check once every id is known.
    pub fn reference(
        &mut self,
        target: impl Into<std::borrow::Cow<'d, str>>,
        line: u32,
        node_id: Option<&'d str>,
        attr: Option<&'static str>,
    ) {
        self.refs.push(PendingRef {
            target: target.into(),
            line,
            node_id,
            attr,
        });
    }

    /// Resolves `key` against canonical ids, then aliases.
    pub fn resolve(&self, key: &str) -> Option<&'d Node> {
        self.ids.get(key).or_else(|| self.aliases.get(key)).copied()
    }
}

/// Validates a parsed document. Parse issues come first, as errors.
pub fn validate(doc: &Document, opts: &Options) -> Vec<Diagnostic> {
    let mut issues: Vec<Diagnostic> = doc
        .issues
        .iter()
        .map(|i| {
            let sev = severity_of(i.code).unwrap_or(Severity::Error);
            let d = Diagnostic::new(sev, i.code, i.message.clone());
            if i.line > 0 {
                d.at_line(i.line)
            } else {
                d
            }
        })
        .collect();

    let now = opts.now.unwrap_or_else(SystemTime::now);
    let now_ms = match now.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    };
    let stale_days = opts
        .stale_citation_days
        .filter(|d| d.is_finite() && *d > 0.0)
        .or_else(|| util::json_positive(doc.meta.get("stale_citation_days")))
        .unwrap_or(blocks::DEFAULT_STALE_DAYS);

    let mut cx = Ctx {
        opts,
        doc,
        out: Vec::new(),
        ids: FastMap::default(),
        aliases: FastMap::default(),
        refs: Vec::new(),
        claims: Vec::new(),
        evidence_targets: FastSet::default(),
        plots: Vec::new(),
        controls: FastMap::default(),
        computed: FastMap::default(),
        computed_nodes: Vec::new(),
        profiles: profiles::Declared::read(&doc.meta, opts.profile.as_deref()),
        now_ms,
        stale_days,
    };

    // Sizing the id map up front avoids repeated rehashing on big documents;
    // one id per five lines is typical of dense real documents (a rehash
    // moves every entry into fresh memory, which costs more than a little
    // unused capacity).
    cx.ids.reserve((doc.end_line as usize / 5).min(1 << 20));
    integrity::check_profiles_declared(&mut cx);
    walk(&mut cx);
    integrity::check_references(&mut cx);
    blocks::check_claims(&mut cx);
    blocks::check_plots(&mut cx);
    computed::check_computed(&mut cx);

    let mut out = std::mem::take(&mut cx.out);
    // Stable: equal keys keep emission order (document order within a rule).
    out.sort_by_key(|d| (d.pos.map_or(u32::MAX, |p| p.line), rule_index(&d.code)));
    issues.append(&mut out);
    apply_ignore_rules(issues, &opts.ignore_rules)
}

/// Drops ignored codes; an unknown code becomes an `info` note (§4.4 meta-rule).
fn apply_ignore_rules(mut diags: Vec<Diagnostic>, ignore: &[String]) -> Vec<Diagnostic> {
    if ignore.is_empty() {
        return diags;
    }
    let mut seen = FastSet::default();
    for rule in ignore {
        if severity_of(rule).is_none() && seen.insert(rule.as_str()) {
            diags.push(Diagnostic::new(
                Severity::Info,
                "unknown-ignore-rule",
                format!("--ignore-rule \"{rule}\" matches no validator rule and was ignored; see `noma check --help` for the rule list"),
            ));
        }
    }
    let drop: FastSet<&str> = ignore.iter().map(String::as_str).collect();
    diags.retain(|d| !drop.contains(d.code.as_str()));
    diags
}

/// Per-level walk state: the nearest enclosing id (for `nodeId` on content
/// that has none) and whether the enclosing directive carries `noverify`.
#[derive(Clone, Copy)]
struct Scope<'d> {
    owner_id: Option<&'d str>,
    quiet: bool,
}

/// The single pre-order walk: ids, content references, per-block rules.
fn walk<'d>(cx: &mut Ctx<'d>) {
    let doc: &'d Document = cx.doc;
    let root = Scope {
        owner_id: None,
        quiet: false,
    };
    let mut stack: Vec<(std::slice::Iter<'d, Node>, Scope<'d>)> = vec![(doc.children.iter(), root)];
    while let Some((iter, scope)) = stack.last_mut() {
        let scope = *scope;
        let Some(node) = iter.next() else {
            stack.pop();
            continue;
        };
        integrity::register_ids(cx, node);
        let owner_id = node.id.as_deref().or(scope.owner_id);
        match &node.kind {
            NodeKind::Section {
                title, children, ..
            } => {
                if !scope.quiet {
                    integrity::wikilinks_in(cx, title, node.span.start, owner_id);
                }
                if !children.is_empty() {
                    stack.push((
                        children.iter(),
                        Scope {
                            owner_id,
                            quiet: scope.quiet,
                        },
                    ));
                }
            }
            NodeKind::Paragraph { content } | NodeKind::Quote { content } => {
                if !scope.quiet {
                    integrity::wikilinks_in(cx, content, node.span.start, owner_id);
                }
            }
            NodeKind::List { items, .. } => {
                if !scope.quiet {
                    for item in items {
                        integrity::wikilinks_in(cx, &item.content, item.span.start, owner_id);
                    }
                }
            }
            NodeKind::Table { header, rows, .. } => {
                if !scope.quiet {
                    for cell in header {
                        integrity::wikilinks_in(cx, cell, node.span.start, owner_id);
                    }
                    for (r, row) in rows.iter().enumerate() {
                        let line = node.span.start.saturating_add(2).saturating_add(r as u32);
                        for cell in row {
                            integrity::wikilinks_in(cx, cell, line, owner_id);
                        }
                    }
                }
            }
            NodeKind::Code { .. } | NodeKind::ThematicBreak => {}
            NodeKind::Directive { children, .. } => {
                let quiet = noverify(node);
                blocks::check_directive(cx, node, quiet);
                if !children.is_empty() {
                    stack.push((children.iter(), Scope { owner_id, quiet }));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
