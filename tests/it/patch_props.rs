//! Property: an op touching one block leaves every byte before the block's
//! first line and after its last line unchanged (mixed LF/CRLF documents).

use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
enum Block {
    Para(u8),
    Claim(u8),
    Heading(u8),
}

fn doc_strategy() -> impl Strategy<Value = (Vec<Block>, Vec<bool>)> {
    let block = prop_oneof![
        (0u8..50).prop_map(Block::Para),
        (0u8..50).prop_map(Block::Claim),
        (0u8..50).prop_map(Block::Heading),
    ];
    (
        prop::collection::vec(block, 1..8),
        prop::collection::vec(any::<bool>(), 64),
    )
}

/// Builds the document; returns it with the claim ids and their line spans.
fn build(blocks: &[Block], crlf: &[bool]) -> (String, Vec<(String, usize, usize)>) {
    let mut lines: Vec<String> = Vec::new();
    let mut claims = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        match b {
            Block::Para(n) => lines.push(format!("Para {n} [[c{k}]].")),
            Block::Heading(n) => lines.push(format!("# Title {n}")),
            Block::Claim(n) => {
                let id = format!("c{k}");
                let start = lines.len() + 1;
                lines.push(format!("::claim{{id=\"{id}\" n={n}}}"));
                lines.push(format!("Body {n}."));
                lines.push("::".into());
                claims.push((id, start, lines.len()));
            }
        }
        lines.push(String::new());
    }
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        out.push_str(l);
        out.push_str(if crlf.get(i % crlf.len()).copied().unwrap_or(false) {
            "\r\n"
        } else {
            "\n"
        });
    }
    (out, claims)
}

/// Byte offset where 1-based line `n` starts.
fn line_start(src: &str, n: usize) -> usize {
    let mut line = 1;
    for (i, b) in src.bytes().enumerate() {
        if line == n {
            return i;
        }
        if b == b'\n' {
            line += 1;
        }
    }
    src.len()
}

proptest! {
    #[test]
    fn bytes_outside_the_block_are_unchanged(
        (blocks, crlf) in doc_strategy(),
        pick in any::<prop::sample::Index>(),
        which in 0u8..4,
        text in "[a-zA-Z][a-zA-Z ]{0,11}",
    ) {
        let (src, claims) = build(&blocks, &crlf);
        prop_assume!(!claims.is_empty());
        let (id, start, end) = claims[pick.index(claims.len())].clone();
        let op = match which {
            0 => json!({"op": "update_attribute", "id": id, "key": "note", "value": text}),
            1 => json!({"op": "replace_body", "id": id, "content": text}),
            2 => json!({"op": "add_footnote", "id": "fn-new", "target": id, "content": text}),
            _ => json!({"op": "remove_attribute", "id": id, "key": "n"}),
        };
        let out = noma::patch::apply_one(&src, &op).expect("valid op applies");
        let head = line_start(&src, start);
        let tail = line_start(&src, end + 1);
        prop_assert_eq!(&out[..head], &src[..head]);
        prop_assert!(out.ends_with(&src[tail..]), "suffix changed:\n{:?}\n{:?}", src, out);
        // The result still parses with the block present.
        prop_assert!(noma::doc::parse(&out).find(&id).is_some());
    }
}
