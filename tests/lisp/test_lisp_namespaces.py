"""tool/, data/ and user/ namespaces and the bare-name fallback (NS-001..NS-007, NS-009)."""

from __future__ import annotations

from turnpress import Keyword, Tool, ToolCall
from turnpress.lisp import run_program

K = Keyword


def search(query: str, limit: int = 10) -> list[dict]:
    """Search products."""
    return [{"name": f"{query}-{i}"} for i in range(min(limit, 2))]


TOOLS = {"search": Tool.from_function(search)}
DATA = {"products": [{"name": "Laptop", "price": 1200}, {"name": "Mouse", "price": 25}]}


def test_ns_001_tool_namespace_calls_the_tool():
    """NS-001: (tool/NAME args) calls the tool and records the call."""
    result = run_program('(tool/search "lamp" 1)', tools=TOOLS)
    assert result.value == [{"name": "lamp-0"}]
    assert result.tool_calls == (ToolCall("search", ("lamp", 1), [{"name": "lamp-0"}]),)


def test_ns_002_data_namespace_reads_input_data():
    """NS-002: data/NAME is the input value, read-only."""
    result = run_program("(map :name data/products)", data=DATA)
    assert result.value == ["Laptop", "Mouse"]
    assert DATA["products"][0] == {"name": "Laptop", "price": 1200}


def test_ns_003_user_namespace_holds_definitions():
    """NS-003: definitions live in user/ and persist in memory."""
    result = run_program("(def total 3) (defn f [] total) [user/total (user/f)]")
    assert result.value == [3, 3]
    assert list(result.memory) == ["total", "f"]
    assert run_program("user/nope").failure.reason == "undefined_symbol"


def test_ns_004_bare_name_falls_back_to_tool():
    """NS-004: a bare name with no local definition resolves to tool/NAME."""
    result = run_program('(search "desk" 2)', tools=TOOLS)
    assert result.value == [{"name": "desk-0"}, {"name": "desk-1"}]
    assert [c.name for c in result.tool_calls] == ["search"]
    as_value = run_program('(map search ["a" "b"])', tools=TOOLS)
    assert [c.args for c in as_value.tool_calls] == [("a",), ("b",)]
    assert run_program('((first [search]) "z")', tools=TOOLS).tool_calls[0].args == ("z",)


def test_ns_005_bare_name_falls_back_to_data():
    """NS-005: a bare name with no local definition resolves to data/NAME."""
    assert run_program("(count products)", data=DATA).value == 2
    assert run_program("(products 0)", data={"products": ["a"]}).value == "a"


def test_ns_006_local_definitions_take_precedence():
    """NS-006: locals and user definitions win over the tool/data fallback."""
    result = run_program("(def products [1]) (count products)", data=DATA)
    assert result.value == 1
    assert run_program("(let [search inc] (search 1))", tools=TOOLS).value == 2
    shadow_tool = run_program('(defn search [q] [:mine q]) (search "x")', tools=TOOLS)
    assert shadow_tool.value == [K("mine"), "x"] and shadow_tool.tool_calls == ()
    assert run_program("(defn count [x] :mine) (count [1 2])").value == K("mine")


def test_ns_007_ambiguous_reference():
    """NS-007: a bare name that is both tool/foo and data/foo is an ambiguous_reference."""
    tools = {"foo": Tool("foo", fn=lambda: 1)}
    data = {"foo": [1, 2]}
    for program in ("foo", "(foo)", "(map foo [1])", "(count foo)"):
        result = run_program(program, tools=tools, data=data)
        assert result.failure.reason == "ambiguous_reference", program
        assert "tool/foo" in result.failure.message and "data/foo" in result.failure.message
        assert result.tool_calls == ()
    explicit = run_program("[(tool/foo) (count data/foo)]", tools=tools, data=data)
    assert explicit.value == [1, 2]
    defined = run_program("(def foo 5) foo", tools=tools, data=data)
    assert defined.value == 5


def test_ns_009_explicit_namespace_bypasses_shadowing():
    """NS-009: data/foo reaches the input even when foo is shadowed by a def or a local."""
    result = run_program("(def products []) [(count products) (count data/products)]",
                         data=DATA)
    assert result.value == [0, 2]
    local = run_program("(let [products nil] (count data/products))", data=DATA)
    assert local.value == 2
    tool = run_program('(defn search [q] :mine) (tool/search "q" 1)', tools=TOOLS)
    assert tool.value == [{"name": "q-0"}]
    nxt = run_program("[(count products) (count data/products)]", data=DATA,
                      memory=result.memory)
    assert nxt.value == [0, 2]


def test_unknown_namespaced_names_list_what_exists():
    missing_data = run_program("data/nope", data=DATA)
    assert missing_data.failure.reason == "undefined_symbol"
    assert "no data named 'nope'" in missing_data.failure.message
    assert "products" in missing_data.failure.message
    missing_tool = run_program("(tool/nope 1)", tools=TOOLS)
    assert missing_tool.failure.reason == "undefined_symbol"
    assert "no tool named 'nope'" in missing_tool.failure.message
    assert "search" in missing_tool.failure.message
    assert run_program("(tool/nope)").failure.message.endswith("(tools: none)")


def test_undefined_symbols_and_unsupported_clojure():
    assert run_program("undefined-thing").failure.message == (
        "undefined symbol 'undefined-thing'")
    err = run_program("(swap! a inc)").failure
    assert err.reason == "undefined_symbol" and "atoms are not supported" in err.message
    assert run_program('(slurp "/etc/passwd")').failure.reason == "undefined_symbol"
    assert run_program("(java.lang.System/exit 0)").failure.reason == "undefined_symbol"
    assert run_program("(.toUpperCase \"a\")").failure.reason == "undefined_symbol"


def test_library_namespaces():
    assert run_program('(clojure.string/upper-case "a")').value == "A"
    assert run_program('(str/join "," [1 2])').value == "1,2"
    assert run_program("(clojure.core/inc 1)").value == 2
    assert run_program("(clojure.string/nope 1)").failure.reason == "undefined_symbol"
    assert run_program("(map clojure.string/upper-case [\"a\"])").value == ["A"]
    shadowed = run_program('(defn join [& xs] :mine) (clojure.string/join "," [1])')
    assert shadowed.value == "1"
