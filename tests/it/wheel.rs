//! The prebuilt installs agree with each other and with the release
//! workflow: the `noma-cli` wheel (packaging/pypi), the root package
//! pre-commit installs (its pin is the wheel of Cargo.toml's version), the
//! `.pre-commit-hooks.yaml` hooks (`language: python`, never compiling), and
//! `cargo binstall`'s archive names (the workflow's own Package step is run
//! here and binstall's paths are looked up in what it made). Building and
//! installing the wheel offline, and pre-commit blocking an unrecorded edit
//! through it, is `.ci/wheel-check` (a release build: too slow for
//! `cargo test`).

use std::path::Path;
use std::process::Command;

use crate::common::text;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(manifest().join(rel)).unwrap()
}

/// The string value of `key` in TOML `section` (`key = "value"` lines
/// between `[section]` and the next header), enough for these files.
fn toml_value(text: &str, section: &str, key: &str) -> Option<String> {
    let header = format!("[{section}]");
    let body = text.lines().skip_while(|l| l.trim() != header).skip(1);
    for line in body.take_while(|l| !l.starts_with('[')) {
        if let Some((k, v)) = line.split_once('=') {
            if k.trim() == key {
                return Some(v.trim().trim_matches('"').to_string());
            }
        }
    }
    None
}

fn cargo_version() -> String {
    toml_value(&read("Cargo.toml"), "package", "version").unwrap()
}

fn release() -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&read(".github/workflows/release.yml")).unwrap()
}

/// The `run:` script of the step of `job` whose name starts with `name`.
fn step_script(job: &str, name: &str) -> String {
    let workflow = release();
    workflow["jobs"][job]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with(name)))
        .and_then(|s| s["run"].as_str().map(String::from))
        .unwrap_or_else(|| panic!("release.yml: job {job} has no step {name:?}"))
}

#[test]
fn wheel_and_pre_commit_package_carry_cargo_s_version() {
    let version = cargo_version();
    let wheel = read("packaging/pypi/pyproject.toml");
    assert_eq!(toml_value(&wheel, "project", "name").unwrap(), "noma-cli");
    assert_eq!(
        toml_value(&wheel, "project", "dynamic").unwrap(),
        "[\"version\"]"
    );
    assert_eq!(
        toml_value(&wheel, "tool.maturin", "bindings").unwrap(),
        "bin"
    );
    let cargo = toml_value(&wheel, "tool.maturin", "manifest-path").unwrap();
    assert_eq!(
        manifest()
            .join("packaging/pypi")
            .join(cargo)
            .canonicalize()
            .unwrap(),
        manifest().join("Cargo.toml").canonicalize().unwrap()
    );
    let root = read("pyproject.toml");
    assert_eq!(toml_value(&root, "project", "version").unwrap(), version);
    assert_eq!(
        toml_value(&root, "project", "dependencies").unwrap(),
        format!("[\"noma-cli=={version}\"]"),
        "the root package pins the wheel of Cargo.toml's version"
    );
}

#[test]
fn pre_commit_hooks_install_the_wheel_and_never_compile() {
    let hooks: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&read(".pre-commit-hooks.yaml")).unwrap();
    let hooks = hooks.as_sequence().unwrap();
    assert_eq!(hooks.len(), 2);
    for h in hooks {
        assert_eq!(h["language"].as_str(), Some("python"), "{h:?}");
        assert!(h["entry"].as_str().unwrap().starts_with("noma hook "));
    }
}

/// The release refuses a tag that is not `v` + Cargo.toml's version (the
/// wheels would reach PyPI under another version than the release's).
#[test]
fn the_release_tag_must_be_cargo_s_version() {
    let script = step_script("wheels", "The tag is Cargo.toml's version");
    let run = |tag: &str| {
        Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
            .current_dir(manifest())
            .env("TAG", tag)
            .output()
            .unwrap()
    };
    let ok = run(&format!("v{}", cargo_version()));
    assert!(ok.status.success(), "{}", text(&ok));
    let wrong = run("v999.0.0");
    assert_eq!(wrong.status.code(), Some(1), "{}", text(&wrong));
    assert!(text(&wrong).contains("is not v"), "{}", text(&wrong));
}

/// Wheels for Linux x86_64 and aarch64, macOS and Windows, built
/// `--locked`, attached to the release and published by trusted publishing.
#[test]
fn the_release_builds_locked_wheels_for_every_platform_and_publishes_them() {
    let workflow = release();
    let jobs = &workflow["jobs"];
    let targets: Vec<&str> = jobs["wheels"]["strategy"]["matrix"]["include"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| e["target"].as_str().unwrap())
        .collect();
    for want in [
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "aarch64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        assert!(targets.contains(&want), "{want}: {targets:?}");
    }
    let steps = jobs["wheels"]["steps"].as_sequence().unwrap();
    let maturin = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("PyO3/maturin-action@"))
        })
        .expect("the wheels job runs maturin");
    assert_eq!(
        maturin["with"]["working-directory"].as_str(),
        Some("packaging/pypi")
    );
    assert!(maturin["with"]["args"]
        .as_str()
        .unwrap()
        .contains("--locked"));
    assert_eq!(
        jobs["pypi"]["permissions"]["id-token"].as_str(),
        Some("write")
    );
    let publish = jobs["pypi"]["steps"].as_sequence().unwrap();
    assert!(publish.iter().any(|s| s["uses"]
        .as_str()
        .is_some_and(|u| u.starts_with("pypa/gh-action-pypi-publish@"))));
    // PyPI before the tag: pre-commit users pin the tag, so a tag must
    // never exist whose wheel PyPI lacks (docs/releasing.md).
    let needs = |job: &str| -> Vec<String> {
        match &jobs[job]["needs"] {
            serde_yaml_ng::Value::String(s) => vec![s.clone()],
            serde_yaml_ng::Value::Sequence(v) => {
                v.iter().map(|n| n.as_str().unwrap().to_string()).collect()
            }
            _ => vec![],
        }
    };
    assert!(
        needs("publish").contains(&"pypi".to_string()),
        "{:?}",
        needs("publish")
    );
    assert!(
        !needs("pypi").contains(&"publish".to_string()),
        "{:?}",
        needs("pypi")
    );
    let release = step_script("publish", "Commit the checksums");
    assert!(
        release.contains("wheels/*.whl"),
        "the release attaches the wheels"
    );
    // Wherever the workflows build noma, they build Cargo.lock's versions.
    for line in read(".github/workflows/release.yml").lines() {
        if line.contains("cargo build") || line.contains("cargo install") {
            assert!(line.contains("--locked"), "{line}");
        }
    }
}

/// binstall's `pkg-url` and `bin-dir` with `{ … }` filled in.
fn binstall(template: &str, version: &str, target: &str, suffix: &str, exe: &str) -> String {
    template
        .replace("{ repo }", "https://example.com/o/noma")
        .replace("{ version }", version)
        .replace("{ target }", target)
        .replace("{ archive-suffix }", suffix)
        .replace("{ bin }", "noma")
        .replace("{ binary-ext }", exe)
}

/// The workflow's Package step, run here for each Unix target with a
/// stand-in binary, makes the archive binstall's `pkg-url` names, and the
/// binary sits where its `bin-dir` says. (Windows: the same names with
/// .zip, made by 7z on the runner; checked by name.)
#[test]
fn binstall_finds_the_archives_the_release_makes() {
    let cargo = read("Cargo.toml");
    let meta = "package.metadata.binstall";
    let url = toml_value(&cargo, meta, "pkg-url").unwrap();
    let bin_dir = toml_value(&cargo, meta, "bin-dir").unwrap();
    assert_eq!(toml_value(&cargo, meta, "pkg-fmt").unwrap(), "tgz");
    let windows = format!("{meta}.overrides.x86_64-pc-windows-msvc");
    assert_eq!(toml_value(&cargo, &windows, "pkg-fmt").unwrap(), "zip");
    let script = step_script("build", "Package");
    assert!(script.contains("$name.zip") && script.contains("$name.tar.gz"));
    let version = "1.2.3";
    let tag = format!("v{version}");
    let workflow = release();
    for entry in workflow["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_sequence()
        .unwrap()
    {
        let target = entry["target"].as_str().unwrap();
        let exe = entry["exe"].as_str().unwrap();
        let want =
            format!("https://example.com/o/noma/releases/download/{tag}/noma-{tag}-{target}");
        if exe.ends_with(".exe") {
            assert_eq!(
                binstall(&url, version, target, ".zip", ".exe"),
                format!("{want}.zip")
            );
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let built = dir.path().join(format!("target/{target}/dist"));
        std::fs::create_dir_all(&built).unwrap();
        // The step runs what it packaged: a stand-in that answers --version.
        let stand_in = built.join(exe);
        std::fs::write(&stand_in, "#!/bin/sh\necho \"noma stand-in $1\"\n").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        for f in ["README.md", "LICENSE-MIT", "LICENSE-APACHE"] {
            std::fs::write(dir.path().join(f), f).unwrap();
        }
        let o = Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
            .current_dir(dir.path())
            .env("TARGET", target)
            .env("EXE", exe)
            .env("TAG", &tag)
            .env("RUNNER_OS", "Linux")
            .env("GITHUB_ENV", dir.path().join("github_env"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains("noma stand-in --version"),
            "the step runs the packaged binary: {}",
            text(&o)
        );
        let archive = binstall(&url, version, target, ".tar.gz", "");
        assert_eq!(archive, format!("{want}.tar.gz"));
        let file = dir.path().join(archive.rsplit('/').next().unwrap());
        let listing = Command::new("tar").arg("tzf").arg(&file).output().unwrap();
        assert!(listing.status.success(), "{}", text(&listing));
        let inner = binstall(&bin_dir, version, target, "", "");
        let listed = String::from_utf8_lossy(&listing.stdout);
        assert!(
            listed.lines().any(|l| l == inner),
            "{target}: {inner} is not in the archive: {}",
            text(&listing)
        );
        // The licences the project is offered under travel with the binary.
        for licence in ["LICENSE-MIT", "LICENSE-APACHE"] {
            assert!(
                listed.lines().any(|l| l.ends_with(&format!("/{licence}"))),
                "{target}: no {licence} in the archive: {listed}"
            );
        }
    }
}

/// The Linux wheels the release uploads are the ones `.ci/wheel-check`
/// builds and checks on a developer's machine: the workflow calls the
/// script for each of the script's targets, checks the files it then
/// uploads, and builds the sdist with it too.
#[test]
fn the_release_builds_and_checks_the_linux_wheels_with_wheel_check() {
    let script = read(".ci/wheel-check");
    let all = script
        .lines()
        .find_map(|l| l.strip_prefix("ALL_TARGETS=\""))
        .and_then(|l| l.strip_suffix('"'))
        .expect(".ci/wheel-check has ALL_TARGETS");
    let mut script_targets: Vec<&str> = all.split(' ').collect();
    script_targets.sort();
    let workflow = release();
    let wheels = &workflow["jobs"]["wheels"];
    let mut linux: Vec<&str> = wheels["strategy"]["matrix"]["include"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|e| e["os"].as_str().unwrap().starts_with("ubuntu"))
        .map(|e| e["target"].as_str().unwrap())
        .collect();
    linux.sort();
    assert_eq!(linux, script_targets);
    let steps = wheels["steps"].as_sequence().unwrap();
    let linux_step = |prefix: &str| {
        let s = steps
            .iter()
            .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .unwrap_or_else(|| panic!("no step {prefix:?}"));
        assert_eq!(s["if"].as_str(), Some("runner.os == 'Linux'"), "{s:?}");
        s["run"].as_str().unwrap().to_string()
    };
    assert!(
        linux_step("Build the Linux wheel").contains(".ci/wheel-check build \"$TARGET\" wheels")
    );
    assert!(linux_step("Check the Linux wheel").contains(".ci/wheel-check check wheels/*.whl"));
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .unwrap();
    assert_eq!(upload["with"]["path"].as_str(), Some("wheels/*.whl"));
    // maturin-action builds only what the script does not.
    let maturin = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("PyO3/maturin-action@"))
        })
        .unwrap();
    assert_eq!(maturin["if"].as_str(), Some("runner.os != 'Linux'"));
    // The profile and flags are the script's too.
    assert!(maturin["with"]["args"]
        .as_str()
        .unwrap()
        .contains("--locked --profile dist"));
    assert!(script.contains("profile=\"${NOMA_WHEEL_PROFILE:-dist}\""));
    assert!(script.contains("maturin build --zig --locked"));
    let sdist = &workflow["jobs"]["sdist"]["steps"];
    assert!(sdist
        .as_sequence()
        .unwrap()
        .iter()
        .any(|s| s["run"].as_str() == Some(".ci/wheel-check sdist wheels")));
    for job in ["pypi", "publish"] {
        let needs: Vec<&str> = workflow["jobs"][job]["needs"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        assert!(needs.contains(&"sdist"), "{job}: {needs:?}");
    }
}

/// The wheel's licence files (`license-files` cannot reach above
/// packaging/pypi) are the repository's, byte for byte.
#[test]
fn the_wheel_s_licence_files_are_the_repository_s() {
    let wheel = read("packaging/pypi/pyproject.toml");
    assert_eq!(
        toml_value(&wheel, "project", "license-files").unwrap(),
        "[\"LICENSE-MIT.txt\", \"LICENSE-APACHE.txt\"]"
    );
    for licence in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert_eq!(
            read(&format!("packaging/pypi/{licence}.txt")),
            read(licence),
            "packaging/pypi/{licence}.txt differs from {licence}"
        );
    }
}
