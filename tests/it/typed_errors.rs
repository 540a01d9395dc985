//! Library errors are typed: no function in `crates/*/src` returns
//! `Result<_, String>`, so a caller can match on what went wrong and the
//! binary alone words it.

use std::path::PathBuf;

use crate::architecture::rust_files;

/// The text with `//` comments and the insides of one-line string
/// literals blanked, line breaks kept.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let mut in_str = false;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if in_str {
                if c == '\\' {
                    i += 1;
                } else if c == '"' {
                    in_str = false;
                }
                out.push(' ');
            } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
                // A character literal such as '"'.
                out.push_str("' '");
                i += 2;
            } else if c == '"' {
                in_str = true;
                out.push(' ');
            } else if c == '/' && chars.get(i + 1) == Some(&'/') {
                break;
            } else {
                out.push(c);
            }
            i += 1;
        }
        out.push('\n');
    }
    out
}

/// The 1-based lines of `Result<…, String>` in `text` (the error argument
/// read at the top level of the brackets, so `Result<Vec<(A, String)>, E>`
/// does not count and a type split over lines does).
fn string_results(text: &str) -> Vec<usize> {
    let code = without_comments(text);
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("Result<") {
        let start = from + at;
        from = start + "Result<".len();
        // `OpResult<` and the like are other types.
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        // A trailing comma leaves an empty last argument: the one before counts.
        let (mut depth, mut last_arg, mut prev_arg, mut end) = (1usize, from, from, None);
        for (i, &b) in bytes.iter().enumerate().skip(from) {
            match b {
                b'<' | b'(' | b'[' => depth += 1,
                b'>' if i > 0 && bytes[i - 1] == b'-' => {}
                b'>' | b')' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                b',' if depth == 1 => (prev_arg, last_arg) = (last_arg, i + 1),
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let error = match code[last_arg..end].trim() {
            "" => code[prev_arg..last_arg - 1].trim(),
            arg => arg,
        };
        if last_arg > from && error == "String" {
            found.push(code[..start].matches('\n').count() + 1);
        }
    }
    found
}

#[test]
fn no_library_function_returns_a_string_error() {
    let mut files = Vec::new();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        rust_files(&e.unwrap().path().join("src"), &mut files);
    }
    assert!(files.len() > 50, "crates' sources not found");
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let shown = f.strip_prefix(&root).unwrap_or(f).display().to_string();
        bad.extend(string_results(&text).iter().map(|n| format!("{shown}:{n}")));
    }
    assert!(
        bad.is_empty(),
        "library code uses `Result<_, String>` (return a `thiserror` enum carrying the data, and word it in the binary):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_string_error_check_sees_a_violation() {
    let planted = "fn a() -> Result<(), String> {}\n\
                   fn b(\n    x: u8,\n) -> Result<\n    HashMap<String, String>,\n    String,\n> {}\n\
                   type T = HashMap<usize, Result<(), String>>;\n\
                   fn c() -> std::result::Result<Vec<u8>, String> {}\n\
                   fn d(f: &dyn Fn() -> Result<u8, String>) {}\n";
    assert_eq!(string_results(planted), vec![1, 4, 8, 9, 10]);
    let fine = "fn a() -> Result<(), Error> {}\n\
                fn b() -> Result<HashMap<String, String>, E> {}\n\
                fn c() -> OpResult<String> {}\n\
                fn d() -> Result<String, io::Error> {}\n\
                fn e() -> Result<Vec<(u8, String)>, E> {}\n\
                // fn f() -> Result<(), String>\n\
                fn g() -> &'static str { \"// Result<(), String>\" }\n";
    assert_eq!(string_results(fine), Vec::<usize>::new());
}
