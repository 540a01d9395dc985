//! Synthetic documents for benchmarks and stress tests: realistic mixes of
//! headings, prose, lists, tables and directives, deterministic for a size.
//! Dev-only: the bench scripts get it through `examples/synth.rs`, never
//! through the shipped binary. noma-core's own tests check that it parses
//! cleanly (this crate does not depend on noma-core).

use std::fmt::Write;

/// A valid document with `sections` level-2 sections (~310 bytes each, so
/// 10,000 sections is ~3 MB). Every block kind the parser knows appears.
pub fn document(sections: usize) -> String {
    let mut out = String::with_capacity(sections * 320 + 64);
    out.push_str(
        "---\ntitle: Synthetic benchmark document\nprofile: research\n---\n\n# Synthetic\n\n",
    );
    for i in 0..sections {
        let _ = write!(
            out,
            "## Section {i}\n\n\
             Paragraph {i} explains the finding with **bold** text and a [[claim-{i}]] link.\n\
             It continues on a second line.\n\n\
             ::claim{{id=\"claim-{i}\" confidence=0.8}}\n\
             Claim number {i} holds.\n\
             ::\n\n\
             ::evidence{{id=\"ev-{i}\" for=\"claim-{i}\"}}\n\
             Measured on run {i}.\n\
             ::\n\n\
             - first point\n\
             - second point\n\n"
        );
        if i % 10 == 0 {
            let _ = write!(
                out,
                "| Metric | Value |\n| --- | ---: |\n| runs | {i} |\n\n"
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn is_deterministic_at_the_expected_size() {
        let src = super::document(100);
        assert_eq!(src, super::document(100));
        assert_eq!(src.matches("\n## Section ").count(), 100);
        let per_section = src.len() / 100;
        assert!((250..400).contains(&per_section), "{per_section}");
    }
}
