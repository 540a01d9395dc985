//! `noma man`: one roff man page per command (clap_mangen renders NAME to
//! SUBCOMMANDS from the same definitions as the parser), each followed by
//! its EXIT STATUS and EXAMPLES from `man_pages.txt`. Pages name each other
//! `noma-<sub>(1)`, so `--dir` writes every one of them.

use std::path::PathBuf;

use clap::CommandFactory;

use crate::report::output::{Exit, Output};

/// EXIT STATUS and EXAMPLES per page; the format is described at its top.
const EXTRA: &str = include_str!("man_pages.txt");

/// Arguments of `noma man`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Without DIR, prints one page to stdout (read it with `man -l -`). With --dir, \
writes noma.1 and one noma-<sub>.1 per subcommand (noma-hooks-install.1 for nested ones), the \
pages the SUBCOMMANDS sections refer to."
)]
pub struct Args {
    /// The command whose page to print, e.g. `check` or `hooks install`
    /// (default: the top page, `noma`).
    #[arg(value_name = "SUBCOMMAND", conflicts_with = "dir")]
    pub sub: Vec<String>,
    /// Write every page into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Runs `noma man`.
pub fn run(args: Args) -> Output {
    let pages = pages();
    let result = match &args.dir {
        Some(dir) => write_all(&pages, dir),
        None => {
            let want = std::iter::once("noma".to_string())
                .chain(args.sub.iter().cloned())
                .collect::<Vec<_>>()
                .join("-");
            match pages.iter().find(|p| p.stem == want) {
                // Rendered from the command definitions' strings: UTF-8.
                Some(p) => Ok(String::from_utf8_lossy(&p.roff).into_owned()),
                None => Err(format!(
                    "no page `{want}`; `noma --help` lists the subcommands"
                )),
            }
        }
    };
    match result {
        Ok(text) => {
            let mut c = Output::default();
            c.out_text(text);
            c
        }
        Err(e) => Output::error(format!("noma man: {e}"), Exit::NotRun),
    }
}

/// Writes every page into `dir`; what to print after.
fn write_all(pages: &[Page], dir: &std::path::Path) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for page in pages {
        let path = dir.join(format!("{}.1", page.stem));
        std::fs::write(&path, &page.roff).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(format!(
        "wrote {} man pages to {}\n",
        pages.len(),
        dir.display()
    ))
}

/// One man page.
struct Page {
    /// The file name without `.1`, as clap names the command
    /// (`noma-hooks-install`).
    stem: String,
    /// The page in roff.
    roff: Vec<u8>,
}

/// Every page: `noma`, then each visible subcommand
/// at every depth, as clap names them (`noma-hooks-install`).
fn pages() -> Vec<Page> {
    // Built once from the top so that each subcommand carries its display
    // name (`noma-check`) and its usage line (`noma check`).
    let mut top = super::Cli::command().disable_help_subcommand(true);
    top.build();
    let mut out = Vec::new();
    collect(&top, "noma", &mut out);
    out
}

fn collect(cmd: &clap::Command, key: &str, out: &mut Vec<Page>) {
    let stem = cmd.get_display_name().unwrap_or("noma").to_string();
    let mut page = Vec::new();
    // Rendering into memory cannot fail.
    let _ = clap_mangen::Man::new(cmd.clone())
        .source(concat!("noma ", env!("CARGO_PKG_VERSION")))
        .manual("noma")
        .render(&mut page);
    page.extend_from_slice(extra_sections(key).as_bytes());
    out.push(Page { stem, roff: page });
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let sub_key = match key {
            "noma" => sub.get_name().to_string(),
            parent => format!("{parent} {}", sub.get_name()),
        };
        collect(sub, &sub_key, out);
    }
}

/// The EXIT STATUS and EXAMPLES sections of page `key` (`noma`, `check`,
/// `hooks install`) as roff.
fn extra_sections(key: &str) -> String {
    let header = format!("[{key}]");
    let body = EXTRA
        .lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| !l.starts_with('['));
    let (mut exits, mut examples) = (String::new(), String::new());
    for line in body.filter(|l| !l.trim().is_empty()) {
        if let Some(rest) = line.strip_prefix("exit ") {
            let (code, text) = rest.split_once(' ').unwrap_or((rest, ""));
            exits += &format!(".TP\n\\fB{}\\fR\n{}\n", roff(code), roff(text));
        } else if let Some(cmd) = line.strip_prefix("$ ") {
            examples += &format!(".TP\n\\fB{}\\fR\n", roff(cmd));
        } else {
            examples += &format!("{}\n", roff(line));
        }
    }
    format!(".SH \"EXIT STATUS\"\n{exits}.SH EXAMPLES\n{examples}")
}

/// `text` as one roff text line: backslashes and dashes escaped, and a
/// leading `.` or `'` kept from reading as a request.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}
