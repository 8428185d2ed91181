"""Tool calls: argument conversion, recording, results and failures."""

from __future__ import annotations

import pytest

from turnpress import Keyword, Tool, ToolCall
from turnpress.lisp import run_program

K = Keyword


class Recorder:
    """A tool that records the Python arguments it was called with."""

    def __init__(self, result=None):
        self.calls: list[tuple] = []
        self.result = result

    def __call__(self, *args):
        self.calls.append(args)
        return self.result


def test_tool_arguments_are_plain_python_values():
    rec = Recorder()
    result = run_program('(tool/send {:to "ann" :tags [:a :b] :opts #{:x}} :urgent [1 [2]])',
                         tools={"send": Tool("send", fn=rec)})
    assert result.success
    assert rec.calls == [({"to": "ann", "tags": ["a", "b"], "opts": {"x"}}, "urgent",
                          [1, [2]])]
    call = result.tool_calls[0]
    assert call.name == "send"
    assert call.args == ({K("to"): "ann", K("tags"): [K("a"), K("b")],
                          K("opts"): frozenset({K("x")})}, K("urgent"), [1, [2]])


def test_tool_arguments_are_copies():
    def mutate(xs):
        xs.append(99)
        return len(xs)

    result = run_program("(def xs [1]) [(tool/mutate xs) xs]",
                         tools={"mutate": Tool("mutate", fn=mutate)})
    assert result.value == [2, [1]]


def test_tool_results_become_lisp_values():
    rec = Recorder(result=({"a": (1, 2), "s": {3}}, None))
    result = run_program('(let [r (tool/get)] [(:a (first r)) (second r)])',
                         tools={"get": Tool("get", fn=rec)})
    assert result.value == [[1, 2], None]
    assert result.tool_calls == (ToolCall("get", (), [{"a": [1, 2], "s": frozenset({3})},
                                                      None]),)


def test_tool_calls_are_recorded_in_order_across_forms():
    tools = {"a": Tool("a", fn=lambda x: x * 2), "b": Tool("b", fn=lambda: "ok")}
    result = run_program("(tool/a 1) (map tool/a [2 3]) (tool/b) (b)", tools=tools)
    assert [(c.name, c.args, c.result) for c in result.tool_calls] == [
        ("a", (1,), 2), ("a", (2,), 4), ("a", (3,), 6), ("b", (), "ok"), ("b", (), "ok")]


def test_failing_tool_is_a_tool_error_and_still_recorded():
    def boom(x):
        raise ValueError(f"bad input {x}")

    result = run_program('(tool/ok 1) (tool/boom "q") (tool/ok 2)',
                         tools={"boom": Tool("boom", fn=boom), "ok": Tool("ok", fn=lambda x: x)})
    assert result.failure.reason == "tool_error"
    assert result.failure.message == "tool 'boom' failed: ValueError: bad input q"
    assert [c.name for c in result.tool_calls] == ["ok", "boom"]
    assert result.tool_calls[1].args == ("q",) and result.tool_calls[1].result is None
    assert "Traceback" not in result.failure.message


def test_tool_without_a_function_is_a_tool_error():
    result = run_program("(tool/ghost 1)", tools={"ghost": Tool("ghost")})
    assert result.failure.reason == "tool_error"
    assert result.failure.message.startswith("tool 'ghost' failed: NotImplementedError")
    assert result.tool_calls == (ToolCall("ghost", (1,), None),)


def test_tool_with_wrong_arguments_is_a_tool_error():
    result = run_program("(tool/one)", tools={"one": Tool("one", fn=lambda x: x)})
    assert result.failure.reason == "tool_error" and "TypeError" in result.failure.message


def test_tools_accept_plain_callables():
    result = run_program('(tool/greet "Bo")', tools={"greet": lambda name: f"hi {name}"})
    assert result.value == "hi Bo"


def test_bad_tools_argument_raises_for_the_caller():
    with pytest.raises(TypeError):
        run_program("1", tools={"x": 5})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        run_program("1", data=[1])  # type: ignore[arg-type]


def test_tool_time_does_not_count_against_the_timeout(monkeypatch):
    """The timeout guards the program's own evaluation; a slow tool (I/O, a child agent
    waiting on its LLM) is not cut short, while a busy program still is.

    The tool takes 10 s by the sandbox's clock (a clock that jumps inside the tool
    call, instead of a real sleep): three calls are 30 s against a 2 s limit, so the
    check does not depend on how fast a loaded machine runs the program itself."""
    import time

    import turnpress.lisp.context as context
    from turnpress.lisp import Limits

    class Clock:
        """The sandbox's view of ``time``: real monotonic time plus the tools' time."""

        def __init__(self) -> None:
            self.tools_s = 0.0

        def monotonic(self) -> float:
            return time.monotonic() + self.tools_s

    clock = Clock()
    monkeypatch.setattr(context, "time", clock)

    def slow():
        clock.tools_s += 10.0
        return 1

    result = run_program("(+ (tool/slow) (tool/slow) (tool/slow))",
                         tools={"slow": Tool("slow", fn=slow)}, limits=Limits(timeout_s=2.0))
    assert result.success and result.value == 3 and len(result.tool_calls) == 3
    busy = run_program("(tool/slow) (loop [i 0] (recur (inc i)))",
                       tools={"slow": Tool("slow", fn=slow)},
                       limits=Limits(timeout_s=0.1, max_steps=10**12))
    assert busy.failure.reason == "timeout" and len(busy.tool_calls) == 1
