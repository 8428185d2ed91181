"""Build the example traces bundled in ``turnpress/examples/``.

Run ``python scripts/build_example_traces.py`` after changing it; the JSON files
it writes are committed. The traces follow the scenarios of spec 01.
"""

from __future__ import annotations

from pathlib import Path

from turnpress import Failure, Fn, Keyword, Memory, Tool, ToolCall, Trace, Turn, save_trace

OUT = Path(__file__).resolve().parent.parent / "turnpress" / "examples"
SYSTEM = ("You are a PTC-Lisp agent. Each turn, reply with one ```clojure block. "
          "Call tools as (tool/name ...), read input as data/name, end with (return x) "
          "or (fail reason).")


def fence(program: str, prose: str = "") -> str:
    return (prose + "\n\n" if prose else "") + f"```clojure\n{program}\n```"


def product_research() -> Trace:
    products = [
        {"name": "Laptop", "price": 1200, "category": "Electronics", "rating": 4.5},
        {"name": "Mouse", "price": 25, "category": "Electronics", "rating": 3.2},
        {"name": "Monitor", "price": 300, "category": "Electronics", "rating": 4.7},
        {"name": "Keyboard", "price": 75, "category": "Electronics", "rating": 4.1},
        {"name": "Desk", "price": 450, "category": "Furniture", "rating": 4.0},
        {"name": "Chair", "price": 180, "category": "Furniture", "rating": 3.9},
        {"name": "Lamp", "price": 40, "category": "Furniture", "rating": 4.4},
    ]
    electronics = products[:4]
    reviews = ("Customer Review Summary for Electronics:\n- Laptop: Average rating 4.5/5. "
               "Fast, great battery.\n- Mouse: Average rating 3.2/5. Scroll wheel breaks.\n"
               "- Monitor: Average rating 4.7/5. Sharp colours.\n"
               "- Keyboard: Average rating 4.1/5. Quiet keys.")
    inventory = ("Warehouse Inventory Report (as of Monday):\nLaptop - 23 units in stock\n"
                 "Mouse - OUT OF STOCK\nMonitor - 8 units in stock\nKeyboard - 41 units in stock")
    tools = {
        "search-reviews": Tool("search-reviews", {"category": "string"}, "string",
                               "Search customer reviews by product category"),
        "get-inventory": Tool("get-inventory", {}, "string", "Warehouse inventory report"),
    }
    p1 = ('(def electronics (filter (fn [p] (= (:category p) "Electronics")) data/products))\n'
          '(def reviews (tool/search-reviews "Electronics"))\n'
          "(def inventory (tool/get-inventory))")
    m1 = {"electronics": electronics, "reviews": reviews, "inventory": inventory}
    t1 = Turn.succeeded(1, p1, inventory, memory=m1,
                        tool_calls=[ToolCall("search-reviews", ("Electronics",), reviews),
                                    ToolCall("get-inventory", (), inventory)],
                        raw_response=fence(p1, "First I collect the electronics, their reviews "
                                               "and the inventory."))
    p2 = '(println "Reviews:" reviews)\n(println "Inventory:" inventory)'
    t2 = Turn.succeeded(2, p2, None, memory=m1,
                        prints=[f"Reviews: {reviews}", f"Inventory: {inventory}"],
                        raw_response=fence(p2, "Let me read the reports in full."))
    p3 = ('(def in-stock (remove (fn [p] (includes? inventory (str (:name p) " - OUT")))\n'
          "                      electronics))\n"
          "(def well-reviewed (filter (fn [p] (>= (:rating p) 4.0)) in-stok))\n"
          "(return (map :name well-reviewed))")
    m3 = {**m1, "in-stock": [p for p in electronics if p["name"] != "Mouse"]}
    t3 = Turn.failed(3, p3, Failure("undefined_symbol", "undefined symbol 'in-stok'"),
                     memory=m3, raw_response=fence(p3))
    p4 = ('(defn good? "Rating of at least 4; in stock" [p] (>= (:rating p) 4.0))\n'
          "(def well-reviewed (filter good? in-stock))\n"
          "(return (map :name well-reviewed))")
    result = ["Laptop", "Monitor", "Keyboard"]
    m4 = Memory({**m3, "good?": Fn(("p",), "Rating of at least 4 in stock", "boolean"),
                 "well-reviewed": [p for p in m3["in-stock"] if p["rating"] >= 4.0]})
    t4 = Turn.succeeded(4, p4, result, memory=m4,
                        raw_response=fence(p4, "Fixing the typo."))
    return Trace(mission="Find well-reviewed electronics that are in stock",
                 turns=(t1, t2, t3, t4), system_prompt=SYSTEM, max_turns=6, tools=tools,
                 data={"products": products}, name="product-research")


def phone_campaign() -> Trace:
    contacts = [
        {"name": "Alice", "phone": "+1-555-0101", "team": "sales"},
        {"name": "Bob", "phone": "+1-555-0102", "team": "sales"},
        {"name": "Carol", "phone": "+1-555-0103", "team": "ops"},
        {"name": "Dan", "phone": None, "team": "ops"},
        {"name": "Eve", "phone": "+1-555-0105", "team": "ops"},
    ]
    tools = {
        "make-call": Tool("make-call", {"call": "map"}, "nil",
                          "Call a number and leave a voice message"),
        "send-email": Tool("send-email", {"email": "map"}, "nil", "Send an email"),
        "lookup-email": Tool("lookup-email", {"name": "string"}, "string",
                             "Find a person's email address"),
    }
    kw = Keyword

    def call(name: str, phone: str) -> ToolCall:
        return ToolCall("make-call", ({kw("to"): phone,
                                       kw("message"): f"Hi {name}, the meeting moved to 3pm"},))

    p1 = ('(def callable (filter :phone data/contacts))\n'
          '(doseq [c (take 2 callable)]\n'
          '  (tool/make-call {:to (:phone c) :message (str "Hi " (:name c) '
          '", the meeting moved to 3pm")}))')
    callable_ = [c for c in contacts if c["phone"]]
    t1 = Turn.succeeded(1, p1, None, memory={"callable": callable_},
                        tool_calls=[call("Alice", "+1-555-0101"), call("Bob", "+1-555-0102")],
                        raw_response=fence(p1, "Calling the first two contacts."))
    p2 = ('(doseq [c (drop 2 callable)]\n'
          '  (tool/make-call {:to (:phone c) :message (str "Hi " (:name c) '
          '", the meeting moved to 3pm")}))\n'
          '(println "called" (count callable) "of" (count data/contacts))')
    t2 = Turn.succeeded(2, p2, None, memory={"callable": callable_},
                        prints=["called 4 of 5"],
                        tool_calls=[call("Carol", "+1-555-0103"), call("Eve", "+1-555-0105")],
                        raw_response=fence(p2))
    p3 = ('(def dan-email (tool/lookup-email "Dan"))\n'
          '(tool/send-email {:to dan-email :subject "Meeting moved" :body dan-email})')
    t3 = Turn.failed(3, p3, Failure("tool_error",
                                    "tool 'lookup-email' failed: LookupError: no email for 'Dan'"),
                     memory={"callable": callable_},
                     tool_calls=[ToolCall("lookup-email", ("Dan",), None)],
                     raw_response=fence(p3, "Dan has no phone; I will email him."))
    p4 = ('(tool/send-email {:to "ops-team@example.com" :subject "Meeting moved"\n'
          '                  :body "Please tell Dan: the meeting moved to 3pm."})\n'
          '(return {:called 4 :emailed ["ops-team@example.com"]})')
    t4 = Turn.succeeded(
        4, p4, {kw("called"): 4, kw("emailed"): ["ops-team@example.com"]},
        memory={"callable": callable_},
        tool_calls=[ToolCall("send-email", ({kw("to"): "ops-team@example.com",
                                             kw("subject"): "Meeting moved",
                                             kw("body"): "Please tell Dan: the meeting moved "
                                                         "to 3pm."},))],
        raw_response=fence(p4, "Falling back to the team address."))
    return Trace(mission="Tell every contact that the meeting moved to 3pm: call those with a "
                         "phone, email the others",
                 turns=(t1, t2, t3, t4), system_prompt=SYSTEM, max_turns=5, tools=tools,
                 data={"contacts": contacts}, name="phone-campaign")


def inventory_audit() -> Trace:
    """A long run (14 turns) that overflows the println (15) and tool-call (20) limits."""
    warehouses = [f"WH-{i}" for i in range(1, 8)]
    skus = [f"SKU-{100 + i}" for i in range(12)]
    tools = {
        "count-stock": Tool("count-stock", {"warehouse": "string", "sku": "string"}, "integer",
                            "Count units of a SKU in a warehouse"),
        "flag-discrepancy": Tool("flag-discrepancy", {"report": "map"}, "nil",
                                 "File a discrepancy report for a SKU"),
        "get-ledger": Tool("get-ledger", {"warehouse": "string"}, "map",
                           "Book stock per SKU for a warehouse"),
    }
    data = {"warehouses": warehouses, "skus": skus,
            "tolerance": 2, "audit": {"id": "AUD-2026-11", "owner": "finance"}}
    turns: list[Turn] = []
    memory: dict = {}
    docs: dict = {}
    number = 0

    def add(program: str, *, prints=(), calls=(), result=None, failure=None, prose=""):
        nonlocal number
        number += 1
        mem = Memory(dict(memory), docs=dict(docs))
        raw = fence(program, prose)
        if failure:
            turns.append(Turn.failed(number, program, failure, memory=mem, prints=prints,
                                     tool_calls=calls, raw_response=raw))
        else:
            turns.append(Turn.succeeded(number, program, result, memory=mem, prints=prints,
                                        tool_calls=calls, raw_response=raw))

    def booked(w: int, s: int) -> int:
        return 40 + (w * 7 + s * 3) % 25

    def counted(w: int, s: int) -> int:
        return booked(w, s) - (3 if (w + s) % 5 == 0 else 0)

    memory["ledgers"] = {}
    docs["ledgers"] = "Book stock per warehouse; from get-ledger"
    calls = []
    for wi, w in enumerate(warehouses[:4]):
        ledger = {s: booked(wi, si) for si, s in enumerate(skus)}
        memory["ledgers"] = {**memory["ledgers"], w: ledger}
        calls.append(ToolCall("get-ledger", (w,), ledger))
    add('(def ledgers "Book stock per warehouse; from get-ledger"\n'
        '  (into {} (map (fn [w] [w (tool/get-ledger w)]) (take 4 data/warehouses))))',
        calls=calls, prose="Start with the ledgers of the first four warehouses.")
    calls = []
    for wi, w in enumerate(warehouses[4:], 4):
        ledger = {s: booked(wi, si) for si, s in enumerate(skus)}
        memory["ledgers"] = {**memory["ledgers"], w: ledger}
        calls.append(ToolCall("get-ledger", (w,), ledger))
    add('(def ledgers (merge ledgers (into {} (map (fn [w] [w (tool/get-ledger w)])\n'
        '                                      (drop 4 data/warehouses)))))\n'
        '(println "ledgers for" (count ledgers) "warehouses")',
        prints=["ledgers for 7 warehouses"], calls=calls)
    memory["off-by"] = Fn(("booked", "counted"), "Units missing; negative when extra",
                          "integer")
    add('(defn off-by "Units missing; negative when extra" [booked counted]\n'
        "  (- booked counted))\n(println (off-by 10 7))", prints=["3"])
    memory["findings"] = []
    docs["findings"] = "Discrepancies found so far"
    for wi, w in enumerate(warehouses):
        calls, prints = [], []
        for si, s in enumerate(skus[:6] if wi % 2 == 0 else skus[6:]):
            if wi % 2:
                si += 6
            n = counted(wi, si)
            calls.append(ToolCall("count-stock", (w, s), n))
            diff = booked(wi, si) - n
            if diff > data["tolerance"]:
                memory["findings"] = [*memory["findings"],
                                      {"warehouse": w, "sku": s, "missing": diff}]
                prints.append(f"{w} {s}: booked {booked(wi, si)}, counted {n}, missing {diff}")
        prints.append(f"{w}: checked {len(calls)} SKUs, {len(memory['findings'])} findings "
                      f"so far")
        half = "(take 6 data/skus)" if wi % 2 == 0 else "(drop 6 data/skus)"
        program = (f'(doseq [s {half}]\n'
                   f'  (let [n (tool/count-stock "{w}" s)\n'
                   f'        d (off-by (get-in ledgers ["{w}" s]) n)]\n'
                   f"    (when (> d data/tolerance)\n"
                   f'      (def findings (conj findings {{:warehouse "{w}" :sku s '
                   f":missing d}}))\n"
                   f'      (println "{w}" s ": booked" (get-in ledgers ["{w}" s]) '
                   f'", counted" n ", missing" d))))\n'
                   f'(println "{w}: checked" {len(calls)} "SKUs," (count findings) '
                   f'"findings so far")')
        memory["off-by"] = Fn(("booked", "counted"), "Units missing; negative when extra",
                              "integer")
        if wi == 3:
            add(program.replace("get-in ledgers", "get-in ledger"),
                failure=Failure("undefined_symbol", "undefined symbol 'ledger' (did you mean "
                                                    "'ledgers'?)"), calls=calls[:1])
        add(program, prints=prints, calls=calls)
    report_calls = [ToolCall("flag-discrepancy", ({Keyword("audit"): "AUD-2026-11",
                                                   Keyword("warehouse"): f["warehouse"],
                                                   Keyword("sku"): f["sku"],
                                                   Keyword("missing"): f["missing"]},))
                    for f in memory["findings"]]
    add("(doseq [f findings]\n  (tool/flag-discrepancy (assoc f :audit (:id data/audit))))\n"
        '(println "flagged" (count findings) "discrepancies")',
        prints=[f"flagged {len(memory['findings'])} discrepancies"], calls=report_calls)
    total = sum(f["missing"] for f in memory["findings"])
    add(f"(return {{:findings (count findings) :missing-units {total}}})",
        result={Keyword("findings"): len(memory["findings"]), Keyword("missing-units"): total})
    return Trace(mission="Audit stock in every warehouse against the ledger and flag each "
                         "discrepancy above the tolerance",
                 turns=tuple(turns), system_prompt=SYSTEM, max_turns=16, tools=tools,
                 data=data, name="inventory-audit")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for build in (product_research, phone_campaign, inventory_audit):
        trace = build()
        path = OUT / f"{trace.name}.json"
        save_trace(trace, path)
        print(f"wrote {path.relative_to(OUT.parent.parent)}: {len(trace.turns)} turns, "
              f"{sum(len(t.tool_calls) for t in trace.turns)} tool calls, "
              f"{sum(len(t.prints) for t in trace.turns)} println calls")


if __name__ == "__main__":
    main()
