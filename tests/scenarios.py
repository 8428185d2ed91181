"""The scenarios of spec 01, as turn histories every strategy is rendered against.

Each scenario is the state just before the next LLM call: the turns so far and the
turns left. Snapshot tests render each one with each strategy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from turnpress import Failure, Fn, Keyword, Memory, Tool, ToolCall, Turn

SYSTEM_PROMPT = "You are a PTC-Lisp agent. Reply with one ```clojure block."

PRODUCTS = [
    {"name": "Laptop", "price": 1200, "category": "Electronics"},
    {"name": "Mouse", "price": 25, "category": "Electronics"},
    {"name": "Monitor", "price": 300, "category": "Electronics"},
    {"name": "Keyboard", "price": 75, "category": "Electronics"},
    {"name": "Desk", "price": 450, "category": "Furniture"},
    {"name": "Chair", "price": 180, "category": "Furniture"},
    {"name": "Lamp", "price": 40, "category": "Furniture"},
]
ELECTRONICS = PRODUCTS[:4]
REVIEWS = ("Customer Review Summary for Electronics:\n- Laptop: Average rating 4.5/5\n"
           "- Mouse: Average rating 3.2/5\n- Monitor: Average rating 4.7/5\n"
           "- Keyboard: Average rating 4.1/5")
INVENTORY = ("Warehouse Inventory Report (as of Monday):\nLaptop - 23 units in stock\n"
             "Mouse - OUT OF STOCK\nMonitor - 8 units in stock\nKeyboard - 41 units in stock")

SHOP_TOOLS = {
    "search-reviews": Tool("search-reviews", {"category": "string"}, "string",
                           "Search customer reviews by product category"),
    "get-inventory": Tool("get-inventory", {}, "string", "Warehouse inventory report"),
}
PHONE_TOOLS = {
    "make-call": Tool("make-call", {"call": "map"}, "nil",
                      "Place a phone call and leave a message"),
    "send-email": Tool("send-email", {"email": "map"}, "nil", "Send an email"),
}


@dataclass(frozen=True)
class Scenario:
    """A history to render: turns so far, and what the next prompt is rendered with."""

    name: str
    turns: tuple[Turn, ...]
    turns_left: int
    mission: str = "Find well-reviewed products in stock"
    tools: dict[str, Tool] = field(default_factory=lambda: dict(SHOP_TOOLS))
    data: dict[str, Any] = field(default_factory=lambda: {"products": PRODUCTS})
    system_prompt: str = SYSTEM_PROMPT

    def render_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``turnpress.render`` (besides turns and compression)."""
        return {"mission": self.mission, "system_prompt": self.system_prompt,
                "tools": self.tools, "data": self.data, "turns_left": self.turns_left}


def first_turn() -> Scenario:
    """Turn 1: nothing ran yet (NS-010: no user/ section)."""
    return Scenario("first_turn", (), turns_left=5)


def exploration() -> Scenario:
    """Exploration mode: no println, so user/ values show samples (SAM-001)."""
    memory = {"electronics": ELECTRONICS, "reviews": REVIEWS, "inventory": INVENTORY}
    turn = Turn.succeeded(
        1,
        '(def electronics (filter (fn [p] (= (:category p) "Electronics")) data/products))\n'
        '(def reviews (tool/search-reviews "Electronics"))\n'
        "(def inventory (tool/get-inventory))",
        INVENTORY, memory=memory,
        tool_calls=[ToolCall("search-reviews", ("Electronics",), REVIEWS),
                    ToolCall("get-inventory", (), INVENTORY)],
        raw_response="Let me look at the data first.\n\n```clojure\n"
        '(def electronics (filter (fn [p] (= (:category p) "Electronics")) data/products))\n'
        '(def reviews (tool/search-reviews "Electronics"))\n'
        "(def inventory (tool/get-inventory))\n```",
    )
    return Scenario("exploration", (turn,), turns_left=4)


def println_mode() -> Scenario:
    """Explicit mode: the agent printed, so user/ shows types only and Output shows
    the prints (SAM-002)."""
    memory = {"electronics": ELECTRONICS, "reviews": REVIEWS, "inventory": INVENTORY}
    program = (
        '(def electronics (filter (fn [p] (= (:category p) "Electronics")) data/products))\n'
        '(def reviews (tool/search-reviews "Electronics"))\n'
        "(def inventory (tool/get-inventory))\n"
        '(println "Reviews:" reviews)\n(println "Inventory:" inventory)'
    )
    turn = Turn.succeeded(
        1, program, None, memory=memory,
        prints=[f"Reviews: {REVIEWS}", f"Inventory: {INVENTORY}"],
        tool_calls=[ToolCall("search-reviews", ("Electronics",), REVIEWS),
                    ToolCall("get-inventory", (), INVENTORY)],
    )
    return Scenario("println_mode", (turn,), turns_left=4)


def side_effects() -> Scenario:
    """Side-effect tools returning nil are still listed as tool calls (TC-001)."""
    t1 = Turn.succeeded(
        1,
        '(tool/make-call {:to "Alice" :message "Meeting at 3pm"})\n'
        '(tool/make-call {:to "Bob" :message "Bring documents"})',
        None, memory={},
        tool_calls=[
            ToolCall("make-call",
                     ({Keyword("to"): "Alice", Keyword("message"): "Meeting at 3pm"},)),
            ToolCall("make-call",
                     ({Keyword("to"): "Bob", Keyword("message"): "Bring documents"},)),
        ],
    )
    t2 = Turn.succeeded(
        2, '(tool/send-email {:to "team@example.com" :subject "Update"})', None, memory={},
        tool_calls=[ToolCall("send-email", ({Keyword("to"): "team@example.com",
                                             Keyword("subject"): "Update"},))],
    )
    return Scenario("side_effects", (t1, t2), turns_left=3,
                    mission="Call Alice and Bob about the meeting, then email the team",
                    tools=dict(PHONE_TOOLS), data={"team": ["Alice", "Bob"]})


def redefinition_same_turn() -> Scenario:
    """DEF-001: ``(def x 1) (def x 2)`` in one turn shows only the final value."""
    turn = Turn.succeeded(1, "(def x 1)\n(def x 2)", 2, memory={"x": 2})
    return Scenario("redefinition_same_turn", (turn,), turns_left=4)


def redefinition_across_turns() -> Scenario:
    """DEF-002/DEF-009: a later turn's redefinition wins and keeps its first place."""
    double = Fn(("x",), "Doubles x", "integer")
    t1 = Turn.succeeded(
        1, '(def threshold 100)\n(def label "cheap")\n(defn double "Doubles x" [x] (* 2 x))',
        None, memory={"threshold": 100, "label": "cheap", "double": Fn(("x",), "Doubles x")})
    t2 = Turn.succeeded(
        2, "(def threshold 250)\n(def picked (double 3))", 6,
        memory={"threshold": 250, "label": "cheap", "double": double, "picked": 6})
    return Scenario("redefinition_across_turns", (t1, t2), turns_left=3)


def docstrings() -> Scenario:
    """DEF-005/DEF-007: docstrings on defn and def; semicolons are removed."""
    fetch = Fn(("category",), "Fetches users by category; returns list of user maps",
               "list[5]")
    users = [{"name": n, "role": "admin"} for n in ("Alice", "Bob", "Carol", "Dan", "Eve")]
    memory = Memory(
        {"fetch-users": fetch, "helper": Fn(("x",), "Doubles x; simple"), "bare": Fn(("x",)),
         "users": users, "flag": True},
        docs={"users": "Active users; from the API"},
    )
    turn = Turn.succeeded(
        1,
        '(defn fetch-users "Fetches users by category; returns list of user maps" [category]\n'
        '  (tool/list-users category))\n'
        '(defn helper "Doubles x; simple" [x] (* 2 x))\n(defn bare [x] x)\n'
        '(def users "Active users; from the API" (fetch-users "admin"))\n(def flag true)',
        True, memory=memory,
        tool_calls=[ToolCall("list-users", ("admin",), users)],
    )
    tools = {"list-users": Tool("list-users", {"category": "string"}, "list",
                                "List users in a category")}
    return Scenario("docstrings", (turn,), turns_left=4, mission="Find the admin users",
                    tools=tools, data={})


def nil_and_empty() -> Scenario:
    """DEF-003/DEF-004: nil and empty values show no sample."""
    turn = Turn.succeeded(
        1, "(def result nil)\n(def items [])\n(def index {})\n(def tags #{})\n(def name \"\")",
        None, memory={"result": None, "items": [], "index": {}, "tags": frozenset(), "name": ""})
    return Scenario("nil_and_empty", (turn,), turns_left=4,
                    data={"products": PRODUCTS, "discounts": [], "config": None})


def _fetch_turn() -> Turn:
    users = [{"id": i, "name": n} for i, n in enumerate(["Ann", "Ben", "Cy", "Di", "Ed"], 1)]
    return Turn.succeeded(
        1, '(def users (tool/fetch-data "users"))', users, memory={"users": users},
        tool_calls=[ToolCall("fetch-data", ("users",), users)])


FETCH_TOOLS = {"fetch-data": Tool("fetch-data", {"resource": "string"}, "list",
                                  "Fetch a resource by name")}


def failed_then_recovered() -> Scenario:
    """ERR-001/CMP-002: a failed turn, then a successful one; the error is gone once
    recovered (errors="last")."""
    t1 = _fetch_turn()
    t2 = Turn.failed(2, "(def x (broken-code))",
                     Failure("undefined_symbol", "undefined symbol 'broken-code'"),
                     memory=t1.memory,
                     raw_response="```clojure\n(def x (broken-code))\n```")
    t3 = Turn.succeeded(3, "(def active (filter (fn [u] (< (:id u) 4)) users))",
                        None, memory={**t1.memory, "active": list(t1.memory["users"])[:3]})
    return Scenario("failed_then_recovered", (t1, t2, t3), turns_left=2,
                    mission="Find the active users", tools=dict(FETCH_TOOLS), data={})


def failed_once() -> Scenario:
    """ERR-003: the last turn failed; its program and error are shown."""
    t1 = _fetch_turn()
    t2 = Turn.failed(2, "(def x (broken-code))",
                     Failure("undefined_symbol", "undefined symbol 'broken-code'"),
                     memory=t1.memory,
                     raw_response="```clojure\n(def x (broken-code))\n```")
    return Scenario("failed_once", (t1, t2), turns_left=3, mission="Find the active users",
                    tools=dict(FETCH_TOOLS), data={})


def failed_in_a_row() -> Scenario:
    """ERR-002: two failed turns in a row after a successful one."""
    t1 = _fetch_turn()
    t2 = Turn.failed(2, "(def x (broken-code))",
                     Failure("undefined_symbol", "undefined symbol 'broken-code'"),
                     memory=t1.memory, raw_response="```clojure\n(def x (broken-code))\n```")
    t3 = Turn.failed(
        3, '(def ids (map :id users))\n(tool/fetch-data "orders" ids)',
        Failure("tool_error", "tool 'fetch-data' failed: takes 1 argument, got 2"),
        memory={**t1.memory, "ids": [1, 2, 3, 4, 5]},
        tool_calls=[ToolCall("fetch-data", ("orders", [1, 2, 3, 4, 5]))],
        raw_response="Retrying with ids.\n```clojure\n(def ids (map :id users))\n"
                     '(tool/fetch-data "orders" ids)\n```')
    return Scenario("failed_in_a_row", (t1, t2, t3), turns_left=2,
                    mission="Find the active users", tools=dict(FETCH_TOOLS), data={})


def final_turn() -> Scenario:
    """MSG-005: with one turn left the prompt demands (return ...) or (fail ...)."""
    scenario = exploration()
    t2 = Turn.succeeded(2, '(println (count electronics) "electronics")', None,
                        memory=scenario.turns[0].memory, prints=["4 electronics"])
    return Scenario("final_turn", (*scenario.turns, t2), turns_left=1)


def many_prints() -> Scenario:
    """TRN-006/TRN-009/TRN-010: 25 println calls over 5 turns, one multi-line; only the
    last 15 calls are shown."""
    turns = []
    n = 0
    for t in range(1, 6):
        prints = []
        for _ in range(5):
            n += 1
            prints.append(f"line {n}" if n != 22 else "line 22 part a\nline 22 part b")
        turns.append(Turn.succeeded(t, f'(doseq [i (range 5)] (println "line" i)) ; batch {t}',
                                    None, memory={"batch": t}, prints=prints))
    return Scenario("many_prints", tuple(turns), turns_left=5, mission="Print progress",
                    tools={}, data={})


def many_tool_calls() -> Scenario:
    """TC-002/TC-007: 30 tool calls over 3 turns; only the last 20 are shown."""
    turns = []
    for t in range(1, 4):
        calls = [ToolCall("lookup", (f"item-{(t - 1) * 10 + i}", (t - 1) * 10 + i), None)
                 for i in range(1, 11)]
        turns.append(Turn.succeeded(t, f'(doseq [i (range 10)] (tool/lookup (str "item-" i) i))'
                                       f" ; batch {t}", None, memory={}, tool_calls=calls))
    tools = {"lookup": Tool("lookup", {"key": "string", "n": "integer"}, "nil",
                            "Look an item up")}
    return Scenario("many_tool_calls", tuple(turns), turns_left=2, mission="Look up 30 items",
                    tools=tools, data={})


def long_arguments() -> Scenario:
    """TRN-003/TRN-004/TRN-005: long tool arguments and samples are truncated."""
    rows = [{"id": i, "text": "x" * 200} for i in range(50)]
    t1 = Turn.succeeded(
        1, "(def rows (tool/search (apply str (repeat 100 \"long query \")) 50))", None,
        memory={"rows": rows, "note": "y" * 300},
        tool_calls=[ToolCall("search", ("long query " * 100, 50, list(range(1000))), rows)])
    tools = {"search": Tool("search", {"query": "string", "limit": "integer"}, "list",
                            "Search products")}
    return Scenario("long_arguments", (t1,), turns_left=4, mission="Search for everything",
                    tools=tools, data={"numbers": list(range(100))})


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    f.__name__: f
    for f in (first_turn, exploration, println_mode, side_effects, redefinition_same_turn,
              redefinition_across_turns, docstrings, nil_and_empty, failed_once,
              failed_then_recovered, failed_in_a_row, final_turn, many_prints, many_tool_calls,
              long_arguments)
}
