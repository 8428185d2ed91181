"""``LANGUAGE_REFERENCE``: the PTC-Lisp reference an LLM reads in its system prompt.

The prose and the special forms are written here; the list of built-in functions
is generated from the library registry (each built-in's one-line summary), so it
always matches what the interpreter implements.
"""

from __future__ import annotations

from turnpress.lisp.library import CATEGORIES, CORE, QUALIFIED
from turnpress.lisp.values import CoreFn

__all__ = ["LANGUAGE_REFERENCE", "SPECIAL_FORM_DOCS"]

_INTRO = """\
PTC-Lisp language reference
===========================
PTC-Lisp is a small subset of Clojure. A program is a sequence of forms evaluated
in order; the value of the last form is the program's result.

Values
- nil, true, false; integers 42; floats 3.14; strings "a \\"quoted\\" word\\n"
  (escapes \\" \\\\ \\n \\t); keywords :name.
- Vectors [1 2 3] (lists are the same: '(1 2 3)), maps {:a 1 "b" 2}, sets #{1 2}.
  Commas are whitespace; ; starts a comment.
- Only nil and false are falsey: 0, "" and [] are truthy.
- Values never change: assoc, conj, update... return new values.
- Everything is eager: there are no lazy or endless sequences, (range) needs an end.
- = is value equality and (= 1 1.0) is false; use == to compare numbers of
  different types. (/ 7 2) is 3.5 and (/ 6 2) is 3 (no ratios).
- Keywords and maps are functions: (:name p), (:name p "default"), ({:a 1} :a).
  A keyword also finds the string key of the same name when the keyword key is
  absent, so (:name p) works on data with string keys; get, get-in, contains?,
  select-keys, assoc, update, dissoc and {:keys [...]} destructuring do the same.
- Maps keep insertion order. Strings are sequences of one-character strings.

Namespaces
- (tool/NAME arg ...) calls a tool. Tools have side effects and every call is
  recorded, so do not repeat calls needlessly.
- data/NAME is an input value (read-only).
- A bare name is looked up in order: local (let, fn parameters, loop) -> your own
  definitions -> core functions -> tool/NAME or data/NAME. So (search "x") calls
  tool/search and products reads data/products when you defined neither. If both
  tool/NAME and data/NAME exist, a bare NAME is an ambiguous_reference error:
  write the namespace. data/NAME always reaches the input, even after you
  (def NAME ...) yourself; user/NAME is your own definition.
- String functions also answer to clojure.string/NAME (or str/NAME), e.g.
  (clojure.string/join ", " xs); Math/floor, Math/ceil, Math/round, Math/sqrt,
  Math/pow, Math/abs, Integer/parseInt and Double/parseDouble exist too.

Definitions and memory
- (def name value) or (def name "docstring" value);
  (defn name "docstring" [params] body...). Docstrings are optional; write them,
  they are shown back to you (every ; is removed from them).
- Definitions persist into the next turn; redefining a name replaces its value.

Ending a program
- (return x) stops the program now with result x.
- (fail reason) stops the program now as a failure with that reason.
- Any error (unknown name, wrong argument types, a failing tool...) also ends the
  program; there is no try/catch.

Destructuring (in let, loop, fn/defn parameters, for, doseq, if-let, when-let)
- [a b & more :as all] binds items of a sequence (missing ones are nil).
- {:keys [a b] :strs [c] :or {a 1} :as m} binds map values; {x :x} binds one key.
- #(+ % %2) is (fn [%1 %2] (+ %1 %2)); %& is the rest of the arguments.

Not available
- No host access: no Java interop, files, network, environment, eval or require.
- No atoms or other mutable state: use let, loop/recur, reduce.
- No regular expressions except #"text" (a literal pattern), #"\\s+", and a
  literal with \\s* around it such as #"\\s*,\\s*" (in split and replace).

Limits
- Evaluation steps, recursion depth (nested calls of your functions), time and
  the size of created strings and collections are limited; exceeding a limit
  ends the program with an error naming the limit.
- println: each call is one output entry, cut at 2000 characters (a cut entry
  ends with ...); a program may print at most 1000 times.
"""

#: Syntax and meaning of each special form, in reference order.
SPECIAL_FORM_DOCS: dict[str, str] = {
    "def": "(def name value) / (def name \"doc\" value) -- define a global; gives the value",
    "defn": "(defn name \"doc\"? [params] body...) -- define a function",
    "fn": "(fn [params] body...) / (fn name [params] body...) / #(...) -- a function",
    "fn*": "same as fn",
    "let": "(let [name value ...] body...) -- local names, each seeing the previous",
    "let*": "same as let",
    "if": "(if test then else?) -- else defaults to nil",
    "if-not": "(if-not test then else?)",
    "when": "(when test body...) -- body if test is truthy, else nil",
    "when-not": "(when-not test body...)",
    "if-let": "(if-let [name value] then else?) -- then with name bound if value is truthy",
    "when-let": "(when-let [name value] body...)",
    "cond": "(cond test expr ... :else expr) -- the first truthy test's expr, else nil",
    "case": "(case x const expr ... (c1 c2) expr default?) -- match constants; no match "
            "and no default is an error",
    "do": "(do a b c) -- evaluate in order, give the last",
    "and": "(and a b ...) -- the first falsey value, else the last",
    "or": "(or a b ...) -- the first truthy value, else the last",
    "->": "(-> x (f a) g) is (g (f x a)) -- thread x as the first argument",
    "->>": "(->> x (f a) g) is (g (f a x)) -- thread x as the last argument",
    "loop": "(loop [name init ...] body...) -- with (recur new-values...) to go again",
    "recur": "(recur v ...) -- only as the last thing a loop or fn does; rebinds and "
             "repeats it",
    "for": "(for [x xs y ys :when test :let [z ...] :while test] expr) -- a list of results",
    "doseq": "(doseq [x xs ...] body...) -- like for, for side effects (println, tools); nil",
    "dotimes": "(dotimes [i n] body...) -- body for i from 0 to n-1; nil",
    "quote": "(quote form) or 'form -- the form as data: '(1 2) is [1 2]",
    "comment": "(comment ...) -- ignored; nil",
    "return": "(return x) -- stop the program now with result x",
    "fail": "(fail reason) -- stop the program now as a failure",
}


def _names_by_fn() -> list[tuple[CoreFn, list[str]]]:
    """Each built-in once, with its bare names (or, if it has none, its qualified ones)."""
    found: dict[int, tuple[CoreFn, list[str]]] = {}
    for name, fn in CORE.items():
        found.setdefault(id(fn), (fn, []))[1].append(name)
    for name, fn in QUALIFIED.items():
        entry = found.setdefault(id(fn), (fn, []))
        if fn.name not in CORE:
            entry[1].append(name)
    return list(found.values())


def _entry(fn: CoreFn, names: list[str]) -> str:
    """``USAGE -- DESCRIPTION``; a summary starting with ``(`` carries its own usage."""
    summary = fn.summary
    cut = summary.find("): ")
    if summary.startswith("(") and cut > 0:
        usage, description = summary[: cut + 1], summary[cut + 3 :]
    else:
        usage = "(" + " ".join([names[0], *fn.params]) + ")"
        description = summary
    also = f" (also: {', '.join(names[1:])})" if len(names) > 1 else ""
    return f"{usage} -- {description}{also}"


def _functions_section() -> str:
    by_category: dict[str, list[str]] = {key: [] for key in CATEGORIES}
    for fn, names in _names_by_fn():
        by_category[fn.category].append(_entry(fn, names))
    parts = ["Core functions", "=============="]
    for key, title in CATEGORIES.items():
        lines = sorted(by_category[key], key=lambda line: line.lstrip("("))
        if lines:
            parts += ["", title, *(f"- {line}" for line in lines)]
    return "\n".join(parts)


def _special_forms_section() -> str:
    lines = ["Special forms", "============="]
    lines += [f"- {name}: {doc}" for name, doc in SPECIAL_FORM_DOCS.items()]
    return "\n".join(lines)


#: The full plain-text reference (intro, special forms, core functions).
LANGUAGE_REFERENCE: str = "\n\n".join([_INTRO.rstrip(), _special_forms_section(),
                                      _functions_section()]) + "\n"
