"""The special forms: ``def defn fn let if when cond case do and or -> ->> loop recur
return fail`` and friends (``if-let when-let when-not if-not for doseq dotimes quote``).

Each compiler takes ``(compiler, form, scope, tail)`` and returns a node.
Malformed special forms are syntax errors pointing at the form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from turnpress.core.model import Keyword
from turnpress.lisp.destructure import Binder, compile_pattern
from turnpress.lisp.errors import LispError, ReturnSignal
from turnpress.lisp.forms import ListForm, MapForm, Symbol, VectorForm
from turnpress.lisp.nodes import (
    Node,
    Tail,
    const,
    is_literal,
    literal_value,
    symbols_in,
    weigh,
)
from turnpress.lisp.render import render_prefix
from turnpress.lisp.values import Recur, lisp_eq, seq

if TYPE_CHECKING:
    from turnpress.lisp.compiler import Compiler

__all__ = ["SPECIAL_FORMS"]

Env = dict[str, Any]
SpecialForm = Callable[["Compiler", ListForm, frozenset[str], "Tail | None"], Node]
SPECIAL_FORMS: dict[str, SpecialForm] = {}


def special(*names: str) -> Callable[[SpecialForm], SpecialForm]:
    """Register a special-form compiler under ``names``."""

    def register(fn: SpecialForm) -> SpecialForm:
        for name in names:
            SPECIAL_FORMS[name] = fn
        return fn

    return register


def _clean_doc(doc: str) -> str:
    """DEF-007: docstrings lose every ``;``."""
    return doc.replace(";", "")


def _def_name(c: Compiler, form: ListForm) -> str:
    if len(form) < 2 or not isinstance(form[1], Symbol) or form[1].ns is not None:
        raise c.syntax(form, f"{form[0].name} needs a plain name: ({form[0].name} name ...)")
    return form[1].name


# --- definitions -----------------------------------------------------------------------------


@special("def")
def def_(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(def name value)`` or ``(def name "doc" value)``."""
    name = _def_name(c, form)
    if len(form) not in (3, 4):
        raise c.syntax(form, "def expects (def name value) or (def name \"docstring\" value)")
    doc = None
    if len(form) == 4:
        if not isinstance(form[2], str):
            raise c.syntax(form, "the docstring of def must be a string")
        doc = _clean_doc(form[2])
    value = c.expr(form[-1], scope)
    ctx = c.ctx
    g, docs = ctx.globals, ctx.docs

    def def_node(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        v = value(env)
        g[name] = v
        if doc is None:
            docs.pop(name, None)
        else:
            docs[name] = doc
        return v

    return def_node


@special("defn")
def defn(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(defn name "doc"? [params] body...)``."""
    name = _def_name(c, form)
    i = 2
    doc = None
    if i < len(form) and isinstance(form[i], str):
        doc = _clean_doc(form[i])
        i += 1
    if i < len(form) and isinstance(form[i], MapForm):
        i += 1  # attribute map: ignored
    if i >= len(form):
        raise c.syntax(form, "defn needs a parameter vector: (defn name [params] body...)")
    if isinstance(form[i], ListForm):
        raise c.syntax(form, "multi-arity functions are not supported: use one parameter "
                             "vector (with & rest if needed)")
    make = c.make_fn(form, form[i], form[i + 1:], scope, name=name, doc=doc)
    ctx = c.ctx
    g, docs = ctx.globals, ctx.docs

    def defn_node(env: Env) -> Any:
        clo = make(env)
        g[name] = clo
        docs.pop(name, None)
        return clo

    return defn_node


@special("fn", "fn*")
def fn(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(fn name? [params] body...)``."""
    i = 1
    self_name = None
    if i < len(form) and isinstance(form[i], Symbol):
        self_name = form[i].name
        i += 1
    if i >= len(form):
        raise c.syntax(form, "fn needs a parameter vector: (fn [params] body...)")
    if isinstance(form[i], ListForm):
        raise c.syntax(form, "multi-arity functions are not supported: use one parameter "
                             "vector (with & rest if needed)")
    return c.make_fn(form, form[i], form[i + 1:], scope, name=self_name, self_name=self_name)


# --- local bindings ------------------------------------------------------------------------------


def _bindings(
    c: Compiler, form: ListForm, scope: frozenset[str], what: str
) -> tuple[list[tuple[Binder, Node, str | None]], frozenset[str]]:
    if len(form) < 2 or not isinstance(form[1], VectorForm):
        raise c.syntax(form, f"{what} needs a binding vector: ({what} [name value ...] body...)")
    vec = form[1]
    if len(vec) % 2:
        raise c.syntax(vec, f"{what} bindings need an even number of forms (name value pairs)",
                       form)
    out = []
    bound: set[str] = set()
    for i in range(0, len(vec), 2):
        pattern, init = vec[i], vec[i + 1]
        init_node = c.expr(init, _visible(scope, bound, init))
        names: list[str] = []
        binder = compile_pattern(pattern, _visible(scope, bound, pattern), c.expr, names, vec)
        bound.update(names)
        simple = pattern.name if isinstance(pattern, Symbol) else None
        out.append((binder, init_node, simple))
    return out, scope | frozenset(bound)


def _visible(scope: frozenset[str], bound: set[str], form: Any) -> frozenset[str]:
    """The scope ``form`` sees: ``scope`` plus the earlier bindings it mentions.

    Adding only the names the form can mention (not every earlier binding)
    keeps a ``let`` with thousands of bindings linear instead of quadratic.
    """
    if not bound:
        return scope
    used = symbols_in(form, set())
    extra = [name for name in used if name in bound] if len(used) < len(bound) else \
        list(used & bound)
    return scope | frozenset(extra) if extra else scope


@special("let", "let*")
def let(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(let [pattern value ...] body...)``."""
    bindings, inner = _bindings(c, form, scope, "let")
    body = c.body(form[2:], inner, tail)
    ctx = c.ctx
    if len(bindings) == 1 and bindings[0][2] is not None:
        _, init, name = bindings[0]

        def let1(env: Env) -> Any:
            ctx.steps += 1
            if ctx.steps > ctx.check_at:
                ctx.check()
            env = env.copy()
            env[name] = init(env)  # type: ignore[index]
            return body(env)

        return let1

    def let_n(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        env = env.copy()
        for binder, init, _ in bindings:
            binder(env, init(env))
        return body(env)

    return weigh(ctx, let_n, len(inner) - len(scope))


@special("loop")
def loop(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(loop [name init ...] body...)`` -- ``(recur v ...)`` in tail position goes again."""
    bindings, inner = _bindings(c, form, scope, "loop")
    body = c.body(form[2:], inner, Tail(len(bindings), "loop"))
    ctx = c.ctx
    binders = [b for b, _, _ in bindings]
    names = [name for _, _, name in bindings]
    if all(names):
        def loop_simple(env: Env) -> Any:
            ctx.steps += 1
            if ctx.steps > ctx.check_at:
                ctx.check()
            env = env.copy()
            for _, init, name in bindings:
                env[name] = init(env)
            r = body(env)
            while type(r) is Recur:
                for name, v in zip(names, r.args, strict=False):
                    env[name] = v
                r = body(env)
            return r

        return weigh(ctx, loop_simple, len(inner) - len(scope))

    def loop_node(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        env = env.copy()
        for binder, init, _ in bindings:
            binder(env, init(env))
        r = body(env)
        while type(r) is Recur:
            for binder, v in zip(binders, r.args, strict=False):
                binder(env, v)
            r = body(env)
        return r

    return weigh(ctx, loop_node, len(inner) - len(scope))


@special("recur")
def recur(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(recur v ...)``: only in tail position of a loop or function."""
    if tail is None:
        raise c.syntax(form, "recur can only be used in tail position of a loop or fn")
    if len(form) - 1 != tail.arity:
        raise c.syntax(form, f"recur expects {tail.arity} argument(s) for this {tail.what}, "
                             f"got {len(form) - 1}")
    args = [c.expr(a, scope) for a in form[1:]]
    ctx = c.ctx
    if len(args) == 1:
        a0 = args[0]

        def recur1(env: Env) -> Recur:
            ctx.steps += 1
            if ctx.steps > ctx.check_at:
                ctx.check()
            return Recur([a0(env)])

        return recur1
    if len(args) == 2:
        a0, a1 = args

        def recur2(env: Env) -> Recur:
            ctx.steps += 1
            if ctx.steps > ctx.check_at:
                ctx.check()
            return Recur([a0(env), a1(env)])

        return recur2

    def recur_node(env: Env) -> Recur:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        return Recur([a(env) for a in args])

    return recur_node


def _if_let(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None,
            what: str) -> tuple[Binder, Node, Node, Node | None]:
    if len(form) < 3 or not isinstance(form[1], VectorForm) or len(form[1]) != 2:
        raise c.syntax(form, f"{what} needs one binding: ({what} [name value] ...)")
    init = c.expr(form[1][1], scope)
    names: list[str] = []
    binder = compile_pattern(form[1][0], scope, c.expr, names, form[1])
    inner = scope | frozenset(names)
    if what == "if-let":
        if len(form) not in (3, 4):
            raise c.syntax(form, "if-let expects (if-let [name value] then else?)")
        then = c.compile(form[2], inner, tail)
        other = c.compile(form[3], scope, tail) if len(form) == 4 else const(None)
        return binder, init, then, other
    return binder, init, c.body(form[2:], inner, tail), None


@special("if-let")
def if_let(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(if-let [name value] then else?)``."""
    binder, init, then, other = _if_let(c, form, scope, tail, "if-let")
    ctx = c.ctx

    def if_let_node(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        v = init(env)
        if v is None or v is False:
            return other(env)  # type: ignore[misc]
        env = env.copy()
        binder(env, v)
        return then(env)

    return if_let_node


@special("when-let")
def when_let(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(when-let [name value] body...)``."""
    binder, init, body, _ = _if_let(c, form, scope, tail, "when-let")
    ctx = c.ctx

    def when_let_node(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        v = init(env)
        if v is None or v is False:
            return None
        env = env.copy()
        binder(env, v)
        return body(env)

    return when_let_node


# --- control flow -------------------------------------------------------------------------------


@special("do")
def do(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(do a b c)``: evaluate in order, give the last."""
    return c.body(form[1:], scope, tail)


@special("if", "if-not")
def if_(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(if test then else?)`` and ``(if-not test then else?)``."""
    if len(form) not in (3, 4):
        raise c.syntax(form, f"{form[0].name} expects (if test then else?)")
    test = c.expr(form[1], scope)
    then = c.compile(form[2], scope, tail)
    other = c.compile(form[3], scope, tail) if len(form) == 4 else const(None)
    if form[0].name == "if-not":
        then, other = other, then
    ctx = c.ctx

    def if_node(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        v = test(env)
        if v is None or v is False:
            return other(env)
        return then(env)

    return if_node


@special("when", "when-not")
def when(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(when test body...)`` and ``(when-not test body...)``."""
    if len(form) < 2:
        raise c.syntax(form, f"{form[0].name} needs a test")
    test = c.expr(form[1], scope)
    body = c.body(form[2:], scope, tail)
    negate = form[0].name == "when-not"
    ctx = c.ctx

    def when_node(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        v = test(env)
        if (v is None or v is False) != negate:
            return None
        return body(env)

    return when_node


@special("cond")
def cond(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(cond test expr ... :else expr)``."""
    clauses = form[1:]
    if len(clauses) % 2:
        raise c.syntax(form, "cond needs test/expression pairs")
    pairs = [(c.expr(clauses[i], scope), c.compile(clauses[i + 1], scope, tail))
             for i in range(0, len(clauses), 2)]
    ctx = c.ctx

    def cond_node(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        for test, expr in pairs:
            v = test(env)
            if v is not None and v is not False:
                return expr(env)
        return None

    return weigh(ctx, cond_node, len(pairs))


@special("case")
def case(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(case x const expr ... default?)``; a list of constants matches any of them."""
    if len(form) < 3:
        raise c.syntax(form, "case expects (case value const expr ... default?)")
    value = c.expr(form[1], scope)
    clauses = list(form[2:])
    default = c.compile(clauses.pop(), scope, tail) if len(clauses) % 2 else None
    table: list[tuple[Any, Node]] = []
    for i in range(0, len(clauses), 2):
        test, expr = clauses[i], c.compile(clauses[i + 1], scope, tail)
        if not is_literal(test) and not isinstance(test, (ListForm, Symbol)):
            raise c.syntax(form, "case tests must be constants")
        if isinstance(test, ListForm):
            for alt in test:
                table.append((literal_value(alt), expr))
        elif isinstance(test, Symbol):
            raise c.syntax(test, "case tests must be constants (symbols are not supported)",
                           form)
        else:
            table.append((literal_value(test), expr))
    ctx = c.ctx

    def case_node(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        v = value(env)
        for const_value, expr in table:
            if lisp_eq(v, const_value, ctx):
                return expr(env)
        if default is None:
            raise LispError("runtime_error", f"no case clause matches {render_prefix(v, ctx, 80)}")
        return default(env)

    return weigh(ctx, case_node, len(table))


@special("and")
def and_(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(and a b ...)``: the first falsey value, else the last value (true if empty)."""
    if len(form) == 1:
        return const(True)
    nodes = [c.expr(x, scope) for x in form[1:-1]]
    last = c.compile(form[-1], scope, tail)
    ctx = c.ctx

    def and_node(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        for n in nodes:
            v = n(env)
            if v is None or v is False:
                return v
        return last(env)

    return weigh(ctx, and_node, len(nodes))


@special("or")
def or_(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(or a b ...)``: the first truthy value, else the last value (nil if empty)."""
    if len(form) == 1:
        return const(None)
    nodes = [c.expr(x, scope) for x in form[1:-1]]
    last = c.compile(form[-1], scope, tail)
    ctx = c.ctx

    def or_node(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        for n in nodes:
            v = n(env)
            if v is not None and v is not False:
                return v
        return last(env)

    return weigh(ctx, or_node, len(nodes))


def _thread(form: ListForm, last: bool) -> Any:
    x = form[1]
    for step in form[2:]:
        if isinstance(step, ListForm) and step:
            items = [*step, x] if last else [step[0], x, *step[1:]]
            x = ListForm(items, step.line, step.column)
        else:
            x = ListForm([step, x], form.line, form.column)
    return x


@special("->", "->>")
def thread(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(-> x (f a) g)`` is ``(g (f x a))``; ``->>`` puts x last instead."""
    if len(form) < 2:
        raise c.syntax(form, f"{form[0].name} needs a value to thread")
    return c.compile(_thread(form, form[0].name == "->>"), scope, tail)


@special("return")
def return_(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(return x)``: stop the program now with result x."""
    if len(form) > 2:
        raise c.syntax(form, "return takes one value: (return x)")
    value = c.expr(form[1], scope) if len(form) == 2 else const(None)

    def return_node(env: Env) -> Any:
        raise ReturnSignal(value(env))

    return return_node


@special("fail")
def fail(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(fail reason)``: stop the program now, as a failure with that reason."""
    if len(form) != 2:
        raise c.syntax(form, "fail takes one reason: (fail reason)")
    reason = c.expr(form[1], scope)
    ctx = c.ctx

    def fail_node(env: Env) -> Any:
        v = reason(env)
        text = v if isinstance(v, str) else render_prefix(v, ctx, 10_000)
        raise LispError("fail", text)

    return fail_node


@special("quote")
def quote(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(quote form)`` / ``'form``: the form as data (lists become vectors)."""
    if len(form) != 2:
        raise c.syntax(form, "quote takes one form")
    return const(literal_value(form[1]))


@special("comment")
def comment(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(comment ...)``: ignored, gives nil."""
    return const(None)


# --- comprehension ------------------------------------------------------------------------------

Emit = Callable[[Env, list[Any]], bool]


def _comprehension(c: Compiler, form: ListForm, scope: frozenset[str], collect: bool) -> Node:
    what = form[0].name
    if len(form) < 2 or not isinstance(form[1], VectorForm) or not form[1]:
        raise c.syntax(form, f"{what} needs a binding vector: ({what} [x coll] body...)")
    vec = list(form[1])
    if len(vec) % 2:
        raise c.syntax(form, f"{what} bindings need an even number of forms")
    if isinstance(vec[0], Keyword):
        raise c.syntax(form, f"{what} must start with a binding, not {vec[0]}")
    ctx = c.ctx
    plan: list[tuple[str, Any, Any]] = []
    for i in range(0, len(vec), 2):
        key, val = vec[i], vec[i + 1]
        if key == Keyword("when") or key == Keyword("while"):
            plan.append((key.name, c.expr(val, scope), None))
        elif key == Keyword("let"):
            let_form = ListForm([Symbol("let"), val], form.line, form.column)
            bindings, scope = _bindings(c, let_form, scope, ":let")
            plan.append(("let", bindings, None))
        elif isinstance(key, Keyword):
            raise c.syntax(form, f"unknown {what} modifier {key}")
        else:
            coll = c.expr(val, scope)
            names: list[str] = []
            binder = compile_pattern(key, scope, c.expr, names, form[1])
            scope = scope | frozenset(names)
            plan.append(("bind", coll, binder))
    body = c.body(form[2:], scope, None)
    limit = ctx.max_collection

    def final(env: Env, out: list[Any]) -> bool:
        v = body(env)
        if collect:
            if len(out) >= limit:
                ctx.check_count(len(out) + 1, what)
            out.append(v)
        return True

    emit: Emit = final
    weight = len(plan) if len(plan) > 8 else 1  # wide comprehensions count every clause
    for kind, a, b in reversed(plan):
        emit = _clause(ctx, kind, a, b, emit, weight)
    first = emit

    def comprehension_node(env: Env) -> Any:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        out: list[Any] = []
        first(env, out)
        return out if collect else None

    return comprehension_node


def _clause(ctx: Any, kind: str, a: Any, b: Any, nxt: Emit, weight: int) -> Emit:
    if kind == "bind":
        coll, binder = a, b

        def bind(env: Env, out: list[Any]) -> bool:
            for item in seq(coll(env)):
                ctx.steps += weight
                if ctx.steps > ctx.check_at:
                    ctx.check()
                inner = env.copy()
                binder(inner, item)
                if not nxt(inner, out):
                    break
            return True

        return bind
    if kind == "when":
        def when_clause(env: Env, out: list[Any]) -> bool:
            v = a(env)
            return nxt(env, out) if v is not None and v is not False else True

        return when_clause
    if kind == "while":
        def while_clause(env: Env, out: list[Any]) -> bool:
            v = a(env)
            if v is None or v is False:
                return False
            return nxt(env, out)

        return while_clause

    def let_clause(env: Env, out: list[Any]) -> bool:
        inner = env.copy()
        for binder, init, _ in a:
            binder(inner, init(inner))
        return nxt(inner, out)

    return let_clause


@special("for")
def for_(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(for [x xs :when (p x) :let [y ...] :while ...] body)``: a list of results."""
    return _comprehension(c, form, scope, collect=True)


@special("doseq")
def doseq(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(doseq [x xs ...] body...)``: like ``for`` for side effects; gives nil."""
    return _comprehension(c, form, scope, collect=False)


@special("dotimes")
def dotimes(c: Compiler, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
    """``(dotimes [i n] body...)``: body with i = 0 .. n-1; gives nil."""
    if len(form) < 2 or not isinstance(form[1], VectorForm) or len(form[1]) != 2 or \
            not isinstance(form[1][0], Symbol):
        raise c.syntax(form, "dotimes expects (dotimes [i n] body...)")
    name = form[1][0].name
    count = c.expr(form[1][1], scope)
    body = c.body(form[2:], scope | {name}, None)
    ctx = c.ctx

    def dotimes_node(env: Env) -> None:
        ctx.steps += 1
        if ctx.steps > ctx.check_at:
            ctx.check()
        n = count(env)
        if type(n) is not int:
            raise LispError("type_error", "dotimes expects an integer count")
        env = env.copy()
        for i in range(n):
            ctx.steps += 1
            if ctx.steps > ctx.check_at:
                ctx.check()
            env[name] = i
            body(env)
        return None

    return dotimes_node
