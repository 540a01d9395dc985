//! docs/editors.md's error formats read `noma check`'s real output: the
//! Vim `errorformat` through `vim -es` (skipped with a `SKIP` line where
//! there is no vim, except under `CI`), the VS Code problem matcher's
//! pattern with the `regex` crate (its syntax is the JavaScript subset
//! both share).

use std::path::Path;

use crate::common::{text, Repo};

/// Two errors and two warnings, on lines 3, 5 and 9.
const BROKEN: &str =
    "# T\n\nSee [[nowhere]].\n\n::claim{id=\"a\"}\nx\n::\n\n::claim{id=\"a\"}\ny\n::\n";

/// What each format must read: (type letter, line, column, message start).
const WANT: [(&str, u32, u32, &str); 4] = [
    ("E", 3, 1, "[[nowhere]] points at no block"),
    ("W", 5, 1, "claim \"a\" has no ::evidence"),
    ("E", 9, 1, "duplicate block id \"a\""),
    ("W", 9, 1, "claim \"a\" has no ::evidence"),
];

fn editors_md() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/editors.md")).unwrap()
}

/// The fenced block of `lang` in the document that holds `marker`.
fn fenced(doc: &str, lang: &str, marker: &str) -> String {
    doc.split(&format!("```{lang}\n"))
        .skip(1)
        .map(|body| body[..body.find("```").unwrap()].to_string())
        .find(|body| body.contains(marker))
        .unwrap_or_else(|| panic!("no {lang} block with {marker}"))
}

/// `noma check`'s output for the broken document (exit 1).
fn check_output(r: &Repo) -> String {
    r.write("d.noma", BROKEN);
    let o = r.noma(&["check", "d.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn the_vim_errorformat_reads_every_finding() {
    let have_vim = std::process::Command::new("vim")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_vim {
        assert!(std::env::var_os("CI").is_none(), "CI must provide vim");
        println!("SKIP the_vim_errorformat_reads_every_finding: no vim");
        return;
    }
    let r = Repo::init();
    let out = check_output(&r);
    r.write("out.txt", &out);
    let efm = fenced(&editors_md(), "vim", "errorformat");
    let script = format!(
        "{}\ncgetfile out.txt\ncall writefile(map(getqflist(), {{_, v -> bufname(v.bufnr) . \"\\t\" . v.lnum . \"\\t\" . v.col . \"\\t\" . v.type . \"\\t\" . v.text}}), 'qf.txt')\nqa!\n",
        efm.trim()
    );
    r.write("efm.vim", &script);
    let o = r.cmd("vim", &["-u", "NONE", "-N", "-es", "-S", "efm.vim"]);
    assert!(o.status.success(), "{}", text(&o));
    let qf = r.read("qf.txt");
    let rows: Vec<Vec<&str>> = qf.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), WANT.len(), "{qf}");
    for (row, (kind, line, col, msg)) in rows.iter().zip(WANT) {
        assert_eq!(row[0], "d.noma", "{qf}");
        assert_eq!(row[1], line.to_string(), "{qf}");
        assert_eq!(row[2], col.to_string(), "{qf}");
        assert_eq!(row[3], kind, "{qf}");
        assert!(row[4].starts_with(msg), "{qf}");
    }
}

#[test]
fn the_vs_code_problem_matcher_reads_every_finding() {
    let r = Repo::init();
    let out = check_output(&r);
    let block = fenced(&editors_md(), "json", "problemMatcher");
    let v: serde_json::Value = serde_json::from_str(&format!("{{{block}}}")).unwrap();
    let pattern = &v["problemMatcher"]["pattern"];
    let re = regex::Regex::new(pattern["regexp"].as_str().unwrap()).unwrap();
    let group = |k: &str| pattern[k].as_u64().unwrap() as usize;
    let found: Vec<_> = out.lines().filter_map(|l| re.captures(l)).collect();
    assert_eq!(found.len(), WANT.len(), "{out}");
    for (c, (kind, line, col, msg)) in found.iter().zip(WANT) {
        assert!(c[group("severity")].starts_with(kind), "{out}");
        assert_eq!(&c[group("file")], "d.noma");
        assert_eq!(c[group("line")].parse::<u32>().unwrap(), line);
        assert_eq!(c[group("column")].parse::<u32>().unwrap(), col);
        assert!(c[group("message")].starts_with(msg), "{out}");
        assert!(!c[group("code")].is_empty());
    }
}

/// Waits (up to 20 s, woken by each message) for the diagnostics of the
/// two `.noma` buffers, then writes them and the clients' roots.
const NVIM_PROBE: &str = r#"
local function wait_diags()
  return vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 20)
end
local out = {}
local function dump()
  for _, d in ipairs(vim.diagnostic.get(0)) do
    table.insert(out, table.concat({ vim.fn.expand("%:."), d.lnum, d.col, tostring(d.code) }, "\t"))
  end
end
wait_diags()
dump()
vim.cmd("edit e.noma")
wait_diags()
dump()
for _, c in ipairs(vim.lsp.get_active_clients()) do
  table.insert(out, "client\t" .. c.name .. "\t" .. c.config.root_dir)
end
vim.fn.writefile(out, "nvim-out.txt")
vim.cmd("qa!")
"#;

#[test]
fn the_neovim_07_config_gets_diagnostics_from_noma_lsp() {
    let have_nvim = std::process::Command::new("nvim")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_nvim {
        assert!(std::env::var_os("CI").is_none(), "CI must provide nvim");
        println!("SKIP the_neovim_07_config_gets_diagnostics_from_noma_lsp: no nvim");
        return;
    }
    let r = Repo::init();
    r.write("sub/d.noma", "# T\n\nSee [[nowhere]].\n");
    r.write("e.noma", "# E\n\nAnd [[gone]].\n");
    r.write("init.lua", &fenced(&editors_md(), "lua", "start_client"));
    r.write("probe.lua", NVIM_PROBE);
    // `noma` on PATH is the binary under test, as the config names it.
    let bin_dir = Path::new(crate::common::NOMA).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let o = std::process::Command::new("nvim")
        .args([
            "--headless",
            "-n",
            "-i",
            "NONE",
            "-u",
            "init.lua",
            "sub/d.noma",
        ])
        .args(["-c", "luafile probe.lua"])
        .current_dir(r.path())
        .env("PATH", path)
        .env("HOME", r.home.path())
        .env("XDG_CONFIG_HOME", r.home.path().join("config"))
        .env("XDG_STATE_HOME", r.home.path().join("state"))
        .env("XDG_DATA_HOME", r.home.path().join("data"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let got = r.read("nvim-out.txt");
    let root = std::fs::canonicalize(r.path()).unwrap();
    let want = format!(
        "sub/d.noma\t2\t6\tbroken-reference\ne.noma\t2\t6\tbroken-reference\nclient\tnoma\t{}\n",
        root.display()
    );
    assert_eq!(got, want, "{}", text(&o));
}
