"""`noma lsp` driven by a real LSP client (pytest-lsp over pygls).

Run by tests/it/lsp_py.rs with NOMA_BIN (the binary under test) and
NOMA_EXAMPLES (the reference's examples, from ../shared) set. Every
answer is compared with what the CLI says about the same file: `noma
check --format json` for diagnostics, `noma ids` for ids, `noma blocks`
for baseHash.
"""

import ast
import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

NOMA = os.environ["NOMA_BIN"]
# Resolved: a URI holds no `..` (the client and server normalise it away).
EXAMPLES = Path(os.environ["NOMA_EXAMPLES"]).resolve()


def example_files():
    files = sorted(EXAMPLES.rglob("*.noma"))
    assert files, f"no .noma files under {EXAMPLES}"
    return files


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[NOMA, "lsp"]))
async def client(lsp_client: LanguageClient, tmp_path):
    # The test's directory is the workspace: rename and record write only
    # inside it.
    params = types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri()
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


def next_diagnostics(client):
    """An awaitable for the next publishDiagnostics, registered now: a
    notification that follows a response closely can be read before the
    awaiting test resumes, and a waiter registered after it would wait
    forever."""
    waiter = client.protocol.wait_for_notification_async(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    # A bound, not a pause: a server that never publishes fails the test.
    return asyncio.wait_for(waiter, timeout=60)


def cli_json(*args):
    out = subprocess.run([NOMA, *args], capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


async def open_doc(client, path: Path, text=None):
    """Opens `path` (its text, or `text`) and waits for its diagnostics."""
    uri = path.as_uri()
    text = path.read_text() if text is None else text
    published = next_diagnostics(client)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="noma", version=1, text=text)
        )
    )
    await published
    return uri


def check_findings(path: Path):
    [report] = cli_json("check", "--format", "json", str(path))
    return sorted((d["code"], d["pos"]["line"], d["severity"]) for d in report["diagnostics"])


SEVERITY = {1: "error", 2: "warning", 3: "info"}


def lsp_findings(client, uri):
    return sorted(
        (d.code, d.range.start.line + 1, SEVERITY[d.severity]) for d in client.diagnostics[uri]
    )


BROKEN = """---
profile: research
---
# Broken {id="top"}

::claim{id="c1" confidence=0.5}
Sky.
::

::claim{id="c1" confidence=0.6}
Dup.
::

::evidence{for="c2"}
Missing target.
::

é😀 see [[nope]] and [[c1]].

::note{id="open"}
never closed
"""


async def test_diagnostics_equal_noma_check_on_the_examples(client: LanguageClient, tmp_path):
    files = example_files()
    # The reference's examples, and each with broken lines appended: the
    # same findings (code, line, severity) as `noma check --format json`.
    for path in files:
        uri = await open_doc(client, path)
        assert lsp_findings(client, uri) == check_findings(path), path
        broken = tmp_path / f"broken-{path.name}"
        broken.write_text(path.read_text() + "\n" + BROKEN.split("---\n", 2)[2])
        uri = await open_doc(client, broken)
        got = lsp_findings(client, uri)
        assert got == check_findings(broken), broken
        assert {"broken-reference", "duplicate-id", "unclosed-directive"} <= {c for c, _, _ in got}


async def test_ranges_are_exact_in_utf16(client: LanguageClient, tmp_path):
    path = tmp_path / "broken.noma"
    path.write_text(BROKEN)
    uri = await open_doc(client, path)
    assert lsp_findings(client, uri) == check_findings(path)
    lines = BROKEN.split("\n")

    def text_of(r):
        assert r.start.line == r.end.line
        line = lines[r.start.line].encode("utf-16-le")
        return line[2 * r.start.character : 2 * r.end.character].decode("utf-16-le")

    by_code = {}
    for d in client.diagnostics[uri]:
        by_code.setdefault(d.code, []).append(d)
    broken = sorted(text_of(d.range) for d in by_code["broken-reference"])
    assert broken == ["c2", "nope"]
    # After é and 😀 (3 UTF-16 units, 6 bytes) and " see [[".
    [wiki] = [d for d in by_code["broken-reference"] if text_of(d.range) == "nope"]
    assert wiki.range.start.character == 3 + len(" see [[")
    [dup] = by_code["duplicate-id"]
    assert text_of(dup.range) == "c1" and dup.range.start.line == 9


async def test_change_updates_diagnostics(client: LanguageClient, tmp_path):
    path = tmp_path / "d.noma"
    path.write_text("# T\n\nSee [[t]].\n")
    uri = await open_doc(client, path)
    assert list(client.diagnostics[uri]) == []
    published = next_diagnostics(client)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="# T\n\nSee [[x]].\n")],
        )
    )
    await published
    [d] = client.diagnostics[uri]
    assert d.code == "broken-reference" and d.range.start == types.Position(2, 6)
    # Incremental sync (what the server advertises): two ranged edits in
    # one notification, applied in order: `x` -> `tt` -> `t`.
    published = next_diagnostics(client)
    at = lambda a, b: types.Range(types.Position(2, a), types.Position(2, b))  # noqa: E731
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[
                types.TextDocumentContentChangePartial(range=at(6, 7), text="tt"),
                types.TextDocumentContentChangePartial(range=at(7, 8), text=""),
            ],
        )
    )
    await published
    assert list(client.diagnostics[uri]) == []


def flatten(symbols):
    for s in symbols:
        yield s
        yield from flatten(s.children or [])


async def test_symbols_are_the_headings_and_directives_with_ids(client: LanguageClient):
    for path in example_files():
        uri = await open_doc(client, path)
        symbols = await client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        got = sorted((s.detail, s.range.start.line + 1) for s in flatten(symbols))
        ids = cli_json("ids", str(path))["records"]
        want = sorted((r["id"], r["line"]) for r in ids if r["type"] in ("section", "directive"))
        assert got == want, path


async def test_hover_shows_id_kind_and_base_hash(client: LanguageClient):
    for path in example_files():
        uri = await open_doc(client, path)
        for block in cli_json("blocks", "--format", "json", str(path))[:25]:
            hover = await client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(block["lines"][0] - 1, 0),
                )
            )
            assert hover is not None, (path, block["id"])
            text = hover.contents.value
            # The innermost block starting on that line is this one (a
            # heading line starts only its section).
            assert f"**{block['id']}**" in text, (path, text)
            assert f"baseHash: `{block['sha256']}`" in text, (path, text)


def wikilinks(text):
    """(line, character, target) of each [[id]] outside code fences."""
    out, fenced = [], False
    for n, line in enumerate(text.split("\n")):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        start = 0
        while not fenced and (i := line.find("[[", start)) >= 0:
            end = line.find("]]", i)
            if end < 0:
                break
            out.append((n, len(line[: i + 2].encode("utf-16-le")) // 2, line[i + 2 : end]))
            start = end + 2
    return out


def the_link(answer):
    """The one LocationLink of a definition answer (the client, as VS Code,
    takes links)."""
    assert isinstance(answer, list) and len(answer) == 1, answer
    assert isinstance(answer[0], types.LocationLink), answer
    return answer[0]


async def test_definition_and_references_on_the_examples(client: LanguageClient):
    answered = 0
    for path in example_files():
        text = path.read_text()
        uri = await open_doc(client, path)
        registry = cli_json("ids", str(path))
        lines = {r["id"]: r["line"] for r in registry["records"]}
        for line, char, target in wikilinks(text):
            canonical = target if target in lines else registry["aliases"].get(target)
            if canonical is None:
                continue
            at = types.TextDocumentPositionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line, char),
            )
            loc = await client.text_document_definition_async(
                types.DefinitionParams(text_document=at.text_document, position=at.position)
            )
            link = the_link(loc)
            assert link.target_range.start.line + 1 == lines[canonical], (path, target)
            refs = await client.text_document_references_async(
                types.ReferenceParams(
                    text_document=at.text_document,
                    position=at.position,
                    context=types.ReferenceContext(include_declaration=True),
                )
            )
            assert any(r.range.start.line == line for r in refs), (path, target)
            assert any(r.range.start.line + 1 == lines[canonical] for r in refs)
            answered += 1
    assert answered > 0, "no wikilink in the examples resolved"


DOC = """# Plan {id="plan"}

::claim{id="c1" confidence=0.5}
The sky is blue.
::

::evidence{id="e1" for="c1"}
Seen.
::

As [[c1]] says.
"""


async def test_definition_references_and_completion_of_reference_attributes(
    client: LanguageClient, tmp_path
):
    path = tmp_path / "plan.noma"
    path.write_text(DOC)
    uri = await open_doc(client, path)
    doc_id = types.TextDocumentIdentifier(uri=uri)
    # From for="c1" (line 7, inside the value) to c1's id token.
    loc = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc_id, position=types.Position(6, 26))
    )
    link = the_link(loc)
    # The block's lines, selecting the id; the origin is the written value.
    assert link.target_range == types.Range(types.Position(2, 0), types.Position(4, 2))
    assert link.target_selection_range == types.Range(types.Position(2, 12), types.Position(2, 14))
    assert link.origin_selection_range == types.Range(types.Position(6, 24), types.Position(6, 26))
    # On a wikilink's brackets too (the origin is the whole `[[c1]]`).
    for char in (3, 9):
        link = the_link(
            await client.text_document_definition_async(
                types.DefinitionParams(text_document=doc_id, position=types.Position(10, char))
            )
        )
        assert link.target_selection_range.start == types.Position(2, 12), char
        assert link.origin_selection_range == types.Range(
            types.Position(10, 3), types.Position(10, 9)
        )
    refs = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=doc_id,
            position=types.Position(2, 13),
            context=types.ReferenceContext(include_declaration=False),
        )
    )
    assert sorted((r.range.start.line, r.range.start.character) for r in refs) == [(6, 24), (10, 5)]
    for line, char in [(10, 5), (6, 24), (6, 25)]:
        items = await client.text_document_completion_async(
            types.CompletionParams(text_document=doc_id, position=types.Position(line, char))
        )
        labels = {i.label for i in (items.items if hasattr(items, "items") else items)}
        assert labels == {"plan", "c1", "e1"}
    # Outside an id position: nothing offered.
    items = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc_id, position=types.Position(3, 4))
    )
    assert not items


async def test_completion_offers_every_id_of_the_examples(client: LanguageClient):
    for path in example_files():
        text = path.read_text() + "\nSee [["
        uri = await open_doc(client, path, text)
        last = len(text.split("\n")) - 1
        items = await client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(last, len("See [[")),
            )
        )
        registry = cli_json("ids", str(path))
        want = {r["id"] for r in registry["records"]} | set(registry["aliases"])
        assert {i.label for i in items} == want, path


def git_env(home: Path):
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@e",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@e",
        GIT_CEILING_DIRECTORIES=str(home.parent),
    )
    return env


def run(cwd: Path, *args):
    out = subprocess.run(list(args), cwd=cwd, env=git_env(cwd), capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


def guarded_repo(tmp_path: Path) -> Path:
    """A repository with doc.noma committed with its transcript (a genesis
    record from `noma record`)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "doc.noma").write_text(DOC)
    for args in (
        ["git", "init", "-q", "-b", "main"],
        [NOMA, "record", "doc.noma"],
        ["git", "add", "-A"],
        ["git", "commit", "-qm", "one"],
    ):
        code, out = run(repo, *args)
        assert code == 0, (args, out)
    assert (repo / "doc.noma.patches").is_file()
    return repo


def unrecorded(client, uri):
    return [d for d in client.diagnostics[uri] if d.code == "unrecorded-edit"]


async def test_an_unrecorded_edit_shows_and_record_this_edit_records_it(
    client: LanguageClient, tmp_path
):
    repo = guarded_repo(tmp_path)
    path = repo / "doc.noma"
    uri = await open_doc(client, path)
    assert unrecorded(client, uri) == []
    # A hand edit of c1's text, saved: the hook would refuse it.
    edited = DOC.replace("The sky is blue.", "The sky is green.")
    path.write_text(edited)
    published = next_diagnostics(client)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)],
        )
    )
    await published
    found = unrecorded(client, uri)
    on_c1 = [d for d in found if d.range == types.Range(types.Position(2, 12), types.Position(2, 14))]
    assert on_c1, found
    assert "c1" in on_c1[0].message
    # e1, untouched, is not reported; the section holding c1 is (its hash covers c1).
    assert not any("block e1 " in d.message for d in found)
    code, out = run(repo, "git", "add", "-A")
    code, out = run(repo, NOMA, "hook", "pre-commit")
    assert code == 1 and "unrecorded-edit" in out, out

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=on_c1[0].range,
            context=types.CodeActionContext(diagnostics=on_c1),
        )
    )
    [action] = actions
    assert action.title == "Record this edit"
    command = action.command
    if isinstance(command, str):
        # lsprotocol 2025.0.0 structures every code action that carries a
        # command as a bare Command, the action's `command` object
        # stringified into its `command` field: read it back.
        command = types.Command(**ast.literal_eval(command))
    assert command.command == "noma.record" and command.arguments == [uri]
    published = next_diagnostics(client)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert "recorded" in result, result
    await published
    assert unrecorded(client, uri) == []
    code, out = run(repo, NOMA, "replay", "doc.noma")
    assert code == 0, out
    code, out = run(repo, "git", "add", "-A")
    code, out = run(repo, NOMA, "hook", "pre-commit")
    assert code == 0, out
    records = (repo / "doc.noma.patches").read_text().strip().split("\n")
    assert len(records) == 2 and json.loads(records[1])["actor"]["kind"] == "human"
    # The hover on c1 now shows that change, as `noma log --block c1` lists it.
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(2, 12),
        )
    )
    text = hover.contents.value
    code, out = run(repo, NOMA, "log", "doc.noma", "--block", "c1", "--format", "json")
    assert code == 0, out
    [last, *_] = json.loads(out)["changes"]
    assert "Last changes" in text, text
    assert f"`{last['op']}` by {last['actor']} at {last['ts']}" in text, (text, last)
    assert "signed by —, approved by —" in text, text


async def test_record_this_edit_refuses_an_unsaved_buffer(client: LanguageClient, tmp_path):
    repo = guarded_repo(tmp_path)
    path = repo / "doc.noma"
    edited = DOC.replace("Seen.", "Seen twice.")
    uri = await open_doc(client, path, edited)
    found = unrecorded(client, uri)
    assert any("block e1 is changed" in d.message for d in found), found
    with pytest.raises(Exception, match="save the document first"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="noma.record", arguments=[uri])
        )
    assert len((repo / "doc.noma.patches").read_text().strip().split("\n")) == 1


async def test_rename_and_record_write_only_inside_the_workspace_and_not_through_links(
    client: LanguageClient, tmp_path, tmp_path_factory
):
    outside = guarded_repo(tmp_path_factory.mktemp("outside"))
    (tmp_path / "linked").symlink_to(outside)
    transcript = (outside / "doc.noma.patches").read_text()
    for path, why in (
        (outside / "doc.noma", "outside the workspace"),
        (tmp_path / "linked" / "doc.noma", "symbolic link"),
    ):
        uri = await open_doc(client, path)
        with pytest.raises(Exception, match=why):
            await client.text_document_rename_async(
                types.RenameParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(2, 12),
                    new_name="sky",
                )
            )
        with pytest.raises(Exception, match=why):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="noma.record", arguments=[uri])
            )
    assert (outside / "doc.noma").read_text() == DOC
    assert (outside / "doc.noma.patches").read_text() == transcript


async def test_did_you_mean_fixes_a_broken_reference(client: LanguageClient, tmp_path):
    path = tmp_path / "typo.noma"
    text = DOC + "\nAnd [[plann]] too.\n"
    path.write_text(text)
    uri = await open_doc(client, path)
    [broken] = [d for d in client.diagnostics[uri] if d.code == "broken-reference"]
    assert 'did you mean "plan"' in broken.message
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=broken.range,
            context=types.CodeActionContext(diagnostics=[broken]),
        )
    )
    [fix] = actions
    assert fix.title == 'Change to "plan"'
    [edit] = fix.edit.changes[uri]
    assert edit.range == broken.range and edit.new_text == "plan"
    line = text.split("\n")[edit.range.start.line]
    fixed = line[: edit.range.start.character] + "plan" + line[edit.range.end.character :]
    assert fixed == "And [[plan]] too."


async def test_workspace_symbols_search_every_open_document(client: LanguageClient, tmp_path):
    uris = {}
    for path in example_files():
        uris[await open_doc(client, path)] = path
    symbols = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=""))
    got = sorted((s.location.uri, s.container_name, s.location.range.start.line + 1) for s in symbols)
    want = sorted(
        (uri, r["id"], r["line"])
        for uri, path in uris.items()
        for r in cli_json("ids", str(path))["records"]
        if r["type"] in ("section", "directive")
    )
    assert got == want
    # A query narrows by id or name, in any case.
    some = want[0][1]
    narrowed = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=some.upper()))
    assert narrowed and all(
        some.lower() in (s.container_name + s.name).lower() for s in narrowed
    )


def apply_edits(text: str, edits) -> str:
    """`text` with LSP `edits` applied (ASCII text: characters are units)."""
    lines = text.split("\n")

    def offset(pos):
        return sum(len(line) + 1 for line in lines[: pos.line]) + pos.character

    for e in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(e.range.start)] + e.new_text + text[offset(e.range.end) :]
    return text


async def test_renaming_an_id_writes_a_rename_id_record(client: LanguageClient, tmp_path):
    repo = guarded_repo(tmp_path)
    path = repo / "doc.noma"
    uri = await open_doc(client, path)
    edit = await client.text_document_rename_async(
        types.RenameParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(2, 12),
            new_name="sky",
        )
    )
    changes = edit.changes[uri]
    # The edits turn the buffer into the file the patch wrote, and touch
    # only what changed: each one replaces the old id by the new.
    after = apply_edits(DOC, changes)
    assert after == path.read_text()
    assert 'id="sky"' in after and 'for="sky"' in after
    assert "[[sky]]" in after and "c1" not in after
    assert len(changes) >= 3 and all(c.new_text in ("sky", "") for c in changes), changes
    records = (repo / "doc.noma.patches").read_text().strip().split("\n")
    last = json.loads(records[-1])
    assert last["op"]["op"] == "rename_id" and last["op"]["from"] == "c1", last
    code, out = run(repo, NOMA, "replay", "doc.noma")
    assert code == 0, out
    code, out = run(repo, "git", "add", "-A")
    code, out = run(repo, NOMA, "hook", "pre-commit")
    assert code == 0, out


async def test_rename_refuses_an_unsaved_buffer(client: LanguageClient, tmp_path):
    repo = guarded_repo(tmp_path)
    path = repo / "doc.noma"
    uri = await open_doc(client, path)
    edited = DOC.replace("The sky is blue.", "The sky is green.")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)],
        )
    )
    before = (repo / "doc.noma.patches").read_text()
    with pytest.raises(Exception, match="save the document first"):
        await client.text_document_rename_async(
            types.RenameParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(2, 12),
                new_name="sky",
            )
        )
    assert path.read_text() == DOC
    assert (repo / "doc.noma.patches").read_text() == before


async def test_provenance_problems_of_the_records_show_as_diagnostics(
    client: LanguageClient, tmp_path
):
    repo = guarded_repo(tmp_path)
    path = repo / "doc.noma"
    uri = await open_doc(client, path)
    assert not [d for d in client.diagnostics[uri] if d.code == "unsigned-record"]
    # The policy now asks for signatures: the genesis record has none.
    (repo / ".noma").mkdir(exist_ok=True)
    (repo / ".noma" / "config.yml").write_text("provenance:\n  signatures: warn\n")
    code, out = run(repo, NOMA, "replay", "doc.noma", "--signatures")
    assert "unsigned-record" in out, out
    published = next_diagnostics(client)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await published
    [found] = [d for d in client.diagnostics[uri] if d.code == "unsigned-record"]
    assert found.severity == types.DiagnosticSeverity.Warning, found
    assert found.message.startswith("transcript line 1: "), found
    assert found.range.start.line == 0, found
