//! The VS Code extension (`editors/vscode`): `check.sh` runs its grammar
//! fixtures through `vscode-tmgrammar-test` and its client's unit tests,
//! then packages it with `vsce package`; here the package must hold what
//! VS Code loads. Without node and npm the test says `SKIP`, except under
//! `CI`, where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{text, NOMA};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The target directory this build uses (`…/target` above `debug/noma`),
/// where `check.sh` keeps its npm tools between runs.
fn target_dir() -> PathBuf {
    Path::new(NOMA)
        .parent()
        .and_then(Path::parent)
        .expect("the binary sits in <target>/<profile>/")
        .to_path_buf()
}

fn has(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_grammar_fixtures_pass_and_the_extension_packages() {
    if !(has("node") && has("npm")) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must provide node and npm (editors/vscode/check.sh)"
        );
        println!("SKIP the_grammar_fixtures_pass_and_the_extension_packages: no node or npm");
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let vsix = out_dir.path().join("noma.vsix");
    let o = Command::new(root().join("editors/vscode/check.sh"))
        .arg(&vsix)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap();
    let said = text(&o);
    assert!(o.status.success(), "{said}");
    // Every fixture ran, and each passed.
    let fixtures: Vec<_> = std::fs::read_dir(root().join("editors/vscode/test"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".test.noma"))
        .collect();
    assert!(fixtures.len() >= 6, "{fixtures:?}");
    for f in &fixtures {
        assert!(
            said.contains(&format!("✓ test/{f} run successfuly")),
            "{f} did not pass:\n{said}"
        );
    }
    assert!(!said.contains('✖'), "{said}");
    // A zip stores its entry names uncompressed: VS Code needs these.
    let bytes = std::fs::read(&vsix).unwrap();
    let holds = |name: &str| bytes.windows(name.len()).any(|w| w == name.as_bytes());
    for name in [
        "extension/package.json",
        "extension/extension.js",
        "extension/server.js",
        "extension/language-configuration.json",
        "extension/syntaxes/noma.tmLanguage.json",
        "extension/node_modules/vscode-languageclient/package.json",
        "extension/LICENSE-MIT",
    ] {
        assert!(holds(name), "{} lacks {name}", vsix.display());
    }
    for name in [
        "extension/test/",
        "extension/check.sh",
        "node_modules/@vscode/vsce",
    ] {
        assert!(!holds(name), "{} holds {name}", vsix.display());
    }
    the_grammar_reads_documents_as_the_parser_does();
}

/// Where the grammar and noma's parser see structure: the lines that open
/// and close directives, start headings and open code fences.
#[derive(Debug, PartialEq, Default)]
struct Structure {
    opens: Vec<u64>,
    closes: Vec<u64>,
    headings: Vec<u64>,
    fences: Vec<u64>,
}

fn parsed_structure(text: &str) -> Structure {
    use noma_core::doc::NodeKind;
    let doc = noma_core::doc::parse(text);
    let mut s = Structure::default();
    for node in doc.walk() {
        let (start, end) = (u64::from(node.span.start), u64::from(node.span.end));
        match &node.kind {
            NodeKind::Directive { closed, .. } => {
                s.opens.push(start);
                if *closed {
                    s.closes.push(end);
                }
            }
            NodeKind::Section { .. } => s.headings.push(start),
            NodeKind::Code { .. } => s.fences.push(start),
            _ => {}
        }
    }
    for v in [&mut s.opens, &mut s.closes, &mut s.headings, &mut s.fences] {
        v.sort_unstable();
    }
    s
}

fn noma_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            noma_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "noma") {
            out.push(path);
        }
    }
}

/// The grammar (run by `test/structure.js` in the copy `check.sh` made)
/// against the parser, on this repository's documents and conformance
/// cases and, where they are, the reference's examples and specification.
fn the_grammar_reads_documents_as_the_parser_does() {
    let mut files = Vec::new();
    noma_files(&root().join(".noma"), &mut files);
    noma_files(&root().join("conformance/valid"), &mut files);
    noma_files(&root().join("conformance/patch"), &mut files);
    if let Some(reference) =
        crate::common::shared_reference("the_grammar_reads_documents_as_the_parser_does")
    {
        noma_files(&reference.join("noma/examples"), &mut files);
        noma_files(&reference.join("noma/docs"), &mut files);
    }
    let o = Command::new("node")
        .arg(target_dir().join("tools/vscode/test/structure.js"))
        .args(&files)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let mut differ = Vec::new();
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let list = |k: &str| -> Vec<u64> {
            v[k].as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_u64().unwrap())
                .collect()
        };
        let grammar = Structure {
            opens: list("opens"),
            closes: list("closes"),
            headings: list("headings"),
            fences: list("fences"),
        };
        let file = v["file"].as_str().unwrap();
        let parsed = parsed_structure(&std::fs::read_to_string(file).unwrap());
        if grammar != parsed {
            differ.push(format!(
                "{file}:\n  grammar {grammar:?}\n  parser  {parsed:?}"
            ));
        }
    }
    assert_eq!(out.lines().count(), files.len(), "{out}");
    assert!(files.len() > 60, "{}", files.len());
    assert!(
        differ.is_empty(),
        "{} of {} documents differ:\n{}",
        differ.len(),
        files.len(),
        differ.join("\n")
    );
}

/// The manifest and the grammar agree on the language, and the setting
/// the docs name exists with the default that starts `noma lsp`.
#[test]
fn the_manifest_contributes_the_language_grammar_and_settings() {
    let read = |p: &str| -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(root().join("editors/vscode").join(p)).unwrap(),
        )
        .unwrap()
    };
    let pkg = read("package.json");
    let c = &pkg["contributes"];
    assert_eq!(c["languages"][0]["id"], "noma");
    assert_eq!(c["languages"][0]["extensions"][0], ".noma");
    assert_eq!(pkg["activationEvents"][0], "onLanguage:noma");
    let grammar = read(c["grammars"][0]["path"].as_str().unwrap());
    assert_eq!(grammar["scopeName"], c["grammars"][0]["scopeName"]);
    let props = &c["configuration"]["properties"];
    assert_eq!(props["noma.lsp.path"]["default"], "noma");
    assert_eq!(
        props["noma.lsp.args"]["default"],
        serde_json::json!(["lsp"])
    );
    // The language configuration is JSON VS Code can read, and folds directives.
    let conf = read("language-configuration.json");
    let start = regex::Regex::new(conf["folding"]["markers"]["start"].as_str().unwrap()).unwrap();
    let end = regex::Regex::new(conf["folding"]["markers"]["end"].as_str().unwrap()).unwrap();
    assert!(
        start.is_match("::claim{id=\"a\"}")
            && start.is_match(":::card")
            && start.is_match("::pack::x")
    );
    assert!(!start.is_match("::") && !start.is_match("::name{a} trailing"));
    assert!(end.is_match("::") && end.is_match(":::  ") && !end.is_match("::x"));
}

/// The reference implementation's extension, given `"noma.lsp.path":
/// "noma lsp"`, splits it on whitespace and starts `noma` with `lsp` over
/// stdio; its session (workspace folders, documents of its `noma`
/// language, the `**/*.noma` watcher's notifications) gets the server's
/// features and diagnostics. VS Code itself is not run: these are the
/// messages its client sends.
#[test]
fn noma_lsp_serves_the_reference_extensions_session() {
    use crate::lsp_client::Lsp;
    use serde_json::json;

    let dir = tempfile::tempdir().unwrap();
    let root = format!("file://{}", dir.path().display());
    let uri = format!("{root}/d.noma");
    let text = "# T\n\nSee [[nowhere]].\n";
    std::fs::write(dir.path().join("d.noma"), text).unwrap();
    let mut lsp = Lsp::start(dir.path());
    let init = lsp.request(
        "initialize",
        json!({
            "processId": null,
            "clientInfo": {"name": "Visual Studio Code", "version": "1.95.0"},
            "rootUri": root,
            "workspaceFolders": [{"uri": root, "name": "w"}],
            "capabilities": {
                "workspace": {
                    "workspaceFolders": true,
                    "didChangeWatchedFiles": {"dynamicRegistration": true},
                    "workspaceEdit": {"documentChanges": true}
                },
                "textDocument": {
                    "synchronization": {"dynamicRegistration": true, "didSave": true},
                    "publishDiagnostics": {"relatedInformation": true}
                }
            },
            "trace": "off"
        }),
    );
    let caps = &init["result"]["capabilities"];
    for feature in [
        "hoverProvider",
        "definitionProvider",
        "referencesProvider",
        "renameProvider",
        "documentSymbolProvider",
        "workspaceSymbolProvider",
        "codeActionProvider",
        "completionProvider",
    ] {
        assert!(
            caps.get(feature).is_some_and(|v| v != &json!(false)),
            "{feature}: {init}"
        );
    }
    lsp.notify("initialized", json!({}));
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "noma", "version": 1, "text": text}}),
    );
    lsp.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri, "type": 2}, {"uri": format!("{root}/new.noma"), "type": 1}]}),
    );
    let symbols = lsp.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(symbols["result"][0]["name"], "T", "{symbols}");
    let diags = lsp.last_diagnostics(&uri).expect("diagnostics published");
    assert_eq!(diags[0]["code"], "broken-reference", "{diags}");
    let (status, stderr) = lsp.finish();
    assert!(status.success(), "{status}: {stderr}");
}
