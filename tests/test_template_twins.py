"""The Python twins of hot built-in templates (core.templates.builtin_twin): the same
text as Jinja on every input, used only while the built-in file is the one in use."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from turnpress.core.render_context import RenderContext
from turnpress.core.templates import TWIN_NAMES, builtin_twin, get_environment

TEXTS = ["", "x", "a\nb", "ends in a newline\n", "\n\n", "{{ not jinja }}", "ünïcödé ✓",
         "  spaced  ", "x" * 30]
VARIABLES: dict[str, list[dict[str, Any]]] = {
    "history/tool_calls.j2": [
        {"calls": calls} for calls in (
            [], (), [{"name": "bash", "args": '"ls -la"'}],
            [{"name": n, "args": a} for n, a in itertools.product(["f", "tool/x"], TEXTS)],
            [{"name": "f", "args": 3}, {"name": None, "args": ""}])],
    "history/output.j2": [
        {"prints": prints, "max_chars": m}
        for prints in ([], TEXTS, ["x" * 200, "short", "exactly10!"])
        for m in (None, 4, 10, 200)],
    "history/elided.j2": [{"count": c, "unit": u} for c in (0, 1, 2, 999, 1000, 1234567)
                          for u in ("line", "character")],
    "history/turns_left.j2": [{"turns_left": t} for t in (0, 1, 2, 10, -3)],
    "history/user_messages.j2": [
        {"messages": []},
        {"messages": [{"number": i, "role": r, "text": t}
                      for i, (r, t) in enumerate(itertools.product(
                          ["user", "system"], TEXTS), 1)]}],
    "observation_masking/masked.j2": [{"number": n, "lines": k} for n in (1, 12)
                                      for k in (0, 1, 2, 40)],
    "clear_tool_uses/placeholder.j2": [{}],
    "progressive_batch/recap.j2": [
        {"number": 7, "failed": failed, "message": "undefined symbol 'x'" if failed else None,
         "calls": calls, "defined": defined, "printed": printed}
        for failed in (False, True)
        for calls in ([], [{"name": "search", "count": 1}],
                      [{"name": "search", "count": 3}, {"name": "notify", "count": 1}])
        for defined in ([], ["a"], ["a", "b-c?"])
        for printed in (0, 1, 5)],
}


def test_every_twin_is_checked_here() -> None:
    assert set(VARIABLES) == set(TWIN_NAMES)


@pytest.mark.parametrize("name", sorted(TWIN_NAMES))
def test_a_twin_gives_jinjas_text(name: str) -> None:
    env = get_environment(())
    twin = builtin_twin(env, name)
    assert twin is not None, (
        f"{name} changed: its Python twin (turnpress/core/templates.py, _TWINS) is off "
        f"until it renders the new file and carries the new file's sha256")
    template = env.get_template(name)
    for variables in VARIABLES[name]:
        assert twin(env, **variables) == template.render(**variables), variables


def test_an_override_turns_the_twin_off(tmp_path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "tool_calls.j2").write_text(
        "{% for c in calls %}{{ c.name }};{% endfor %}")
    ctx = RenderContext(mission="m", system_prompt="", tools={}, data={}, turns_left=3,
                        template_dirs=(tmp_path,))
    assert builtin_twin(get_environment((tmp_path,)), "history/tool_calls.j2") is None
    assert builtin_twin(get_environment((tmp_path,)), "history/output.j2") is not None
    calls = [{"name": "a", "args": "1"}, {"name": "b", "args": "2"}]
    assert ctx.template("history/tool_calls.j2", calls=calls) == "a;b;"
    plain = RenderContext(mission="m", system_prompt="", tools={}, data={}, turns_left=3)
    assert plain.template("history/tool_calls.j2", calls=calls) == (
        ";; Tool calls made:\n;   a(1)\n;   b(2)")


def test_a_value_the_twin_was_not_written_for_renders_through_jinja() -> None:
    class Call:
        name = "attr"
        args = "x"

    ctx = RenderContext(mission="m", system_prompt="", tools={}, data={}, turns_left=3)
    # Jinja's c["name"] falls back to the attribute; the twin gives way
    assert ctx.template("history/tool_calls.j2", calls=[Call()]) == (
        ";; Tool calls made:\n;   attr(x)")
