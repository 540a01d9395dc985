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
//! - `unresolved-conflict` (error, not in §4.4): a `::conflict` block left
//!   by noma's merge driver (`noma_git::merge`) must not be committed; like
//!   `duplicate-id` it ignores `noverify`.
//! - Structural parse issues are errors: `unclosed-directive`,
//!   `stray-directive-close` (and the code fence and frontmatter ones): the
//!   pre-commit hook must block a dropped or doubled fence line. The
//!   reference ends an unclosed directive at the end of the file and reads
//!   a closer with nothing open as paragraph text, without a diagnostic.
//! - `directive-depth-mismatch` is a warning (an error under `--strict`
//!   and the hooks' `strict: true`): an opener with as many colons as its
//!   parent is read as the parent's child (decision
//!   `equal-colon-children`; the reference reads
//!   it and the parent's second closer as text), which is how the Annex C
//!   fixture `patch/add_block` nests a `::risk` in a `::section`; §1 asks
//!   children for strictly more colons, so it is still reported.
//! - `citation-missing-source` (warning, not in §4.4, which §4.3 lets
//!   readers extend) is emitted as the reference does: a `::citation` with
//!   none of `url=`, `source=`, `doi=`. Other rules outside the table
//!   (memory-profile, confidence and change-request checks of newer
//!   reference versions) are not emitted.

pub mod blocks;
pub mod computed;
pub mod formula;
pub mod integrity;
pub mod profiles;
mod ranges;
mod util;

pub use ranges::{attach_ranges, validate_with_ranges};

/// Hash map with a fast, per-process-seeded hasher (ids come from untrusted
/// input, so a fixed-seed hash would invite collision attacks).
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// Hash set companion of [`FastMap`].
pub(crate) type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

use std::sync::Arc;
use std::time::SystemTime;

use crate::diag::{Diagnostic, Pos, Severity};
use crate::doc::{AttrValue, Document, Node, NodeKind};

/// The files a document's `::dataset{src=...}` blocks name, as the
/// validator sees them: `src` is the attribute as written, relative to the
/// document.
pub trait DatasetFiles: std::fmt::Debug + Send + Sync {
    /// Whether `src` names a regular file that can be opened.
    fn readable(&self, src: &str) -> bool;
    /// The text of `src` when it is a regular UTF-8 file of at most `max`
    /// bytes; `None` otherwise.
    fn read_small(&self, src: &str, max: u64) -> Option<String>;
}

/// Options for one validation run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rule codes to drop (`--ignore-rule`); unknown codes yield `unknown-ignore-rule`.
    pub ignore_rules: Vec<String>,
    /// Profile override (`--profile`); otherwise frontmatter `profile:`/`profiles:`.
    pub profile: Option<String>,
    /// Where `::dataset{src=...}` files are read from, relative to the
    /// document (None = skip loading). The core reads no files itself; a
    /// shell with a file system supplies one (`noma_store::fsio::datasets_in`).
    pub datasets: Option<Arc<dyn DatasetFiles>>,
    /// Whether `claim-without-evidence` runs (default on).
    pub require_evidence_for_claims: bool,
    /// The clock for `stale-citation`: None = the system clock with the
    /// default `std-clock` feature, the epoch (nothing stale) without it.
    pub now: Option<SystemTime>,
    /// Citation window override in days (`--stale-days`); a citation's own
    /// `stale_after_days=` still wins, as in the reference.
    pub stale_citation_days: Option<f64>,
    /// Ids and aliases the other chapters of a book define (book mode,
    /// §2.3): a reference to one of them resolves.
    pub known_elsewhere: Option<Arc<std::collections::HashSet<String>>>,
    /// Warnings are reported as errors (`--strict`, the policy's
    /// `strict: true`), so that every entry point shows and counts the
    /// same finding the same way; infos stay infos.
    pub strict: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ignore_rules: Vec::new(),
            profile: None,
            datasets: None,
            require_evidence_for_claims: true,
            now: None,
            stale_citation_days: None,
            known_elsewhere: None,
            strict: false,
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
    ("directive-depth-mismatch", Severity::Warning),
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
    ("citation-missing-source", Severity::Warning),
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
    ("unresolved-conflict", Severity::Error),
    ("unknown-ignore-rule", Severity::Info),
];

/// Every code the validator can emit (parse issues, the §4.4 rules and
/// `unknown-ignore-rule`), in reporting order.
pub fn rule_codes() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|(c, _)| *c)
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
#[derive(PartialEq)]
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
    /// A fresh context for validating `doc` with `opts`.
    fn new(doc: &'d Document, opts: &'d Options) -> Ctx<'d> {
        let now_ms = now_ms(opts.now);
        let stale_days = stale_days(&doc.meta, opts);
        Ctx {
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
        }
    }

    /// A context that has walked only `nodes` (children of a container
    /// whose children are walked in `scope`): their per-block findings and
    /// what they register for the whole-document rules.
    fn walked(
        doc: &'d Document,
        opts: &'d Options,
        nodes: &'d [Node],
        scope: Scope<'d>,
    ) -> Ctx<'d> {
        let mut cx = Ctx::new(doc, opts);
        walk(&mut cx, nodes, scope);
        cx
    }

    /// Records a diagnostic; the severity comes from the rule table.
    pub(crate) fn emit(
        &mut self,
        code: &'static str,
        message: String,
        line: Option<u32>,
        node_id: Option<&str>,
    ) {
        self.out.push(rule_diagnostic(code, message, line, node_id));
    }

    /// Records a diagnostic about a directive block.
    pub(crate) fn emit_at(&mut self, code: &'static str, message: String, node: &Node) {
        self.emit(code, message, Some(node.span.start), node.id.as_deref());
    }

    /// Queues a reference to check once every id is known.
    pub(crate) fn reference(
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
    pub(crate) fn resolve(&self, key: &str) -> Option<&'d Node> {
        self.ids.get(key).or_else(|| self.aliases.get(key)).copied()
    }
}

/// The citation window in days: `--stale-days`, else the frontmatter's
/// `stale_citation_days:`, else the default.
fn stale_days(meta: &serde_json::Map<String, serde_json::Value>, opts: &Options) -> f64 {
    opts.stale_citation_days
        .filter(|d| d.is_finite() && *d > 0.0)
        .or_else(|| util::json_positive(meta.get("stale_citation_days")))
        .unwrap_or(blocks::DEFAULT_STALE_DAYS)
}

/// `now` in milliseconds since the epoch. Without the `std-clock`
/// feature the core reads no clock: a caller that gives no `now` gets the
/// epoch, so no citation is ever stale by a clock nobody supplied.
fn now_ms(now: Option<SystemTime>) -> i64 {
    #[cfg(feature = "std-clock")]
    let now = now.unwrap_or_else(SystemTime::now);
    #[cfg(not(feature = "std-clock"))]
    let now = now.unwrap_or(SystemTime::UNIX_EPOCH);
    match now.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// A rule's finding; the severity comes from the rule table.
pub(crate) fn rule_diagnostic(
    code: &'static str,
    message: String,
    line: Option<u32>,
    node_id: Option<&str>,
) -> Diagnostic {
    let severity = severity_of(code).unwrap_or(Severity::Warning);
    let mut d = Diagnostic::new(severity, code, message).with_node(node_id);
    d.pos = line.map(|line| Pos { line, column: 1 });
    d
}

/// Validates a parsed document. Parse issues come first, as errors.
pub fn validate(doc: &Document, opts: &Options) -> Vec<Diagnostic> {
    validate_report(doc, opts).into_diagnostics(opts)
}

/// A validation result before `--ignore-rule` is applied, kept so that an
/// edited tree can be re-validated from it ([`revalidate`]). The default
/// is the empty result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Validation {
    /// Parse issues, in parser order.
    issues: Vec<Diagnostic>,
    /// Rule findings in output order: by line, then rule order, then
    /// emission order.
    rules: Vec<Diagnostic>,
}

impl Validation {
    /// The diagnostics [`validate`] returns: parse issues, then rule
    /// findings, with `opts.ignore_rules` applied.
    pub fn diagnostics(&self, opts: &Options) -> Vec<Diagnostic> {
        self.clone().into_diagnostics(opts)
    }

    /// [`Validation::diagnostics`], consuming the report.
    pub fn into_diagnostics(self, opts: &Options) -> Vec<Diagnostic> {
        let mut all = self.issues;
        all.extend(self.rules);
        let mut all = apply_ignore_rules(all, &opts.ignore_rules);
        if opts.strict {
            for d in &mut all {
                if d.severity == Severity::Warning {
                    d.severity = Severity::Error;
                }
            }
        }
        all
    }

    /// The severity counts of [`Validation::diagnostics`], without building
    /// the list (a big document's report is hundreds of megabytes).
    pub fn counts(&self, opts: &Options) -> crate::diag::SeverityCounts {
        let ignored = |d: &&Diagnostic| opts.ignore_rules.contains(&d.code);
        let mut counts = crate::diag::SeverityCounts::of(
            self.issues
                .iter()
                .chain(&self.rules)
                .filter(|d| !ignored(d)),
        );
        // The notes on unknown ignore rules, as apply_ignore_rules adds them.
        if !opts.ignore_rules.is_empty() {
            let notes = apply_ignore_rules(Vec::new(), &opts.ignore_rules);
            for d in &notes {
                counts.add(d.severity);
            }
        }
        if opts.strict {
            counts.error += std::mem::take(&mut counts.warning);
        }
        counts
    }
}

/// [`validate`], keeping the result's parts for [`revalidate`].
pub fn validate_report(doc: &Document, opts: &Options) -> Validation {
    let issues: Vec<Diagnostic> = doc
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

    let mut cx = Ctx::new(doc, opts);
    // Sizing the id map up front avoids repeated rehashing on big documents;
    // one id per five lines is typical of dense real documents (a rehash
    // moves every entry into fresh memory, which costs more than a little
    // unused capacity).
    let ids_capacity = (doc.end_line as usize / 5).min(1 << 20);
    integrity::check_profiles_declared(&mut cx);
    cx.ids.reserve(ids_capacity);
    walk(&mut cx, &doc.children, Scope::ROOT);
    integrity::check_references(&mut cx);
    blocks::check_claims(&mut cx);
    blocks::check_plots(&mut cx);
    computed::check_computed(&mut cx);

    let mut rules = std::mem::take(&mut cx.out);
    sort_rules(&mut rules);
    Validation { issues, rules }
}

/// Output order of rule findings. Stable: equal keys keep emission order
/// (document order within a rule).
fn sort_rules(rules: &mut [Diagnostic]) {
    rules.sort_by_key(|d| (d.pos.map_or(u32::MAX, |p| p.line), rule_index(&d.code)));
}

/// The validation of `doc`, a tree spliced from the one `pre` validated
/// (`replaced` says how), without walking the whole tree again: `None`
/// when the shortcut cannot prove its result equal to
/// [`validate_report`]'s, and the caller validates in full.
///
/// The shortcut holds when the edit kept the line count, the replaced
/// nodes sit in sections (not in a directive's body), and they and their
/// replacements give the whole-document rules the same
/// input: the same ids and aliases on the same lines, the same references,
/// claims (id, `noverify`, line) and evidence targets, and identical
/// plots, datasets, controls' ids and computed blocks. Then every finding
/// of those rules is unchanged, and only the per-block findings of the
/// replaced nodes change: they are removed and the new nodes' added.
/// Debug builds check every result against a full validation.
pub fn revalidate(
    pre: &Validation,
    doc: &Document,
    replaced: &crate::doc::reparse::Replaced,
    opts: &Options,
) -> Option<Validation> {
    let delta = revalidate_delta(pre, doc, replaced, opts)?;
    Some(pre.clone().apply(&delta, doc, opts))
}

/// What one spliced change did to a report: the rule findings it removed
/// and the ones it added (before `--ignore-rule`). Keeping only this, not a
/// second report, is what lets a patch on a document with millions of
/// diagnostics hold one report at a time.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Delta {
    /// Findings of the replaced nodes, gone from the report.
    pub gone: Vec<Diagnostic>,
    /// Findings of the new nodes.
    pub added: Vec<Diagnostic>,
}

/// The [`Delta`] behind [`revalidate`], under the same conditions.
pub fn revalidate_delta(
    pre: &Validation,
    doc: &Document,
    replaced: &crate::doc::reparse::Replaced,
    opts: &Options,
) -> Option<Delta> {
    if replaced.delta != 0 {
        return None;
    }
    let new_nodes = replaced.container(doc)?.get(replaced.run.clone())?;
    let scope = section_scope_at(doc, &replaced.path)?;
    let (old, new) = (
        Ctx::walked(doc, opts, &replaced.old_nodes, scope),
        Ctx::walked(doc, opts, new_nodes, scope),
    );
    if Footprint::of(&old, &replaced.old_nodes) != Footprint::of(&new, new_nodes) {
        return None;
    }
    // `duplicate-id` depends on ids outside the nodes; equal footprints
    // keep it as it was.
    let local = |cx: Ctx<'_>| -> Vec<Diagnostic> {
        cx.out
            .into_iter()
            .filter(|d| d.code != "duplicate-id")
            .collect()
    };
    let delta = Delta {
        gone: local(old),
        added: local(new),
    };
    // Every finding that goes must be in the report (otherwise the walk
    // and the report disagree, and only a full validation is safe).
    let mut left = pre.rules.iter().collect::<Vec<_>>();
    for gone in &delta.gone {
        let at = left.iter().position(|d| *d == gone)?;
        left.swap_remove(at);
    }
    Some(delta)
}

impl Validation {
    /// The report after a change whose [`Delta`] this is, consuming the old
    /// one. Debug builds check it against a full validation of `doc`.
    pub fn apply(mut self, delta: &Delta, doc: &Document, opts: &Options) -> Validation {
        for gone in &delta.gone {
            if let Some(at) = self.rules.iter().position(|d| d == gone) {
                self.rules.remove(at);
            }
        }
        self.rules.extend(delta.added.iter().cloned());
        sort_rules(&mut self.rules);
        debug_assert_eq!(
            self,
            validate_report(doc, opts),
            "revalidate differs from a full validation"
        );
        self
    }
}

/// The validation of `doc`, a tree whose frontmatter alone was read again
/// from the one `pre` validated (`replaced` says how), without walking the
/// body: `None` when the shortcut cannot prove its result equal to
/// [`validate_report`]'s.
///
/// The rules read the frontmatter only through the declared profiles and
/// the citation window (`Ctx::new`), and both trees are Tier 1 (the splice
/// needs it), so when the edit kept the line count and both read the same
/// the report is `pre`'s. Debug builds check it against a full validation.
pub fn revalidate_frontmatter(
    pre: &Validation,
    doc: &Document,
    replaced: &crate::doc::reparse::FrontmatterReplaced,
    opts: &Options,
) -> Option<Validation> {
    let old = &replaced.old_meta;
    let same = replaced.delta == 0
        && doc.issues.is_empty()
        && pre.issues.is_empty()
        && profiles::Declared::read(old, opts.profile.as_deref()).names
            == profiles::Declared::read(&doc.meta, opts.profile.as_deref()).names
        && stale_days(old, opts).to_bits() == stale_days(&doc.meta, opts).to_bits();
    if !same {
        return None;
    }
    debug_assert_eq!(
        *pre,
        validate_report(doc, opts),
        "revalidate_frontmatter differs from a full validation"
    );
    Some(pre.clone())
}

/// [`revalidate`] or [`revalidate_frontmatter`], as the re-parse went.
pub fn revalidate_reparsed(
    pre: &Validation,
    doc: &Document,
    reparsed: &crate::doc::reparse::Reparsed,
    opts: &Options,
) -> Option<Validation> {
    match reparsed {
        crate::doc::reparse::Reparsed::Body(r) => revalidate(pre, doc, r, opts),
        crate::doc::reparse::Reparsed::Frontmatter(r) => revalidate_frontmatter(pre, doc, r, opts),
    }
}

/// What the whole-document rules read from some nodes (see [`revalidate`]).
#[derive(PartialEq)]
struct Footprint<'d> {
    identities: Vec<(Option<&'d str>, &'d [crate::doc::Text], crate::doc::Span)>,
    refs: Vec<PendingRef<'d>>,
    claims: Vec<(Option<&'d str>, bool, u32)>,
    evidence_targets: Vec<&'d str>,
    plots: Vec<&'d Node>,
    datasets: Vec<&'d Node>,
    controls: Vec<&'d str>,
    computed: Vec<&'d Node>,
}

impl<'a> Footprint<'a> {
    fn of<'d: 'a>(cx: &'a Ctx<'d>, nodes: &'a [Node]) -> Footprint<'a> {
        let all = || crate::doc::ast::walk_nodes(nodes);
        let mut evidence_targets: Vec<&str> = cx.evidence_targets.iter().copied().collect();
        evidence_targets.sort_unstable();
        let mut controls: Vec<&str> = cx.controls.keys().copied().collect();
        controls.sort_unstable();
        Footprint {
            identities: all()
                .map(|n| (n.id.as_deref(), &*n.aliases, n.span))
                .collect(),
            // Borrowing, not moving: the walk context stays intact.
            refs: cx
                .refs
                .iter()
                .map(|r| PendingRef {
                    target: std::borrow::Cow::Borrowed(r.target.as_ref()),
                    line: r.line,
                    node_id: r.node_id,
                    attr: r.attr,
                })
                .collect(),
            claims: cx
                .claims
                .iter()
                .map(|n| (n.id.as_deref(), noverify(n), n.span.start))
                .collect(),
            evidence_targets,
            plots: cx.plots.clone(),
            datasets: all().filter(|n| n.is_directive("dataset")).collect(),
            controls,
            computed: cx.computed_nodes.clone(),
        }
    }
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

impl Scope<'_> {
    /// The scope of the document's top-level nodes.
    const ROOT: Scope<'static> = Scope {
        owner_id: None,
        quiet: false,
    };
}

/// The scope a section's or directive's children are walked in.
fn child_scope<'d>(node: &'d Node, scope: Scope<'d>) -> Scope<'d> {
    let owner_id = node.id.as_deref().or(scope.owner_id);
    match &node.kind {
        // `noverify` holds for a directive's own subtree, not beyond it.
        NodeKind::Directive { .. } => Scope {
            owner_id,
            quiet: noverify(node),
        },
        _ => Scope {
            owner_id,
            quiet: scope.quiet,
        },
    }
}

/// The scope the children of the container at `path` are walked in, when
/// every container on the path is a section: a section's own rules never
/// read its children, while a directive's may read its body (datasets,
/// computed blocks, Plotly specs, ...), so an edit inside a directive's
/// body is not confined to the edited nodes.
fn section_scope_at<'d>(doc: &'d Document, path: &[usize]) -> Option<Scope<'d>> {
    let (mut kids, mut scope) = (doc.children.as_slice(), Scope::ROOT);
    for &at in path {
        let node = kids.get(at)?;
        if !matches!(node.kind, NodeKind::Section { .. }) {
            return None;
        }
        scope = child_scope(node, scope);
        kids = node.children();
    }
    Some(scope)
}

/// The single pre-order walk over `nodes` (in `scope`) and everything
/// below them: ids, content references, per-block rules.
fn walk<'d>(cx: &mut Ctx<'d>, nodes: &'d [Node], scope: Scope<'d>) {
    let mut stack: Vec<(std::slice::Iter<'d, Node>, Scope<'d>)> = vec![(nodes.iter(), scope)];
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
                    stack.push((children.iter(), child_scope(node, scope)));
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
                let inner = child_scope(node, scope);
                blocks::check_directive(cx, node, inner.quiet);
                if !children.is_empty() {
                    stack.push((children.iter(), inner));
                }
            }
        }
    }
}

/// `"id"` for messages, or `(no id)`.
pub(crate) fn label(node: &Node) -> String {
    match node.id.as_deref() {
        Some(id) => format!("\"{id}\""),
        None => format!("(no id, line {})", node.span.start),
    }
}

#[cfg(test)]
mod tests;
