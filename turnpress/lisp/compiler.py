"""Compiling forms into Python closures ("nodes") and calling user functions.

A node is ``node(env) -> value`` where ``env`` is the dict of local variables.
Compiling once and running the closures is several times faster than walking
the forms on every evaluation. Every call and special form counts one step
(``ctx.steps``) and checks the step limit and the clock every few hundred steps.

Name resolution for a bare symbol: local -> user definition (looked up when the
code runs, so a later ``def`` is seen) -> built-in -> ``tool/`` or ``data/`` of the
same name (both existing is an ``ambiguous_reference``).

NOTES: why the step check is written out in every node
-------------------------------------------------------
Every node here and in :mod:`turnpress.lisp.special_forms` starts with the same
three lines::

    ctx.steps += 1
    if ctx.steps > ctx.check_at:
        ctx.check()

instead of calling one helper (``ctx.tick()``). The nodes are the interpreter's
innermost loop, and a Python method call costs about as much as the rest of a
small node. Measured with ``benchmarks/bench_lisp.py --size 50000 --repeat 5``
(issue 12, two alternating runs each), folding the check into ``ctx.tick()``
made the tasks 10-11% slower (filter 0.051 -> 0.056 s, map+reduce 0.087 ->
0.096 s, loop/recur 0.141 -> 0.155 s), over the 5% the issue allows, so the
check stays inlined. ``check_at`` is the next step count at which
:meth:`~turnpress.lisp.context.RunContext.check` must look at the step limit,
the clock and the memory budget (every 256 steps), so the common path is one
addition and one comparison. Built-ins count their work with
``ctx.charge(n)``; wide forms with :func:`~turnpress.lisp.nodes.weigh`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from turnpress.core.model import Keyword
from turnpress.lisp.context import (
    HOST_ERRORS,
    RunContext,
    arity_error,
    host_error,
    undefined_data,
    undefined_tool,
)
from turnpress.lisp.destructure import compile_pattern
from turnpress.lisp.errors import ArgumentError, LispError, LispSyntaxError
from turnpress.lisp.forms import (
    ListForm,
    MapForm,
    SetForm,
    Symbol,
    VectorForm,
    form_text,
    position,
)
from turnpress.lisp.library import CORE, resolve_qualified
from turnpress.lisp.nodes import (
    FnCode,
    Node,
    Tail,
    const,
    is_literal,
    literal_value,
    raiser,
    symbols_in,
    weigh,
)
from turnpress.lisp.special_forms import SPECIAL_FORMS
from turnpress.lisp.values import MISSING, Closure, CoreFn, Recur, ToolFn, freeze, lookup

__all__ = ["Compiler", "Node", "Tail"]

_FORM_TYPES = (Symbol, ListForm, VectorForm, MapForm, SetForm)

#: Clojure names that do not exist here, with the reason given to the program.
UNSUPPORTED = {
    "try": "try/catch is not supported: a failing call ends the program",
    "catch": "try/catch is not supported: a failing call ends the program",
    "throw": "throw is not supported: use (fail reason)",
    "atom": "atoms are not supported: use loop/recur or reduce",
    "swap!": "atoms are not supported: use loop/recur or reduce",
    "reset!": "atoms are not supported: use loop/recur or reduce",
    "deref": "atoms are not supported: use loop/recur or reduce",
    "ns": "namespaces cannot be declared: use def and defn",
    "require": "libraries cannot be loaded: clojure.string functions are always available",
    "import": "host classes are not available",
    "eval": "eval is not available",
    "slurp": "files are not available: use the tools",
    "spit": "files are not available: use the tools",
    "def-": "use def",
    "defn-": "use defn",
    "lazy-seq": "lazy sequences are not supported: everything is eager",
    "iterate": "endless sequences are not supported: use loop/recur or range",
    "cycle": "endless sequences are not supported",
}


class Compiler:
    """Compiles forms for one run; also invokes user functions (``ctx.invoke``)."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.specials = SPECIAL_FORMS
        self.cache: dict[int, tuple[Any, FnCode]] = {}
        self.prepared: dict[Closure, Callable[..., Any]] = {}
        self.compiled = 0  # forms compiled, to check the clock now and then
        ctx.invoke = self.invoke
        ctx.prepare = self.prepare

    # --- errors ----------------------------------------------------------------------
    @staticmethod
    def syntax(form: Any, message: str, where: Any = None) -> LispSyntaxError:
        """A syntax error at ``form`` (or at ``where`` when ``form`` has no position)."""
        return LispSyntaxError(message, *position(form, position(where, (1, 1))))

    # --- dispatch -------------------------------------------------------------------------
    def compile(self, form: Any, scope: frozenset[str], tail: Tail | None = None) -> Node:
        """The node for ``form``; ``scope`` holds the local names, ``tail`` the recur target."""
        self.compiled += 1
        if not self.compiled & 1023:
            self.ctx.check_clock()  # compiling counts toward the time limit
        t = type(form)
        if t is Symbol:
            return self.symbol(form, scope)
        if t is ListForm:
            return self.list_form(form, scope, tail)
        if t is VectorForm or t is MapForm or t is SetForm:
            return self.collection(form, scope)
        return const(form)

    def expr(self, form: Any, scope: frozenset[str]) -> Node:
        """Compile a form outside any tail position."""
        return self.compile(form, scope, None)

    def body(self, forms: Any, scope: frozenset[str], tail: Tail | None) -> Node:
        """A ``do`` body: evaluate all, give the last (``nil`` if empty)."""
        forms = list(forms)
        if not forms:
            return const(None)
        nodes = [self.compile(f, scope, None) for f in forms[:-1]]
        last = self.compile(forms[-1], scope, tail)
        if not nodes:
            return last
        if len(nodes) == 1:
            first = nodes[0]

            def do2(env: dict[str, Any]) -> Any:
                first(env)
                return last(env)

            return do2

        def do_n(env: dict[str, Any]) -> Any:
            for n in nodes:
                n(env)
            return last(env)

        return weigh(self.ctx, do_n, len(nodes))

    # --- literals ---------------------------------------------------------------------------
    def collection(self, form: Any, scope: frozenset[str]) -> Node:
        """Vector, map and set literals (constant ones are built once)."""
        if is_literal(form):
            return const(literal_value(form))
        return weigh(self.ctx, self._collection(form, scope), len(form))

    def _collection(self, form: Any, scope: frozenset[str]) -> Node:
        nodes = [self.expr(x, scope) for x in form]
        t = type(form)
        if t is VectorForm:
            return lambda env: [n(env) for n in nodes]
        if t is SetForm:
            ctx = self.ctx
            return lambda env: frozenset(freeze(n(env), ctx) for n in nodes)
        pairs = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes), 2)]
        ctx = self.ctx

        def map_node(env: dict[str, Any]) -> dict[Any, Any]:
            out = {}
            for k, v in pairs:
                key = k(env)
                try:
                    out[key] = v(env)
                except TypeError:
                    out[freeze(key, ctx)] = v(env)
            return out

        return map_node

    # --- symbols ------------------------------------------------------------------------------
    def symbol(self, sym: Symbol, scope: frozenset[str]) -> Node:
        """A symbol's value: local, definition, built-in, or tool/data."""
        if sym.ns is None:
            if sym.name in scope:
                return itemgetter(sym.name)
            return self.global_ref(sym.name)
        return self.qualified_ref(sym)

    def fallback(self, name: str) -> Callable[[], Any]:
        """What a bare name means when nothing is defined under it."""
        core = CORE.get(name)
        if core is not None:
            return lambda: core
        ctx = self.ctx
        in_tools, in_data = name in ctx.tools, name in ctx.data
        if in_tools and in_data:
            return functools.partial(_raise, ambiguous(name))
        if in_tools:
            tool_fn = ToolFn(tuple(ctx.tools[name].params), name=name)
            return lambda: tool_fn
        if in_data:
            value = ctx.data[name]
            return lambda: value
        return functools.partial(_raise, undefined(name))

    def global_ref(self, name: str) -> Node:
        """A user definition looked up at run time, else the fallback."""
        get = self.ctx.globals.get
        fallback = self.fallback(name)

        def node(env: dict[str, Any]) -> Any:
            v = get(name, MISSING)
            if v is MISSING:
                return fallback()
            return v

        return node

    def qualified_ref(self, sym: Symbol) -> Node:
        """``tool/x``, ``data/x``, ``user/x``, ``clojure.string/x``..."""
        ns, local, ctx = sym.ns, sym.local, self.ctx
        if ns == "tool":
            if local in ctx.tools:
                return const(ToolFn(tuple(ctx.tools[local].params), name=local))
            return raiser(lambda: undefined_tool(local, ctx.tools))
        if ns == "data":
            if local in ctx.data:
                return const(ctx.data[local])
            return raiser(lambda: undefined_data(local, ctx.data))
        if ns == "user":
            get = ctx.globals.get

            def user_node(env: dict[str, Any]) -> Any:
                v = get(local, MISSING)
                if v is MISSING:
                    raise undefined(sym.name)
                return v

            return user_node
        core = resolve_qualified(ns, local)
        if core is not None:
            return const(core)
        return raiser(lambda: undefined(sym.name))

    # --- calls ---------------------------------------------------------------------------------
    def list_form(self, form: ListForm, scope: frozenset[str], tail: Tail | None) -> Node:
        """A special form or a call."""
        if not form:
            return const([])
        head = form[0]
        if type(head) is Symbol and head.ns is None and head.name not in scope:
            special = self.specials.get(head.name)
            if special is not None:
                return special(self, form, scope, tail)
        args = [self.expr(a, scope) for a in form[1:]]
        return weigh(self.ctx, self._call(form, head, args, scope), len(args))

    def _call(self, form: ListForm, head: Any, args: list[Node], scope: frozenset[str]) -> Node:
        if type(head) is Keyword:
            return self.keyword_call(head, args)
        if type(head) is Symbol:
            if head.ns is None:
                if head.name in scope:
                    return self.dynamic_call(itemgetter(head.name), args)
                return self.global_call(head.name, args)
            return self.qualified_call(head, args)
        if isinstance(head, (int, float, str, bool)) or head is None:
            return raiser(lambda: LispError(
                "type_error", f"cannot call {form_text(head)} as a function"))
        return self.dynamic_call(self.expr(head, scope), args)

    def keyword_call(self, kw: Keyword, args: list[Node]) -> Node:
        """``(:k m)`` and ``(:k m default)``."""
        ctx = self.ctx
        if len(args) == 1:
            a0 = args[0]

            name = kw.name

            def kw1(env: dict[str, Any]) -> Any:
                ctx.steps += 1
                if ctx.steps > ctx.check_at:
                    ctx.check()
                m = a0(env)
                if type(m) is dict:
                    v = m.get(kw, MISSING)
                    return m.get(name) if v is MISSING else v
                return lookup(m, kw)

            return kw1
        if len(args) == 2:
            a0, a1 = args

            def kw2(env: dict[str, Any]) -> Any:
                ctx.steps += 1
                if ctx.steps > ctx.check_at:
                    ctx.check()
                return lookup(a0(env), kw, a1(env))

            return kw2
        return raiser(lambda: LispError(
            "arity_error", f"keyword {kw} takes 1 or 2 arguments, got {len(args)}"))

    def dynamic_call(self, fnode: Node, args: list[Node]) -> Node:
        """Call whatever ``fnode`` evaluates to."""
        ctx = self.ctx
        call = ctx.call
        if len(args) == 1:
            a0 = args[0]

            def call1(env: dict[str, Any]) -> Any:
                ctx.steps += 1
                if ctx.steps > ctx.check_at:
                    ctx.check()
                return call(fnode(env), (a0(env),))

            return call1

        def call_n(env: dict[str, Any]) -> Any:
            ctx.steps += 1
            if ctx.steps > ctx.check_at:
                ctx.check()
            f = fnode(env)
            return call(f, tuple([a(env) for a in args]))

        return call_n

    def global_call(self, name: str, args: list[Node]) -> Node:
        """A call through a bare name (definition, built-in, tool or data)."""
        core = CORE.get(name)
        if core is not None:
            return self.core_call(core, args, name)
        ctx = self.ctx
        get, call = ctx.globals.get, ctx.call
        in_tools, in_data = name in ctx.tools, name in ctx.data

        if in_tools and not in_data:
            call_tool = ctx.call_tool

            def tool_or_def(env: dict[str, Any]) -> Any:
                ctx.steps += 1
                if ctx.steps > ctx.check_at:
                    ctx.check()
                f = get(name, MISSING)
                if f is MISSING:
                    return call_tool(name, tuple([a(env) for a in args]))
                return call(f, tuple([a(env) for a in args]))

            return tool_or_def
        fallback = self.fallback(name)

        def def_call(env: dict[str, Any]) -> Any:
            ctx.steps += 1
            if ctx.steps > ctx.check_at:
                ctx.check()
            f = get(name, MISSING)
            if f is MISSING:
                f = fallback()
            return call(f, tuple([a(env) for a in args]))

        return def_call

    def qualified_call(self, sym: Symbol, args: list[Node]) -> Node:
        """A call through ``tool/x``, ``data/x``, ``user/x`` or a library namespace."""
        ctx = self.ctx
        if sym.ns == "tool":
            name, call_tool = sym.local, ctx.call_tool

            def tool_call(env: dict[str, Any]) -> Any:
                ctx.steps += 1
                if ctx.steps > ctx.check_at:
                    ctx.check()
                return call_tool(name, tuple([a(env) for a in args]))

            return tool_call
        if sym.ns not in ("data", "user"):
            core = resolve_qualified(sym.ns, sym.local)  # type: ignore[arg-type]
            if core is not None:
                return self.core_call(core, args, sym.name)
        return self.dynamic_call(self.qualified_ref(sym), args)

    def core_call(self, core: CoreFn, args: list[Node], name: str) -> Node:
        """A built-in called directly (unless a definition named ``name`` shadows it)."""
        ctx = self.ctx
        g, call = ctx.globals, ctx.call
        impl: Any = functools.partial(core.impl, ctx) if core.needs_ctx else core.impl
        fname = name  # errors name the function as the program wrote it
        n = len(args)
        if not core.accepts(n):
            impl = functools.partial(_raise_arity, fname, n, core)
        elif n == 2 and core.binary is not None:
            impl = (functools.partial(core.binary, ctx) if core.binary_needs_ctx
                    else core.binary)
        if n == 1:
            a0 = args[0]

            def core1(env: dict[str, Any]) -> Any:
                ctx.steps += 1
                if ctx.steps > ctx.check_at:
                    ctx.check()
                if name in g:
                    return call(g[name], (a0(env),))
                x = a0(env)
                try:
                    return impl(x)
                except HOST_ERRORS as exc:
                    raise host_error(fname, (x,), exc) from None
                except ArgumentError as exc:
                    raise exc.named(fname) from None

            return core1
        if n == 2:
            a0, a1 = args

            def core2(env: dict[str, Any]) -> Any:
                ctx.steps += 1
                if ctx.steps > ctx.check_at:
                    ctx.check()
                if name in g:
                    return call(g[name], (a0(env), a1(env)))
                x = a0(env)
                y = a1(env)
                try:
                    return impl(x, y)
                except HOST_ERRORS as exc:
                    raise host_error(fname, (x, y), exc) from None
                except ArgumentError as exc:
                    raise exc.named(fname) from None

            return core2

        def core_n(env: dict[str, Any]) -> Any:
            ctx.steps += 1
            if ctx.steps > ctx.check_at:
                ctx.check()
            values = [a(env) for a in args]
            if name in g:
                return call(g[name], tuple(values))
            try:
                return impl(*values)
            except HOST_ERRORS as exc:
                raise host_error(fname, values, exc) from None
            except ArgumentError as exc:
                raise exc.named(fname) from None

        return core_n

    # --- user functions --------------------------------------------------------------------
    def make_fn(
        self,
        form: Any,
        param_form: Any,
        body: Any,
        scope: frozenset[str],
        *,
        name: str | None = None,
        self_name: str | None = None,
        doc: str | None = None,
    ) -> Node:
        """The node creating a closure over the locals the function uses."""
        if not isinstance(param_form, VectorForm):
            raise self.syntax(param_form, "expected a parameter vector like [x y]", form)
        body = tuple(body)
        used = symbols_in(param_form, symbols_in(body, set()))
        free = tuple(sorted(used & scope))
        base = frozenset(free) | ({self_name} if self_name else frozenset())
        code = self.compile_code(param_form, body, base, form)
        self.cache[id(param_form)] = (param_form, code)
        display = tuple(_display(p) for p in param_form)
        ctx = self.ctx

        def fn_node(env: dict[str, Any]) -> Closure:
            ctx.steps += 1
            if ctx.steps > ctx.check_at:
                ctx.check()
            return Closure(display, doc, None, param_form, body, {k: env[k] for k in free},
                           name, self_name)

        return fn_node

    def compile_code(self, param_form: Any, body: Any, base: frozenset[str], where: Any) -> FnCode:
        """Compile a function's parameter binding and body."""
        items = list(param_form)
        rest_pattern = None
        amp = [i for i, p in enumerate(items) if isinstance(p, Symbol) and p.name == "&"]
        if amp:
            i = amp[0]
            if len(amp) > 1 or i != len(items) - 2:
                raise self.syntax(param_form, "& must be followed by exactly one parameter",
                                  where)
            rest_pattern = items[-1]
            items = items[:i]
        names: list[str] = []
        fixed = [compile_pattern(p, base, self.expr, names, param_form) for p in items]
        rest = (compile_pattern(rest_pattern, base, self.expr, names, param_form) if amp
                else None)
        scope = base | frozenset(names)
        n = len(fixed)
        tail = Tail(n + (1 if amp else 0), "function")
        body_node = weigh(self.ctx, self.body(body, scope, tail), len(names))
        simple = rest is None and all(isinstance(p, Symbol) for p in items)
        if simple and n == 1:
            p0 = items[0].name

            def bind1(env: dict[str, Any], args: Any, clo: Closure) -> None:
                if len(args) != 1:
                    raise _fn_arity(clo, len(args), 1, False)
                env[p0] = args[0]

            def rebind1(env: dict[str, Any], args: Any) -> None:
                env[p0] = args[0]

            return FnCode(bind1, rebind1, body_node, p0)
        if simple:
            pnames = tuple(p.name for p in items)

            def bind_simple(env: dict[str, Any], args: Any, clo: Closure) -> None:
                if len(args) != n:
                    raise _fn_arity(clo, len(args), n, False)
                for k, v in zip(pnames, args, strict=False):
                    env[k] = v

            def rebind_simple(env: dict[str, Any], args: Any) -> None:
                for k, v in zip(pnames, args, strict=False):
                    env[k] = v

            return FnCode(bind_simple, rebind_simple, body_node)

        def bind(env: dict[str, Any], args: Any, clo: Closure) -> None:
            if len(args) < n or (rest is None and len(args) != n):
                raise _fn_arity(clo, len(args), n, rest is not None)
            for b, v in zip(fixed, args, strict=False):
                b(env, v)
            if rest is not None:
                rest(env, list(args[n:]) or None)

        def rebind(env: dict[str, Any], args: Any) -> None:
            for b, v in zip(fixed, args, strict=False):
                b(env, v)
            if rest is not None:
                rest(env, args[n])

        return FnCode(bind, rebind, body_node)

    def code_for(self, clo: Closure) -> FnCode:
        """The compiled code of ``clo`` (compiled on first use for closures of earlier runs)."""
        entry = self.cache.get(id(clo.param_form))
        if entry is not None:
            return entry[1]
        base = frozenset(clo.env) | ({clo.self_name} if clo.self_name else frozenset())
        code = self.compile_code(clo.param_form, clo.body, base, clo.param_form)
        self.cache[id(clo.param_form)] = (clo.param_form, code)
        return code

    def prepare(self, clo: Closure) -> Callable[..., Any]:
        """A Python callable that runs ``clo`` (made once per closure and run).

        It counts the call depth, binds the arguments, loops on ``recur`` and
        records the return value (for the closure's ``return_type``).
        """
        fn = self.prepared.get(clo)
        if fn is not None:
            return fn
        code = self.code_for(clo)
        ctx = self.ctx
        returns, max_depth = ctx.returns, ctx.max_depth
        cenv = dict(clo.env)
        self_name = clo.self_name
        if self_name:
            cenv[self_name] = clo
        body, bind, rebind, p0 = code.body, code.bind, code.rebind, code.single

        if p0 is not None:
            def run1(*args: Any) -> Any:
                ctx.steps += 1  # a call through a built-in (map, sort, comp...) is a step too
                if ctx.steps > ctx.check_at:
                    ctx.check()
                ctx.depth += 1
                if ctx.depth > max_depth:
                    raise _too_deep(ctx, clo)
                if len(args) != 1:
                    raise _fn_arity(clo, len(args), 1, False)
                env = cenv.copy()
                env[p0] = args[0]
                r = body(env)
                while type(r) is Recur:
                    env[p0] = r.args[0]
                    r = body(env)
                ctx.depth -= 1
                returns[clo] = r
                return r

            fn = run1
        else:
            def run(*args: Any) -> Any:
                ctx.steps += 1  # a call through a built-in (map, sort, comp...) is a step too
                if ctx.steps > ctx.check_at:
                    ctx.check()
                ctx.depth += 1
                if ctx.depth > max_depth:
                    raise _too_deep(ctx, clo)
                env = cenv.copy()
                bind(env, args, clo)
                r = body(env)
                while type(r) is Recur:
                    rebind(env, r.args)
                    r = body(env)
                ctx.depth -= 1
                returns[clo] = r
                return r

            fn = run
        self.prepared[clo] = fn
        return fn

    def invoke(self, clo: Closure, args: Any) -> Any:
        """Call user function ``clo`` with ``args``."""
        fn = self.prepared.get(clo)
        if fn is None:
            fn = self.prepare(clo)
        return fn(*args)


def _display(param: Any) -> str:
    return param.name if isinstance(param, Symbol) else form_text(param)


def _too_deep(ctx: RunContext, clo: Closure) -> LispError:
    return LispError(
        "depth_limit",
        f"recursion too deep: more than {ctx.max_depth} nested function calls "
        f"(in {clo.name or 'fn'})")


def _raise(error: Exception) -> Any:
    raise error


def _raise_arity(name: str, n: int, core: CoreFn, *args: Any) -> Any:
    raise arity_error(name, n, core)


def _fn_arity(clo: Closure, given: int, n: int, variadic: bool) -> LispError:
    expects = f"at least {n}" if variadic else str(n)
    return LispError("arity_error", f"wrong number of args ({given}) passed to: "
                                    f"{clo.name or 'fn'} (expects {expects})")


def undefined(name: str) -> LispError:
    """The error for a name that resolves to nothing."""
    reason = UNSUPPORTED.get(name)
    if reason:
        return LispError("undefined_symbol", f"undefined symbol '{name}': {reason}")
    return LispError("undefined_symbol", f"undefined symbol '{name}'")


def ambiguous(name: str) -> LispError:
    """NS-007: a bare name that is both a tool and a data input."""
    return LispError(
        "ambiguous_reference",
        f"ambiguous reference '{name}': both tool/{name} and data/{name} exist; "
        f"write tool/{name} or data/{name}")
