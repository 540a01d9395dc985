//! The reviewer's summary of a branch (`noma reconcile --format markdown`):
//! per document, the blocks changed since the merge base (as `noma changed`
//! lists them), which actors changed them and why (gathered by
//! [`noma_git::merge::summary`]), and the verdict of each reconcile check.
//! Sized for a PR comment at any number of documents ([`BUDGET`]): a long
//! document section folds into `<details>`, and what does not fit is counted.

use std::fmt::Write as _;

use noma_git::merge::reconcile::{DocReport, Finding};
use noma_git::merge::summary::{Attribution, DocSummary};

/// Rows (blocks plus findings) a document shows before its section folds.
pub const OPEN_ROWS: usize = 8;
/// Characters of one reason shown before it is cut.
const REASON_CHARS: usize = 100;

fn mark(ok: bool) -> &'static str {
    if ok {
        "✅"
    } else {
        "❌"
    }
}

/// `s` on one line, cut at `max` chars (with `…` when it was longer),
/// its control characters and bidi overrides escaped.
fn cut(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    // Any other control or bidi override would reorder or hide the text
    // in the browser and in a terminal alike.
    let mut one = noma_core::display::escape(&flat).into_owned();
    if let Some((at, _)) = one.char_indices().nth(max) {
        one.truncate(at);
        one.push('…');
    }
    one
}

/// Text safe inside a table cell: one line, no `|`, cut at `max` chars.
fn cell(s: &str, max: usize) -> String {
    cut(s, max).replace('|', "\\|").replace('<', "&lt;")
}

/// A code span holding `s` (one line, cut at `max` chars): fenced with one
/// backtick more than the longest run inside it; in a table cell a `|`
/// is escaped (GitHub reads `\|` as `|` there, even in code).
fn code(s: &str, max: usize, in_table: bool) -> String {
    let mut one = cut(&s.split_whitespace().collect::<Vec<_>>().join(" "), max);
    if in_table {
        one = one.replace('|', "\\|");
    }
    let run = one
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or_default();
    let fence = "`".repeat(run + 1);
    let pad = if one.starts_with('`') || one.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{one}{pad}{fence}")
}

/// The summary as GitHub-flavoured Markdown, at most [`BUDGET`] bytes
/// whatever the number of documents: the verdict and the first errors,
/// then the documents with errors, with warnings, and the rest, in that
/// order. When everything does not fit, the sections of passing documents
/// fold into `<details>`, and whatever still does not fit is counted.
pub fn markdown(reports: &[DocReport], docs: &[DocSummary]) -> String {
    let mut order: Vec<usize> = (0..reports.len()).collect();
    order.sort_by_key(|&i| rank(&reports[i]));
    let open = render(reports, docs, &order, false);
    if open.1 {
        return open.0;
    }
    render(reports, docs, &order, true).0
}

/// The summary and whether everything fitted; `fold_passing` folds the
/// sections of documents without findings of note.
fn render(
    reports: &[DocReport],
    docs: &[DocSummary],
    order: &[usize],
    fold_passing: bool,
) -> (String, bool) {
    let bad = reports.iter().filter(|r| !r.ok()).count();
    let mut md = Budget::new(BUDGET - TAIL_RESERVE);
    md.text.push_str(&format!(
        "## noma: {} document(s) changed, {}\n\n",
        reports.len(),
        if bad == 0 {
            "all checks pass".to_string()
        } else {
            format!("{bad} with errors")
        }
    ));
    if reports.is_empty() {
        md.text
            .push_str("No `.noma` document changed on this branch.\n");
        return (md.text, true);
    }
    top_findings(&mut md, reports, order);
    let removed = removed_list(&mut md, reports, order);
    let unlisted = table(&mut md, reports, docs, order);
    let mut unshown = [0; 3];
    for &i in order {
        let (r, d) = (&reports[i], &docs[i]);
        let fold = fold_passing && rank(r) == 2;
        if !md.push(&doc_section(r, d, fold)) {
            unshown[rank(r)] += 1;
        }
    }
    let complete = removed == 0 && unlisted == [0; 3] && unshown == [0; 3];
    if unshown != [0; 3] {
        md.text.push_str(&format!(
            "\n_Not shown for lack of room: the sections of {}. `noma reconcile` lists every document._\n",
            counted(unshown)
        ));
    }
    (md.text, complete)
}

/// The most the markdown summary writes, in bytes. A GitHub PR comment
/// holds at most 65,536 characters and a job summary at most 1 MiB
/// (GitHub drops a larger upload); a character is at least one byte, so
/// a summary of this many bytes fits both, with room for what a workflow
/// writes around it.
pub const BUDGET: usize = 60_000;
/// Bytes kept for the closing line that counts what did not fit.
const TAIL_RESERVE: usize = 1_000;
/// The documents table stops growing here (bytes), so the sections of
/// documents with errors still fit after a table of thousands of rows.
const TABLE_BUDGET: usize = 20_000;
/// One document's section at most (bytes); the rest of its rows is counted.
const SECTION_BUDGET: usize = 12_000;
/// Errors listed under the verdict, before any table.
pub const TOP_FINDINGS: usize = 10;
/// Characters of a conflict's value shown.
const VALUE_CHARS: usize = 80;

/// Markdown that grows only by whole pieces while it stays under a limit.
struct Budget {
    text: String,
    limit: usize,
}

impl Budget {
    fn new(limit: usize) -> Budget {
        Budget {
            text: String::new(),
            limit,
        }
    }

    /// Appends `piece` when it fits; whether it did.
    fn push(&mut self, piece: &str) -> bool {
        let fits = self.text.len() + piece.len() <= self.limit;
        if fits {
            self.text.push_str(piece);
        }
        fits
    }
}

/// 0 for a document with errors, 1 with warnings, 2 otherwise.
fn rank(r: &DocReport) -> usize {
    if !r.ok() {
        0
    } else if r.findings.iter().any(|f| f.level == "warning") {
        1
    } else {
        2
    }
}

/// `3 documents with errors, 812 passing documents`.
fn counted(n: [usize; 3]) -> String {
    let words = ["with errors", "with warnings", "passing"];
    let parts: Vec<String> = n
        .iter()
        .zip(words)
        .filter(|(n, _)| **n > 0)
        .map(|(n, w)| match w {
            "passing" => format!("{n} passing document(s)"),
            _ => format!("{n} document(s) {w}"),
        })
        .collect();
    parts.join(", ")
}

/// The first [`TOP_FINDINGS`] errors, documents in `order`.
fn top_findings(md: &mut Budget, reports: &[DocReport], order: &[usize]) {
    let errors: Vec<&Finding> = order
        .iter()
        .flat_map(|&i| &reports[i].findings)
        .filter(|f| f.level == "error")
        .collect();
    if errors.is_empty() {
        return;
    }
    let mut list = String::from("**Errors:**\n\n");
    for f in errors.iter().take(TOP_FINDINGS) {
        let _ = writeln!(list, "- {}", finding_line(f, true));
    }
    if errors.len() > TOP_FINDINGS {
        let _ = writeln!(list, "- …and {} more below", errors.len() - TOP_FINDINGS);
    }
    list.push('\n');
    md.push(&list);
}

/// One finding as a list item's text.
fn finding_line(f: &Finding, with_values: bool) -> String {
    let at = f.line.map(|l| format!(":{l}")).unwrap_or_default();
    let mut line = format!(
        "**{}** `{}` {}{at}: {}",
        f.level,
        f.code,
        cell(&f.path, 200),
        cell(&f.message, 300)
    );
    if let (Some(o), Some(t), true) = (&f.ours, &f.theirs, with_values) {
        let _ = write!(
            line,
            "; ours: {}, theirs: {}",
            code(o, VALUE_CHARS, false),
            code(t, VALUE_CHARS, false)
        );
    }
    line
}

/// Every document the branch removed, recorded or not, before the table
/// (a removal is the one change a block table cannot show); how many did
/// not fit.
fn removed_list(md: &mut Budget, reports: &[DocReport], order: &[usize]) -> usize {
    let removed: Vec<String> = order
        .iter()
        .filter_map(|&i| {
            let r = &reports[i];
            let how = match r.removed? {
                "recorded" => "recorded with `noma rm`",
                _ => "**no record says who removed it**",
            };
            Some(format!("- `{}`: {how}\n", cell(&r.path, 200)))
        })
        .collect();
    if removed.is_empty() || !md.push("Removed on this branch:\n\n") {
        return removed.len();
    }
    let shown = removed.iter().take_while(|l| md.push(l)).count();
    if shown < removed.len() {
        md.text
            .push_str(&format!("- …and {} more\n", removed.len() - shown));
    }
    md.text.push('\n');
    removed.len() - shown
}

/// No error about the records' signatures, approvals or sidecar: the
/// checks the other columns do not show.
fn provenance_holds(r: &DocReport) -> bool {
    use noma_provenance::verify::codes;
    let provenance = [
        codes::UNSIGNED,
        codes::INVALID,
        codes::NOT_ALLOWED,
        codes::APPROVAL_MISSING,
        codes::APPROVAL_INVALID,
        codes::MISMATCH,
        codes::UNBOUND,
    ];
    !r.findings.iter().any(|f| {
        f.level == "error"
            && (provenance.contains(&f.code.as_str()) || f.code.starts_with("sidecar-"))
    })
}

/// The documents table, in `order`, while it stays under [`TABLE_BUDGET`]
/// and the whole budget; per [`rank`], the documents left out.
fn table(
    md: &mut Budget,
    reports: &[DocReport],
    docs: &[DocSummary],
    order: &[usize],
) -> [usize; 3] {
    let mut rows = Budget::new(TABLE_BUDGET.min(md.limit.saturating_sub(md.text.len())));
    rows.push("| Document | Blocks | Valid | Append-only | Replays | Rebases | Provenance |\n");
    rows.push("| --- | ---: | :---: | :---: | :---: | :---: | :---: |\n");
    let mut left_out = [0; 3];
    for &i in order {
        let (r, d) = (&reports[i], &docs[i]);
        let row = format!(
            "| `{}`{} | {} | {} | {} | {} | {} | {} |\n",
            cell(&r.path, 200),
            match r.removed {
                Some("recorded") => " (removed)",
                Some(_) => " (**removed without a record**)",
                None => "",
            },
            d.blocks.len(),
            mark(r.valid),
            mark(r.append_only),
            mark(r.replays),
            mark(r.rebases),
            mark(provenance_holds(r))
        );
        if left_out != [0; 3] || !rows.push(&row) {
            left_out[rank(r)] += 1;
        }
    }
    md.text.push_str(&rows.text);
    if left_out != [0; 3] {
        md.text.push_str(&format!(
            "\n_…and {} more: {}._\n",
            left_out.iter().sum::<usize>(),
            counted(left_out)
        ));
    }
    left_out
}

fn doc_section(r: &DocReport, d: &DocSummary, fold: bool) -> String {
    let mut body = Budget::new(SECTION_BUDGET);
    let mut unlisted = block_rows(&mut body, r, d);
    let conflicts: Vec<&Finding> = r.findings.iter().filter(|f| f.ours.is_some()).collect();
    if !conflicts.is_empty() {
        body.text.push('\n');
        body.push("| Conflict on | Ours (this branch) | Theirs (base) |\n| --- | --- | --- |\n");
        for f in &conflicts {
            let row = format!(
                "| `{}` | {} | {} |\n",
                cell(f.block.as_deref().unwrap_or("?"), 120),
                code(f.ours.as_deref().unwrap_or_default(), VALUE_CHARS, true),
                code(f.theirs.as_deref().unwrap_or_default(), VALUE_CHARS, true)
            );
            unlisted += usize::from(!body.push(&row));
        }
    }
    if !r.findings.is_empty() && !body.text.is_empty() {
        // A list straight under a table would read as one more row.
        body.text.push('\n');
    }
    for f in &r.findings {
        unlisted += usize::from(!body.push(&format!("- {}\n", finding_line(f, false))));
    }
    if unlisted > 0 {
        let _ = writeln!(body.text, "\n_…and {unlisted} more row(s) not shown._");
    }
    let rows = d.blocks.len() + r.findings.len();
    let title = format!(
        "`{}`: {} block(s) changed, {} finding(s)",
        cell(&r.path, 200),
        d.blocks.len(),
        r.findings.len()
    );
    if fold || rows > OPEN_ROWS {
        format!(
            "\n<details><summary>{title}</summary>\n\n{}\n</details>\n",
            body.text
        )
    } else {
        format!("\n### {title}\n\n{}", body.text)
    }
}

/// The table of the blocks the branch changed; how many rows did not fit.
fn block_rows(body: &mut Budget, r: &DocReport, d: &DocSummary) -> usize {
    if d.blocks.is_empty() {
        return 0;
    }
    let unnamed = d.by_block.get("");
    let signed = !r.records.is_empty();
    body.push(if signed {
        "| Block | Change | By | Signed by | Approved by | Why |\n| --- | --- | --- | --- | --- | --- |\n"
    } else {
        "| Block | Change | By | Why |\n| --- | --- | --- | --- |\n"
    });
    let mut unlisted = 0;
    for b in &d.blocks {
        let a = d.by_block.get(&b.id).or(unnamed);
        let list = |f: fn(&Attribution) -> &Vec<String>| {
            a.map(f)
                .filter(|l| !l.is_empty())
                .map_or("—".to_string(), |l| cell(&l.join(", "), 200))
        };
        let by = list(|a| &a.actors);
        let by = if signed {
            format!(
                "{by} | {} | {}",
                list(|a| &a.signers),
                list(|a| &a.approvers)
            )
        } else {
            by
        };
        // Each reason is cut, then the cell as a whole: many reasons make
        // no wider row than three.
        let why = a
            .map(|a| {
                let reasons: Vec<String> = a.reasons.iter().map(|r| cut(r, REASON_CHARS)).collect();
                reasons.join("; ")
            })
            .filter(|w| !w.is_empty())
            .map_or("—".to_string(), |w| cell(&w, 3 * REASON_CHARS + 6));
        let row = format!(
            "| `{}` | {} | {by} | {why} |\n",
            cell(&b.id, 120),
            b.change.as_str()
        );
        // Rows stop at the first that does not fit: the table stays whole.
        if unlisted > 0 || !body.push(&row) {
            unlisted += 1;
        }
    }
    unlisted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_hold_backticks_and_pipes() {
        assert_eq!(code("a`b", 10, false), "``a`b``");
        assert_eq!(code("`x`", 10, false), "`` `x` ``");
        assert_eq!(code("a|b\nc", 10, true), "`a\\|b c`");
        assert_eq!(code("abcdef", 3, false), "`abc…`");
    }

    #[test]
    fn cells_stay_one_line_and_short() {
        assert_eq!(cell("a|b\nc", 10), "a\\|b c");
        assert_eq!(cell("abcdef", 3), "abc…");
    }
}
