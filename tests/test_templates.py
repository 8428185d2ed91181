"""Template overrides: search path, default: prefix, list and export."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from scenarios import exploration, failed_once

from turnpress import TemplateProblem, render
from turnpress.cli import main
from turnpress.core.templates import BUILTIN_TEMPLATE_DIR, export_templates, list_templates

#: these tests override templates of the seed's one-USER format, named (the default
#: strategy is price-scheduled since issue 18)
SUC = "single-user-coalesced"


def test_an_override_directory_wins(tmp_path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "turns_left.j2").write_text("{{ turns_left }} turns to go")
    sc = exploration()
    content = render(sc.turns, template_dirs=[tmp_path], compression=SUC,
                     **sc.render_kwargs())[1]["content"]
    assert content.endswith("\n\n4 turns to go")


def test_default_prefix_reaches_the_builtin(tmp_path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "failed_attempt.j2").write_text(
        '{% include "default:history/failed_attempt.j2" %}\n\nHint: check the spelling.')
    sc = failed_once()
    content = render(sc.turns, template_dirs=[tmp_path], compression=SUC,
                     **sc.render_kwargs())[1]["content"]
    assert "Error: undefined symbol 'broken-code'\n---\nHint: check the spelling." in content


def test_extends_default(tmp_path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "output.j2").write_text(
        '{% extends "default:history/output.j2" %}')
    sc = exploration()
    assert render(sc.turns, template_dirs=[tmp_path], **sc.render_kwargs()) == render(
        sc.turns, **sc.render_kwargs())


def test_environment_variable_directory(tmp_path, monkeypatch) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "turns_left.j2").write_text("left={{ turns_left }}")
    monkeypatch.setenv("TURNPRESS_TEMPLATES", str(tmp_path))
    assert render([], mission="m", turns_left=3)[1]["content"] == "m\n\nleft=3"


def test_explicit_directory_beats_environment(tmp_path, monkeypatch) -> None:
    env_dir, arg_dir = tmp_path / "env", tmp_path / "arg"
    for d, text in ((env_dir, "env"), (arg_dir, "arg")):
        (d / "history").mkdir(parents=True)
        (d / "history" / "turns_left.j2").write_text(text)
    monkeypatch.setenv("TURNPRESS_TEMPLATES", str(env_dir))
    assert render([], mission="m", turns_left=3, template_dirs=[arg_dir])[1]["content"] == (
        "m\n\narg")


def test_missing_directory_is_an_error(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"template directory .*nope.* does not exist"):
        render([], mission="m", turns_left=3, template_dirs=[tmp_path / "nope"])


def test_strict_undefined_names_the_variable(tmp_path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "turns_left.j2").write_text("{{ turns_remaining }}")
    with pytest.raises(Exception, match="turns_remaining"):
        render([], mission="m", turns_left=3, template_dirs=[tmp_path])


@pytest.mark.parametrize(("text", "problem"), [
    # an override that includes itself where `default:` was meant
    ('{% include "history/turns_left.j2" %}', "line 1: includes itself, directly or "
                                              "through other templates, without end"),
    (b"Turns \xff left", "not UTF-8 text (byte 6: invalid start byte); save it as UTF-8"),
])
def test_a_template_that_includes_itself_or_is_not_utf8_is_named(tmp_path, text,
                                                                   problem) -> None:
    """A TemplateProblem naming the file (a RecursionError and a UnicodeDecodeError
    came out bare); in render and compare, one Error line, exit 2."""
    (tmp_path / "history").mkdir()
    path = tmp_path / "history" / "turns_left.j2"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(TemplateProblem) as caught:
        render([], mission="m", turns_left=3, template_dirs=[tmp_path])
    assert str(path) in str(caught.value) and problem in str(caught.value)
    for command in (["render", "product-research", "-s", "full-history"],
                    ["compare", "product-research", "-t", "chars4"]):
        out = CliRunner().invoke(main, [*command, "--templates", str(tmp_path)])
        assert out.exit_code == 2 and "Traceback" not in out.output, out.output
        assert out.output.count("\n") == 1 and problem in out.output


def test_list_shows_where_each_template_comes_from(tmp_path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "output.j2").write_text("x")
    infos = {i.name: i for i in list_templates([tmp_path])}
    assert infos["history/output.j2"].origin == str(tmp_path.resolve())
    assert infos["history/tool_calls.j2"].origin == "built-in"
    builtin_names = {p.relative_to(BUILTIN_TEMPLATE_DIR).as_posix()
                     for p in BUILTIN_TEMPLATE_DIR.rglob("*.j2")}
    assert builtin_names <= set(infos)


def test_export_copies_every_builtin_and_refuses_to_overwrite(tmp_path) -> None:
    written = export_templates(tmp_path / "mine")
    assert len(written) == len(list(BUILTIN_TEMPLATE_DIR.rglob("*.j2")))
    assert (tmp_path / "mine" / "history" / "output.j2").read_text() == (
        BUILTIN_TEMPLATE_DIR / "history" / "output.j2").read_text()
    with pytest.raises(FileExistsError, match="force=True"):
        export_templates(tmp_path / "mine")
    assert export_templates(tmp_path / "mine", force=True) == written


def test_exported_templates_render_identically(tmp_path) -> None:
    export_templates(tmp_path)
    sc = failed_once()
    assert render(sc.turns, template_dirs=[tmp_path], **sc.render_kwargs()) == render(
        sc.turns, **sc.render_kwargs())


def test_cli_templates_list_and_export(tmp_path) -> None:
    runner = CliRunner()
    listing = runner.invoke(main, ["templates", "list"])
    assert listing.exit_code == 0
    assert "history/turns_left.j2" in listing.output and "built-in" in listing.output
    out = runner.invoke(main, ["templates", "export", str(tmp_path / "t")])
    assert out.exit_code == 0 and "exported" in out.output
    again = runner.invoke(main, ["templates", "export", str(tmp_path / "t")])
    assert again.exit_code == 2 and "--force" in again.output


def test_a_misspelled_override_file_warns_with_did_you_mean(tmp_path, monkeypatch) -> None:
    """ux-a item 12: a --templates / TURNPRESS_TEMPLATES file whose name is no template
    gets the "did you mean" warning a misspelled plugin override gets."""
    from turnpress.core.templates import TemplateWarning

    (tmp_path / "histroy").mkdir()
    typo = tmp_path / "histroy" / "turns_left.j2"
    typo.write_text("never used")
    sc = exploration()
    expected = (rf"template override '{typo}': histroy/turns_left.j2 is the name of no "
                rf"template \(did you mean history/turns_left.j2\?\); it changes nothing")
    with pytest.warns(TemplateWarning, match=expected):
        content = render(sc.turns, template_dirs=[tmp_path], **sc.render_kwargs())
    assert content == render(sc.turns, **sc.render_kwargs())
    result = CliRunner().invoke(main, ["templates", "list", "--templates", str(tmp_path)])
    assert result.exit_code == 0
    assert ("histroy/turns_left.j2", f"{tmp_path} (replaces no template; did you mean "
            "history/turns_left.j2?)") in [tuple(line.split(None, 1)) for line in
                                            result.stdout.splitlines()]
    assert result.stderr.startswith(f"Warning: template override '{typo}': ")
    env_dir = tmp_path / "env"  # a new directory: each set of directories warns once
    (env_dir / "histroy").mkdir(parents=True)
    (env_dir / "histroy" / "turns_left.j2").write_text("never used")
    monkeypatch.setenv("TURNPRESS_TEMPLATES", str(env_dir))
    rendered = CliRunner().invoke(main, ["render", "product-research", "-t", "1"])
    assert rendered.exit_code == 0
    assert rendered.stderr.count("Warning: ") == 1
    assert "(did you mean history/turns_left.j2?)" in rendered.stderr


def test_an_included_helper_file_does_not_warn(tmp_path, recwarn) -> None:
    """ux-a item 12: a file of macros an override includes by name is used, not a typo."""
    (tmp_path / "history").mkdir()
    (tmp_path / "macros.j2").write_text("{% macro left(n) %}{{ n }} to go{% endmacro %}")
    (tmp_path / "history" / "turns_left.j2").write_text(
        '{% from "macros.j2" import left %}{{ left(turns_left) }}')
    sc = exploration()
    content = render(sc.turns, template_dirs=[tmp_path], compression=SUC,
                     **sc.render_kwargs())[1]["content"]
    assert content.endswith("\n\n4 to go")
    assert not [w for w in recwarn if "name of no template" in str(w.message)]
