"""Expressions and calls in the front end: operators, comparisons, subscripts, f-strings,
comprehensions over constants, inlining of tile functions, and static evaluation."""
from __future__ import annotations

import ast
import builtins
import enum
import types
from typing import Any

from .. import dtypes as dt
from ..errors import (TileError, TileRecursionError, TileStaticAssertionError, TileStaticEvalError, TileValueError,
                      TileSyntaxError, TileTypeError, TileUnsupportedFeatureError, describe)
from ..ops import elementwise as ew
from ..ops.values import Array, Tile, as_tile, is_const
from .common import (BINOPS, CMPOPS, MISSING, PY_OPS, RET, RETVAL, UNSUPPORTED_EXPRS, ContextManagerCall,
                     LocalFunction, MixinBase, Undefined, check_kernel_attribute, context_manager_function,
                     fold_too_big, is_library_function, is_safetile_callable, is_static, is_value, literal_too_big,
                     same_static, static_facts, user_boundary, what)
from .captures import ABSENT, closure_scope
from .dataclass_values import BoundMethod, DataclassValue, dataclass_problem, is_dataclass_type
from .source import FunctionNode, parse_function


class Expressions(MixinBase):
    """Expression evaluation and calls of ``FunctionCompiler`` (a mixin)."""

    env: dict[str, Any]  # the variables in scope (FunctionCompiler sets them)

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> Any:
        kind = type(node).__name__
        method = getattr(self, "expr_" + kind, None)
        if method is None:
            message = UNSUPPORTED_EXPRS.get(kind, f"{kind} expressions are not supported in tile code")
            raise self.error(TileSyntaxError, f"Unsupported syntax: {message}", node)
        with self.at(node):
            return method(node)

    def expr_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def expr_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def expr_NamedExpr(self, node: ast.NamedExpr) -> Any:
        value = self.expr(node.value)
        self.assign(node.target, value)
        return value

    def expr_Tuple(self, node: ast.Tuple | ast.List) -> tuple:
        out: list[Any] = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                v = self.expr(e.value)
                if not isinstance(v, (tuple, range)):
                    raise self.error(TileTypeError, f"cannot unpack {what(v)} with *", e)
                out.extend(v)
            else:
                out.append(self.expr(e))
        return tuple(out)

    expr_List = expr_Tuple  # lists are immutable tuples in tile code

    def expr_Dict(self, node: ast.Dict) -> dict:
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.expr(v))
                continue
            key = self.expr(k)
            if not is_static(key):
                raise self.error(TileTypeError, "dictionary keys must be compile-time values", k)
            out[key] = self.expr(v)
        return out

    @user_boundary
    def expr_ListComp(self, node: ast.ListComp | ast.GeneratorExp) -> tuple:
        """A comprehension over compile-time tuples/ranges, unrolled into a tuple."""
        out: list[Any] = []
        saved = dict(self.env)

        def run(k: int) -> None:
            if k == len(node.generators):
                out.append(self.expr(node.elt))
                return
            gen = node.generators[k]
            if gen.is_async:
                raise self.error(TileUnsupportedFeatureError, "async comprehensions are not supported", gen)
            iterable = self._comprehension_iterable(gen.iter)
            if not isinstance(iterable, (tuple, range, str, dict)):
                raise self.error(TileUnsupportedFeatureError,
                                 f"a comprehension in tile code must iterate over a compile-time tuple or "
                                 f"range, not {what(iterable)}; use a for loop over range(...) instead",
                                 gen.iter)
            for item in iterable:
                self.assign(gen.target, item)
                keep = True
                for cond_node in gen.ifs:
                    c = self._truth(self.expr(cond_node), cond_node)
                    if isinstance(c, Tile):
                        raise self.error(TileUnsupportedFeatureError, "a comprehension filter must be a "
                                         "compile-time condition", cond_node)
                    keep = keep and c
                if keep:
                    run(k + 1)

        try:
            run(0)
        finally:
            self.env = saved
        return tuple(out)

    expr_GeneratorExp = expr_ListComp

    def _comprehension_iterable(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Call):
            from ..ops.meta import static_iter
            if self.expr(node.func) is static_iter:
                if len(node.args) != 1 or node.keywords:
                    raise self.error(TileSyntaxError, "static_iter() expects a single expression", node)
                return self._static_iterable(node.args[0])
        if isinstance(node, ast.Call) and self.expr(node.func) is builtins.range:
            args = [self.expr(a) for a in node.args]
            if any(isinstance(a, Tile) for a in args):
                raise self.error(TileUnsupportedFeatureError, "a comprehension in tile code is unrolled at "
                                 "compile time, so its range() needs constant bounds; use a for loop for "
                                 "run-time bounds", node)
        return self.expr(node)

    @user_boundary
    def expr_Attribute(self, node: ast.Attribute) -> Any:
        return self.attribute(self.expr(node.value), node.attr, node)

    @user_boundary
    def attribute(self, base: Any, attr: str, node: ast.AST | None) -> Any:
        """``base.attr`` as kernel code sees it: only the documented surface of safetile objects;
        a read of user state is recorded so that a later change recompiles."""
        if isinstance(base, DataclassValue):
            if attr in base.values:
                return base.values[attr]
            member = getattr(base.cls, attr, MISSING)
            if member is MISSING or attr.startswith("__"):
                raise self.error(TileTypeError, f"{base.cls.__name__} has no attribute {attr!r}", node)
            if isinstance(member, types.FunctionType):
                return BoundMethod(member, base)
            if isinstance(member, property) and member.fget is not None:
                return self.inline(member.fget, [base], {}, node)
            self.captures.attribute(base.cls, attr, member)
            return member
        if base is object and attr == "__setattr__":  # frozen dataclasses' __post_init__ sets fields with it
            return object.__setattr__
        refused = check_kernel_attribute(base, attr)
        if refused is not None:
            cls = TileUnsupportedFeatureError if attr.startswith("__") else TileTypeError
            raise self.error(cls, refused, node)
        try:
            value = getattr(base, attr)
        except AttributeError:
            owner = f"module {base.__name__!r}" if isinstance(base, types.ModuleType) else what(base)
            raise self.error(TileTypeError, f"{owner} has no attribute {attr!r}", node) from None
        if not isinstance(base, (Tile, Array)):
            self.captures.attribute(base, attr, value)
        return value

    @user_boundary
    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        key = self._subscript_key(node.slice)
        if isinstance(base, Array):
            raise self.error(TileTypeError, "arrays cannot be indexed directly in tile code; use ct.load, "
                             "ct.gather or a tiled view", node)
        if isinstance(base, Tile):
            return base[key]
        if isinstance(base, DataclassValue):
            return self._dataclass_method(base, "__getitem__", node)([key], {})
        if isinstance(key, Tile) or (isinstance(key, tuple) and any(isinstance(k, Tile) for k in key)):
            raise self.error(TileTypeError, f"{what(base)} can only be indexed by compile-time constants",
                             node.slice)
        return base[key]

    def _subscript_key(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Slice):
            return slice(*(self.expr(p) if p is not None else None for p in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.Tuple):
            return tuple(self._subscript_key(e) for e in node.elts)
        return self.expr(node)

    @user_boundary
    def _binop(self, op: str | None, a: Any, b: Any, node: ast.AST) -> Any:
        if op is None:
            raise self.error(TileUnsupportedFeatureError, "this operator is not supported in tile code", node)
        fn = PY_OPS[op]
        if isinstance(a, (Tile, Array)) or isinstance(b, (Tile, Array)):
            for v in (a, b):
                if not is_value(v):
                    raise self.error(TileTypeError, f"unsupported operand types for {op}: {what(a)} "
                                     f"and {what(b)}", node)
        if not isinstance(a, (Tile, Array)) and not isinstance(b, (Tile, Array)):
            too_big = fold_too_big(op, a, b)
            if too_big:
                raise self.error(TileValueError, f"{too_big}; compile-time constants are bounded", node)
        return fn(a, b)  # constants fold; tiles emit ops through their operators

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        return self._binop(BINOPS.get(type(node.op)), self.expr(node.left), self.expr(node.right), node)

    @user_boundary
    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return self._not(self._truth(v, node.operand))
        if isinstance(v, Array):
            raise self.error(TileTypeError, f"bad operand for unary operator: {what(v)}", node)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        if isinstance(v, bool):
            raise self.error(TileTypeError, "`~` on boolean constant is not supported, please use ct.bitwise_not "
                             "or `not`", node)
        return ~v

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        """``and``/``or``: Python semantics on compile-time values, bool results on scalar tiles."""
        is_and = isinstance(node.op, ast.And)
        acc = self.expr(node.values[0])
        for value_node in node.values[1:]:
            if not isinstance(acc, Tile):
                if self._truth(acc, node) != is_and:
                    return acc  # short circuit, like Python
                acc = self.expr(value_node)
                continue
            a = self._truth(acc, node.values[0])
            b = self._truth(self.expr(value_node), value_node)
            acc = self._and(a, b) if is_and else self._or(a, b)
        return acc

    def expr_Compare(self, node: ast.Compare) -> Any:
        left = self.expr(node.left)
        result: Any = True
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            r = self._compare(op, left, right, node)
            if result is True:
                result = r
            elif isinstance(result, Tile) or isinstance(r, Tile):
                result = self._and(result, r) if not (isinstance(result, Tile) and isinstance(r, Tile)) \
                    else ew.bitwise_and(result, r)
            else:
                result = result and r
            if not isinstance(result, Tile) and not result:
                return result  # a chain stops at its first false link, like Python
            left = right
        return result

    @user_boundary
    def _compare(self, op: ast.cmpop, left: Any, right: Any, node: ast.AST) -> Any:
        if isinstance(op, (ast.Is, ast.IsNot)):
            return (left is right) if isinstance(op, ast.Is) else (left is not right)
        if isinstance(op, (ast.In, ast.NotIn)):
            if not isinstance(right, (tuple, dict, str, range)):
                raise self.error(TileTypeError, f"'in' needs a compile-time tuple, got {what(right)}", node)
            if isinstance(right, str):
                found = left in right
            elif isinstance(left, Tile) or any(isinstance(x, Tile) for x in right):
                found = False  # a run-time membership test: an or-chain of equalities
                for x in right:
                    if is_value(x):
                        eq = self._compare(ast.Eq(), left, x, node)
                        found = ew.bitwise_or(found, eq) if isinstance(found, Tile) and isinstance(eq, Tile) \
                            else self._or(found, eq)
            else:
                found = any(same_static(left, x) or (is_const(left) and is_const(x) and left == x) for x in right)
            return found if isinstance(op, ast.In) else self._not(found)
        sym = CMPOPS[type(op)]
        if isinstance(left, Array) or isinstance(right, Array):
            raise self.error(TileTypeError, f"cannot compare {what(left)} and {what(right)}", node)
        if (isinstance(left, Tile) or isinstance(right, Tile)) and not (is_value(left) and is_value(right)):
            if sym in ("==", "!="):
                return (sym == "!=")  # a tile never equals a non-numeric object
            raise self.error(TileTypeError, f"cannot compare {what(left)} and {what(right)}",
                             node)
        return PY_OPS[sym](left, right)

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        cond = self._truth(self.expr(node.test), node.test)
        if not isinstance(cond, Tile):
            return self.expr(node.body if cond else node.orelse)
        a, b = self.expr(node.body), self.expr(node.orelse)
        return self._select(cond, a, b, node)

    def _select(self, cond: Tile, a: Any, b: Any, node: ast.AST) -> Any:
        if same_static(a, b):
            return a
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            return tuple(self._select(cond, x, y, node) for x, y in zip(a, b))
        if not (is_value(a) and is_value(b)):
            raise self.error(TileTypeError, "a conditional expression with a run-time condition must give tiles "
                             f"or numbers on both sides, got {what(a)} and {what(b)}", node)
        return ew.where(cond, a, b)

    def expr_Lambda(self, node: ast.Lambda) -> LocalFunction:
        return self._local_function(node)

    def expr_JoinedStr(self, node: ast.JoinedStr) -> Any:
        from ..ops.debug import FormatString
        parts: list[Any] = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
                continue
            assert isinstance(v, ast.FormattedValue)  # an f-string holds only these and constants
            value = self.expr(v.value)
            spec = ""
            if v.format_spec is not None:
                spec_val = self.expr(v.format_spec)
                spec = spec_val.text() if isinstance(spec_val, FormatString) else str(spec_val)
            if isinstance(value, FormatString) and value.parts and all(isinstance(p, str) for p in value.parts):
                value = value.text()
            if isinstance(value, (Tile, FormatString)):
                parts.append((value, spec) if isinstance(value, Tile) else value.text())
            else:
                if v.conversion == ord("r"):
                    value = repr(value)
                elif v.conversion in (ord("s"), ord("a")):
                    value = str(value) if v.conversion == ord("s") else ascii(value)
                elif isinstance(value, dt.DType):
                    value = value.name
                parts.append(format(value, spec))
        return FormatString(parts)

    # ------------------------------------------------------------------ calls

    def expr_Call(self, node: ast.Call) -> Any:
        fn = self.expr(node.func)
        from ..ops import meta
        if fn in (meta.static_eval, meta.static_assert, meta.static_iter) and isinstance(node.func, ast.Name) \
                and node.func.id in self.env:  # passed around as a value (a local variable)
            name = fn.__name__
            raise self.error(TileSyntaxError, f"{name}() must be used directly by name, e.g. cuda.tile.{name}() or "
                             f"ct.{name}().", node)
        if fn is meta.static_eval:
            if len(node.args) != 1 or node.keywords:
                raise self.error(TileTypeError, "ct.static_eval() takes exactly one expression", node)
            return self._static_eval_node(node.args[0])
        if fn is meta.static_assert:
            return self._static_assert(node)
        if fn is meta.static_iter:
            raise self.error(TileSyntaxError, "ct.static_iter(...) can only be the iterable of a for loop", node)
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.expr(a.value)
                if not isinstance(v, (tuple, range)):
                    raise self.error(TileTypeError, f"cannot unpack {what(v)} with *", a)
                args.extend(v)
            else:
                args.append(self.expr(a))
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                v = self.expr(kw.value)
                if not isinstance(v, dict):
                    raise self.error(TileTypeError, "** needs a compile-time dict", kw.value)
                kwargs.update(v)
            else:
                kwargs[kw.arg] = self.expr(kw.value)
        return self.call(fn, args, kwargs, node)

    @user_boundary
    def call(self, fn: Any, args: list, kwargs: dict, node: ast.AST | None) -> Any:
        from . import builtins_map
        from .kernel import TileFunction, TileKernel
        if isinstance(fn, TileKernel):
            raise self.error(TileTypeError, f"kernel {fn.__name__!r} cannot be called from tile code; move the "
                             "shared code into a tile function", node)
        if isinstance(fn, TileFunction):
            fn = fn.fn
        if isinstance(fn, LocalFunction):
            return self.inline(fn, args, kwargs, node)
        generator = context_manager_function(fn)
        if generator is not None:  # entered by a `with` statement (Statements.stmt_With)
            return ContextManagerCall(generator, args, kwargs)
        if isinstance(fn, BoundMethod):
            return self.inline(fn.fn, [fn.self_value, *args], kwargs, node)
        if fn is object.__setattr__ and args and isinstance(args[0], DataclassValue):
            return self._set_field(args, kwargs, node)
        if isinstance(fn, DataclassValue):
            return self._dataclass_method(fn, "__call__", node)(args, kwargs)
        if isinstance(fn, type) and issubclass(fn, enum.Enum):
            if len(args) != 1 or kwargs:
                raise self.error(TileTypeError, "Enum constructor takes exactly one positional argument", node)
            if not is_static(args[0]):
                raise self.error(TileTypeError, "Enum constructor argument must be a constant", node)
        if is_dataclass_type(fn) and dataclass_problem(fn):
            raise self.error(TileTypeError, dataclass_problem(fn), node)
        if is_dataclass_type(fn) and not (all(is_static(a) for a in args) and
                                          all(is_static(v) for v in kwargs.values())):
            return self._construct_dataclass(fn, args, kwargs, node)
        if isinstance(fn, (Tile, Array)):
            raise self.error(TileTypeError, f"{what(fn)} is not callable", node)
        if isinstance(fn, type) and issubclass(fn, (Tile, Array)):
            raise self.error(TileTypeError, f"ct.{fn.__name__} is the type of kernel values (for annotations and "
                             "isinstance checks); tile code cannot construct one: tiles come from ct.load, "
                             "factories and arithmetic, arrays are kernel arguments", node)
        if is_safetile_callable(fn):
            return fn(*args, **kwargs)
        special = builtins_map.lookup(fn)
        if special is not None:
            return special(self, args, kwargs)
        if isinstance(fn, dt.DType):
            if len(args) != 1 or kwargs:
                raise self.error(TileTypeError, f"{fn.name}(x) takes exactly one argument", node)
            return as_tile(args[0], fn) if is_const(args[0]) else ew.astype(args[0], fn)
        if isinstance(fn, types.FunctionType) and not is_library_function(fn):
            return self.inline(fn, args, kwargs, node)
        if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType) \
                and not is_library_function(fn.__func__):
            return self.inline(fn.__func__, [fn.__self__, *args], kwargs, node)  # a user object's method
        if not callable(fn):
            raise self.error(TileTypeError, f"{what(fn)} is not callable", node)
        if all(is_static(a) for a in args) and all(is_static(v) for v in kwargs.values()):
            return fn(*args, **kwargs)  # compile-time evaluation (e.g. math.log2(TILE))
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or what(fn)
        raise self.error(TileUnsupportedFeatureError, f"{name}() cannot be called with run-time values in tile "
                         "code; use the ct.* equivalent", node)

    def _construct_dataclass(self, cls: type, args: list, kwargs: dict, node: ast.AST | None) -> DataclassValue:
        """``cls(...)`` with run-time values: the fields bound like the generated ``__init__`` binds
        them (defaults and default factories included), then ``__post_init__`` inlined."""
        import dataclasses
        import inspect
        fields = [f for f in dataclasses.fields(cls) if f.init]
        try:
            bound = inspect.signature(cls).bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(TileTypeError, f"{cls.__name__}(): {e}", node) from None
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name in bound.arguments:
                values[f.name] = bound.arguments[f.name]
            elif f.default is not dataclasses.MISSING:
                values[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                values[f.name] = f.default_factory()
            elif f in fields:
                raise self.error(TileTypeError, f"{cls.__name__}() missing argument {f.name!r}", node)
        value = DataclassValue(cls, values)
        if hasattr(cls, "__post_init__"):
            _, env = self.inline(cls.__post_init__, [value], {}, node, return_env=True)
            self_name = next(iter(inspect.signature(cls.__post_init__).parameters))
            value = env.get(self_name, value)  # fields the method set (object.__setattr__ or self.x = ...)
        return value

    def _set_field(self, args: list, kwargs: dict, node: ast.AST | None) -> None:
        """``object.__setattr__(self, "name", value)`` (frozen dataclasses' __post_init__): rebinds
        the variable holding the dataclass value to a copy with the field set."""
        holder, name, value = (args + [None, None])[:3]
        target = node.args[0] if isinstance(node, ast.Call) and node.args else None
        if kwargs or len(args) != 3 or not isinstance(name, str) or not isinstance(target, ast.Name):
            raise self.error(TileTypeError, "object.__setattr__(self, 'field', value) needs a variable, a constant "
                             "field name and a value", node)
        if name not in holder.values:
            raise self.error(TileTypeError, f"{holder.cls.__name__} has no field {name!r}", node)
        self.env[target.id] = holder.replace(name, value)
        return None

    def _dataclass_method(self, value: DataclassValue, name: str, node: ast.AST | None):
        """A call of ``value``'s method ``name`` (inlined with ``self`` bound to the value)."""
        fn = getattr(value.cls, name, None)
        if fn is None or not isinstance(fn, types.FunctionType):
            raise self.error(TileTypeError, f"{value.cls.__name__} has no method {name}()", node)
        return lambda args, kwargs: self.inline(fn, [value, *args], kwargs, node)

    def inline(self, fn: Any, args: list, kwargs: dict, node: ast.AST | None, return_env: bool = False) -> Any:
        """Inline a tile function (module-level def, nested def or lambda) at this call
        (with ``return_env``: the result and the function's final variables)."""
        fnode: FunctionNode
        if isinstance(fn, LocalFunction):
            owner = fn.owner
            parsed, fnode, globals_ = owner.parsed, fn.node, owner.globals
            scope = {k: v for k, v in owner.env.items() if not k.startswith("$")}
            key: Any = fnode
            name = fn.name
            bound = self._bind_local(fn, args, kwargs, node)
        else:
            parsed = parse_function(fn)
            fnode, globals_, name, key = parsed.node, fn.__globals__, fn.__name__, fn.__code__
            if isinstance(fnode, ast.AsyncFunctionDef):
                raise self.error(TileSyntaxError, f"Unsupported syntax: {name}() is async; tile functions "
                                 "cannot be async", node)
            scope = closure_scope(fn, self.captures)
            bound = self._bind_python(fn, args, kwargs, node)
        if key in self.call_stack:
            raise self.error(TileRecursionError, f"{name}() calls itself: tile functions are inlined at every "
                             "call, so recursion is not supported (use a loop)", node)
        scope.update(bound)
        sub = type(self)(parsed, globals_, scope, self.builder, self.call_stack + (key,), is_kernel=False,
                         captures=self.captures)
        try:
            if isinstance(fnode, ast.Lambda):
                result = sub.expr(fnode.body)
                return (result, sub.env) if return_env else result
            sub.run_body(fnode.body)
            result = sub.env.get(RETVAL)
            if result is not None and sub.env.get(RET) is not True:
                raise sub.error(TileTypeError, f"{name}() does not return a value on every path; add a "
                                "return at the end or in every branch", fnode)
            return (result, sub.env) if return_env else result
        except TileError as e:
            if node is not None or self.builder.loc is not None:
                e.add_frame(self.loc(node))
            raise

    def enter_context(self, cm: ContextManagerCall, node: ast.AST) -> tuple[Any, Any, list]:
        """Run a ``@contextmanager`` generator up to its ``yield``: (the yielded value, the compiler
        holding the generator's variables, the statements to run on exit). The generator must
        have exactly one ``yield``, a statement of its own at the top level of its body."""
        fn = cm.fn
        parsed = parse_function(fn)
        body = [] if isinstance(parsed.node, ast.Lambda) else parsed.node.body  # a lambda: no yield statement
        found = [n for n in ast.walk(parsed.node) if isinstance(n, (ast.Yield, ast.YieldFrom))]
        tops = [i for i, st in enumerate(body) if isinstance(st, ast.Expr) and isinstance(st.value, ast.Yield)]
        if not found:
            raise self.error(TileTypeError, "Expected a generator function, but no reachable `yield` statement has "
                             "been found", node)
        if len(found) > 1:
            raise self.error(TileTypeError, "Generator-based context manager must have one `yield` statement", node)
        if len(tops) != 1:
            raise self.error(TileTypeError, "`yield` statement of a generator-based context manager must be placed "
                             "outside of loops and conditional statements", node)
        k = tops[0]
        if fn.__code__ in self.call_stack:
            raise self.error(TileRecursionError, f"{fn.__name__}() enters itself", node)
        scope = closure_scope(fn, self.captures)
        scope.update(self._bind_python(fn, cm.args, cm.kwargs, node))
        sub = type(self)(parsed, fn.__globals__, scope, self.builder, self.call_stack + (fn.__code__,),
                         is_kernel=False, captures=self.captures)
        try:
            sub.run_body(body[:k])
            if sub.env.get(RET) is not False and RET in sub.env:
                raise sub.error(TileUnsupportedFeatureError, "a context manager cannot return before its yield",
                                body[k])
            stmt = body[k]
            assert isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Yield)  # found as such above
            y = stmt.value.value
            value = sub.expr(y) if y is not None else None
        except TileError as e:
            e.add_frame(self.loc(node))
            raise
        return value, sub, body[k + 1:]

    def exit_context(self, sub: Any, after: list, node: ast.AST) -> None:
        """Run a context manager's statements after its ``yield`` (always, like ``finally``)."""
        try:
            sub.run_body(after)
        except TileError as e:
            e.add_frame(self.loc(node))
            raise

    def _bind_python(self, fn: types.FunctionType, args: list, kwargs: dict, node) -> dict[str, Any]:
        import inspect
        sig = inspect.signature(fn)
        try:
            ba = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(TileTypeError, f"{fn.__name__}(): {e}: called with {len(args)} positional and "
                             f"{len(kwargs)} keyword argument(s) for {fn.__name__}{sig}", node) from None
        ba.apply_defaults()
        return dict(ba.arguments)

    def _bind_local(self, fn: LocalFunction, args: list, kwargs: dict, node) -> dict[str, Any]:
        """Bind call arguments to a local function's parameters, like Python does."""
        a = fn.node.args
        name = fn.name
        positional = [p.arg for p in a.posonlyargs + a.args]
        bound: dict[str, Any] = {}
        if len(args) > len(positional) and a.vararg is None:
            raise self.error(TileTypeError, f"{name}() takes {len(positional)} positional argument(s) but "
                             f"{len(args)} were given", node)
        for p, v in zip(positional, args):
            bound[p] = v
        if a.vararg is not None:
            bound[a.vararg.arg] = tuple(args[len(positional):])
        keyword_ok = [p.arg for p in a.args + a.kwonlyargs]
        extra: dict[str, Any] = {}
        for k, v in kwargs.items():
            if k in bound:
                raise self.error(TileTypeError, f"{name}() got multiple values for argument {k!r}", node)
            if k in keyword_ok:
                bound[k] = v
            elif a.kwarg is not None:
                extra[k] = v
            else:
                raise self.error(TileTypeError, f"{name}() got an unexpected keyword argument {k!r}", node)
        for p, d in zip(positional[len(positional) - len(fn.defaults):], fn.defaults):
            bound.setdefault(p, d)
        for kw, d in zip(a.kwonlyargs, fn.kw_defaults):
            if kw.arg not in bound and d is not MISSING:
                bound[kw.arg] = d
        missing = [p for p in positional + [k.arg for k in a.kwonlyargs] if p not in bound]
        if missing:
            raise self.error(TileTypeError, f"{name}() missing argument(s): {', '.join(map(repr, missing))}", node)
        if a.kwarg is not None:
            bound[a.kwarg.arg] = extra
        return bound

    # ------------------------------------------------------------------ static evaluation

    def _static_namespace(self, node: ast.expr) -> dict[str, Any]:
        """Globals and local names for evaluating ``node`` in Python; every global the
        expression names is recorded as read (a later change recompiles)."""
        ns = dict(self.globals)
        ns.update({k: static_facts(v) for k, v in self.env.items() if not k.startswith("$")
                   and not isinstance(v, Undefined)})
        for name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}:
            if name not in self.env:
                self.captures.name(self.globals, name, self.globals.get(name, ABSENT))
        return ns

    def _static_eval_node(self, node: ast.expr) -> Any:
        expr = ast.Expression(body=node)
        too_big = literal_too_big(node)
        if too_big:
            raise self.error(TileStaticEvalError, f"cannot evaluate at compile time: {too_big}", node)
        try:
            code = compile(expr, self.parsed.filename, "eval")
            value = eval(code, self._static_namespace(node))  # noqa: S307 - the user's own kernel code
        except TileError:
            raise
        except Exception as e:  # noqa: BLE001 - any failure is the user's expression failing
            raise self.error(TileStaticEvalError, f"cannot evaluate at compile time: {describe(e)}",
                             node) from None
        if isinstance(value, (Tile, Array)) or (isinstance(value, tuple) and not is_static(value)):
            raise self.error(TileStaticEvalError, "ct.static_eval produced a run-time value; only compile-time "
                             "facts (shapes, dtypes, constants) can be evaluated", node)
        return value

    def _static_assert(self, node: ast.Call) -> None:
        """``ct.static_assert(condition, message=None)``: both are evaluated like ``static_eval``
        (full Python syntax), the message only when the condition is false."""
        args = list(node.args)
        kw = {k.arg: k.value for k in node.keywords}
        if "message" in kw:
            args.append(kw.pop("message"))
        if not 1 <= len(args) <= 2 or kw:
            raise self.error(TileTypeError, "ct.static_assert(condition, message=None) takes a condition and an "
                             "optional message", node)
        cond = self._static_eval_value(args[0])
        if isinstance(cond, (Tile, Array)):
            raise self.error(TileTypeError, f"static_assert() condition must be a compile-time constant, got a "
                             f"run-time {cond.type}", args[0])
        if not cond:
            msg = self._static_eval_value(args[1]) if len(args) == 2 else None
            from ..ops.debug import FormatString
            text = msg.text() if isinstance(msg, FormatString) else ("" if msg is None else str(msg))
            if len(args) == 1:
                text = ast.unparse(args[0])
            raise self.error(TileStaticAssertionError, f"Static assertion failed: {text}" if text else
                             "Static assertion failed", node)
        return None

    def _static_eval_value(self, node: ast.expr) -> Any:
        """``node`` evaluated with Python's semantics (as ``static_eval``), run-time values allowed."""
        try:
            code = compile(ast.Expression(body=node), self.parsed.filename, "eval")
            return eval(code, self._static_namespace(node))  # noqa: S307 - the user's own kernel code
        except TileError:
            raise
        except Exception as e:  # noqa: BLE001 - any failure is the user's expression failing
            raise self.error(TileStaticEvalError, f"cannot evaluate at compile time: {describe(e)}",
                             node) from None
