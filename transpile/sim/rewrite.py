"""Source-to-source rewriting that lets g++ compile a .cu file against cuda_sim.h.

Three rewrites, all of which keep every line on its original line number (so
g++'s messages and ``__LINE__`` point into the .cu file):

* ``k<<<grid, block[, smem[, stream]]>>>(args)`` becomes
  ``__sim_launch(k, __sim::LaunchConfig(grid, block, ...).at("k", __FILE__, line), args)``;
* ``extern __shared__ T s[];`` becomes ``T * const s = reinterpret_cast<T (*)>(__sim::dyn_smem);``
  (every dynamic shared array aliases one buffer, as in CUDA);
* ``__shared__ T a[n], b;`` gets ``static const bool __sim_sharedK =
  __sim::register_shared(&a, sizeof(a));`` (and one for ``b``) appended on the
  same line: the scheduler poisons every registered variable at the start of
  each block, so a read of shared memory no thread of the block wrote gives
  the same poison (NaN, -1) on every run instead of a stale value;
* ``static __shared__`` loses the ``static`` (``__shared__`` already expands to
  it), ``cudaLaunchKernel((void*)k, ...)`` loses the cast (the simulator needs
  ``k``'s parameter types), and ``__noinline__`` becomes
  ``__attribute__((noinline))`` here rather than as a macro, because libstdc++
  spells ``__attribute__((__noinline__))``.

All scanning runs on a *masked* copy of the text, where comments and the
insides of string and character literals are blanked to spaces, so a ``<<<``
in a comment or a ``)`` in a string never confuses the bracket matching.

:func:`unsupported` lists the CUDA features the simulator does not model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from transpile.diagnostics import Loc

_IDENT = re.compile(r"[A-Za-z_]\w*")
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}


@lru_cache(maxsize=4)
def mask(text: str) -> str:
    """``text`` with comments and literal contents replaced by spaces (newlines kept).

    Cached: a simulator build masks the same file four times (:func:`unsupported`, :func:`rewrite`,
    :func:`kernel_names`, the signature's reading), 30 ms each for an emitted file."""
    out = list(text)
    n = len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    i = 0
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == '"' and re.search(r"(?:^|\W)(?:u8|u|U|L)?R$", text[max(0, i - 3):i]):
            m = re.match(r'"([^()\\\s]{0,16})\(', text[i:])
            close = ")" + (m.group(1) if m else "") + '"'
            j = text.find(close, i + 1)
            j = n if j < 0 else j + len(close)
            blank(i + 1, j - 1)
            i = j
        elif c == '"' or (c == "'" and not _is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _is_digit_separator(text: str, i: int) -> bool:
    """Whether the quote at ``i`` separates digits, as in ``1'000'000``."""
    k = i
    while k > 0 and (text[k - 1].isalnum() or text[k - 1] in "_'."):
        k -= 1
    return k < i and text[k].isdigit()


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _match_forward(m: str, i: int) -> int:
    """Index just past the bracket that closes the one opening at ``m[i]``."""
    stack = [_OPEN[m[i]]]
    j = i + 1
    while j < len(m) and stack:
        if m[j] in _OPEN:
            stack.append(_OPEN[m[j]])
        elif m[j] in _CLOSE:
            if m[j] != stack.pop():
                return -1
        j += 1
    return j if not stack else -1


def _skip_ws_back(m: str, i: int) -> int:
    while i > 0 and m[i - 1].isspace():
        i -= 1
    return i


def _match_back(m: str, close: int, opens: str, closes: str) -> int:
    """Index of the bracket that opens the one closing at ``m[close]``."""
    depth, k = 0, close
    while k >= 0:
        depth += m[k] in closes
        depth -= m[k] in opens
        if depth == 0:
            return k
        k -= 1
    return 0


def _callee_start(m: str, end: int) -> int:
    """Start of the callee expression ending at ``end``: ``ns::k<T, 4>``, ``obj.fp``, ``(*fp)``."""
    i = _skip_ws_back(m, end)
    while True:
        if i > 0 and m[i - 1] == ")":
            i = _match_back(m, i - 1, "([{", ")]}")
        else:
            if i > 0 and m[i - 1] == ">":  # template arguments
                i = _skip_ws_back(m, _match_back(m, i - 1, "<([", ">)]"))
            k = i
            while k > 0 and (m[k - 1].isalnum() or m[k - 1] == "_"):
                k -= 1
            if k == i:
                return i
            i = k
        j = _skip_ws_back(m, i)
        sep = j - 2 if m[j - 2:j] in ("::", "->") else j - 1 if m[j - 1:j] == "." else -1
        if sep < 0:
            return i
        prev = _skip_ws_back(m, sep)
        if prev == 0 or not (m[prev - 1].isalnum() or m[prev - 1] in "_>)"):
            return sep if m[sep:sep + 2] == "::" else i  # a leading '::' belongs to the name
        i = prev


@dataclass(frozen=True, slots=True)
class Launch:
    """A ``callee<<<config>>>(args)`` expression: text spans and its 1-based line."""

    start: int
    end: int
    callee: tuple[int, int]
    config: tuple[int, int]
    args: tuple[int, int]
    line: int


def find_launches(text: str, masked: str | None = None) -> list[Launch]:
    """Every kernel launch in ``text``, in source order.

    Raises ``ValueError`` (with a line number) for a ``<<<`` whose ``>>>`` or
    argument list cannot be matched.
    """
    m = mask(text) if masked is None else masked
    launches: list[Launch] = []
    pos = 0
    while (s := m.find("<<<", pos)) >= 0:
        line = m.count("\n", 0, s) + 1
        depth, j = 0, s + 3
        while j < len(m):
            if m[j] in "([{":
                depth += 1
            elif m[j] in ")]}":
                depth -= 1
            elif depth == 0 and m.startswith(">>>", j):
                break
            j += 1
        else:
            raise ValueError(f"line {line}: '<<<' without a matching '>>>'")
        cfg = (s + 3, j)
        k = j + 3
        while k < len(m) and m[k].isspace():
            k += 1
        if k >= len(m) or m[k] != "(":
            raise ValueError(f"line {line}: kernel launch without an argument list")
        close = _match_forward(m, k)
        if close < 0:
            raise ValueError(f"line {line}: unbalanced kernel launch arguments")
        start = _callee_start(m, s)
        if not m[start:s].strip():
            raise ValueError(f"line {line}: kernel launch without a kernel name")
        launches.append(Launch(start, close, (start, s), cfg, (k + 1, close - 1), line))
        pos = close
    return launches


_EXTERN_SHARED = re.compile(r"\bextern\b(?P<decl>[^;{}]*\b__shared__\b[^;{}]*);")
_ATTRS = re.compile(r"\b__shared__\b|\b__align__\s*\([^)]*\)|\balignas\s*\([^)]*\)|\b__attribute__\s*\(\(.*?\)\)")
_ARRAY_DECL = re.compile(r"^(?P<type>.*?[\w*&\s])\s*\b(?P<name>[A-Za-z_]\w*)\s*\[\s*\](?P<dims>(?:\s*\[[^\]]*\])*)\s*$",
                         re.S)


def _split_top_level(s: str) -> list[str]:
    """``s`` split at commas outside any (), [], {} or <>."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(s):
        depth += c in "([{<"
        depth -= c in ")]}>"
        if c == "," and depth == 0:
            parts.append(s[start:i])
            start = i + 1
    return [*parts, s[start:]]


def _shared_declarations(m: str) -> list[tuple[int, list[str]]]:
    """Static ``__shared__`` declarations: the offset just past each one's ``;``
    and the names it declares (``extern __shared__`` ones are left out)."""
    externs = [x.span() for x in _EXTERN_SHARED.finditer(m)]
    decls = []
    for sm in re.finditer(r"\b__shared__\b", m):
        line_start = m.rfind("\n", 0, sm.start()) + 1
        semi = m.find(";", sm.end())
        in_macro = m[line_start:].lstrip().startswith("#") or m[:max(line_start - 1, 0)].rstrip(" \t").endswith("\\")
        if semi < 0 or in_macro or any(a <= sm.start() < b for a, b in externs):
            continue
        body = _ATTRS.sub(" ", m[sm.end():semi])
        names = []
        for piece in _split_top_level(body):
            ids = _IDENT.findall(re.split(r"[\[=(]", piece, maxsplit=1)[0])
            if ids and ids[-1] not in ("const", "volatile", "static"):
                names.append(ids[-1])
        decls.append((semi + 1, names))
    return decls


def _padded(old: str, new: str) -> str:
    """``new`` followed by the newlines it lacks compared with ``old``."""
    return new + "\n" * max(0, old.count("\n") - new.count("\n"))


def rewrite(text: str) -> str:
    """The .cu ``text`` rewritten for g++ and cuda_sim.h (see the module docstring).

    Raises ``ValueError`` with a line number for a launch or an
    ``extern __shared__`` declaration it cannot parse.
    """
    m = mask(text)
    edits: list[tuple[int, int, str]] = []
    for ln in find_launches(text, m):
        callee = text[ln.callee[0]:ln.callee[1]].strip()
        name = " ".join(m[ln.callee[0]:ln.callee[1]].split()).replace("\\", "\\\\").replace('"', '\\"')
        cfg = text[ln.config[0]:ln.config[1]]
        args = text[ln.args[0]:ln.args[1]]
        new = (f'__sim_launch({callee}, __sim::LaunchConfig({cfg}).at("{name}", __FILE__, {ln.line})'
               + (f", {args}" if m[ln.args[0]:ln.args[1]].strip() else "") + ")")
        edits.append((ln.start, ln.end, _padded(text[ln.start:ln.end], new)))
    for em in _EXTERN_SHARED.finditer(m):
        decl = " ".join(_ATTRS.sub(" ", em.group("decl")).split())
        dm = _ARRAY_DECL.match(decl)
        if not dm or not dm.group("type").strip():
            raise ValueError(f"line {_line_col(m, em.start())[0]}: cannot parse the extern __shared__ "
                             f"declaration '{' '.join(em.group(0).split())}'")
        ty, name, dims = dm.group("type").strip(), dm.group("name"), "".join(dm.group("dims").split())
        ptr = f"(* const {name}){dims}" if dims else f"* const {name}"
        new = f"{ty} {ptr} = reinterpret_cast<{ty} (*){dims}>(__sim::dyn_smem);"
        edits.append((em.start(), em.end(), _padded(text[em.start():em.end()], new)))
    for k, (end, names) in enumerate(_shared_declarations(m)):
        regs = "".join(f" [[maybe_unused]] static const bool __sim_shared{k}_{i} = "
                       f"__sim::register_shared((void*)&{n}, sizeof({n}), \"{n}\");" for i, n in enumerate(names))
        edits.append((end, end, regs))
    for sm in re.finditer(r"\bstatic(?=\s+__shared__\b)|(?<=__shared__)\s+static\b", m):
        edits.append((sm.start(), sm.end(), " " * (sm.end() - sm.start())))
    # cudaLaunchKernel((void*)k, ...): the simulator needs k's type to unpack args.
    for cm in re.finditer(r"\bcudaLaunchKernel\s*\(\s*(\(\s*(?:const\s+)?void\s*\*\s*\))", m):
        edits.append((cm.start(1), cm.end(1), " " * (cm.end(1) - cm.start(1))))
    for nm in re.finditer(r"\b__noinline__\b", m):
        edits.append((nm.start(), nm.end(), "__attribute__((noinline))"))
    edits.sort()
    for (_, e0, _), (s1, _, _) in zip(edits, edits[1:]):
        assert e0 <= s1, f"overlapping rewrites at offset {s1}"
    out = text
    for s, e, new in reversed(edits):
        out = out[:s] + new + out[e:]
    return out


# ---------------------------------------------------------------- feature checks

_FEATURES: tuple[tuple[str, str], ...] = (
    (r"\b(?:asm|__asm__|__asm)\b", "inline PTX assembly (asm)"),
    (r"\bcooperative_groups\b|\bthis_grid\s*\(|\bgrid_group\b|\bthread_block_tile\b",
     "cooperative groups"),
    (r"\bcudaLaunchCooperativeKernel\w*", "cooperative launch"),
    (r"\bnvcuda\b|\bwmma\s*::|\bmma_sync\b", "tensor cores (wmma)"),
    (r"\b__half2?\b|\b__nv_bfloat162?\b|\b__nv_fp8\w*", "half/bfloat16/fp8 types"),
    (r"\btex(?:1D|2D|3D|Cubemap)\w*\s*\(|\btexture\s*<|\bsurf(?:1D|2D|3D)\w*\s*\("
     r"|\bcuda(?:Texture|Surface)Object_t\b|\bcudaCreate(?:Texture|Surface)Object\b|\bcudaArray\w*",
     "texture/surface objects"),
    (r"\b__cluster_dims__\b|\bcluster_group\b|\bcudaLaunchKernelEx\b", "thread block clusters"),
    (r"\bmemcpy_async\b|\b__pipeline_\w+", "asynchronous copies (memcpy_async/pipeline)"),
    (r"\bcudaGraph\w*|\bcudaStreamBeginCapture\b", "CUDA graphs"),
)

_INCLUDES: tuple[tuple[str, str], ...] = (
    (r"cooperative_groups", "cooperative groups"),
    (r"mma\.h$", "tensor cores (wmma)"),
    (r"cuda_(?:fp16|bf16|fp8)\.h(?:pp)?$", "half/bfloat16/fp8 types"),
    (r"^cuda\.h$", "CUDA driver API (cuda.h)"),
    (r"^(?:cublas|cufft|curand|cusparse|cusolver|cudnn|nccl|nvrtc|cutensor)", "CUDA libraries"),
    (r"^(?:thrust|cub)/", "Thrust/CUB"),
    (r"^cuda/", "libcu++ (<cuda/...>)"),
    (r"^cuda_(?:pipeline|awbarrier)", "asynchronous copies (memcpy_async/pipeline)"),
    (r"texture_(?:fetch_functions|types)\.h$|^cuda_texture_types\.h$|^surface_", "texture/surface objects"),
)

_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]", re.M)
_DEVICE_WORD = re.compile(r"\b(?:__global__|__device__)\b")


def _scopes(m: str) -> list[tuple[int, int, str]]:
    """Brace scopes as ``(open, close, header)``, the header being the text since
    the previous ``;``, ``{`` or ``}`` with preprocessor lines dropped."""
    scopes: list[tuple[int, int, str]] = []
    stack: list[tuple[int, str]] = []
    last = 0
    for i, c in enumerate(m):
        if c == "{":
            header = "\n".join(ln for ln in m[last:i].splitlines() if not ln.lstrip().startswith("#"))
            stack.append((i, header))
            last = i + 1
        elif c == "}":
            if stack:
                o, h = stack.pop()
                scopes.append((o, i, h))
            last = i + 1
        elif c == ";":
            last = i + 1
    return scopes


def _in_device_code(scopes: list[tuple[int, int, str]], pos: int) -> bool:
    """Whether ``pos`` lies in the body of a ``__global__``/``__device__`` function."""
    enclosing = sorted((o, h) for o, c, h in scopes if o < pos < c)
    for _, header in enclosing:
        if re.fullmatch(r"\s*(?:namespace\b[^{]*|extern\s*\"\s*\"\s*)", header):
            continue  # namespace and extern "C" blocks are transparent
        return bool(_DEVICE_WORD.search(header))
    return False


def unsupported(text: str, filename: str, *, known_api: frozenset[str]) -> list[tuple[str, Loc]]:
    """CUDA features of ``text`` that the simulator does not model, in source order.

    ``known_api`` holds the ``cuda*`` identifiers the simulator header defines;
    a call to any other ``cudaXxx(...)`` that the file does not define itself is
    reported as an unsupported runtime API.  Lines in ``#if defined(__CUDA_ARCH__)``
    (``#ifdef __CUDA_ARCH__``) branches are not scanned: ``__CUDA_ARCH__`` is
    undefined here, so g++ never compiles them.
    """
    m = _blank_device_only(mask(text))
    found: list[tuple[int, str]] = []
    for pat, feature in _FEATURES:
        found += [(x.start(), feature) for x in re.finditer(pat, m)]
    for inc in _INCLUDE_LINE.finditer(text):
        for pat, feature in _INCLUDES:
            if re.search(pat, inc.group(1)):
                found.append((inc.start(1), feature))
    scopes = _scopes(m)
    try:
        launches = find_launches(text, m)
    except ValueError:
        launches = []  # rewrite() reports it with its line
    found += [(ln.start, "dynamic parallelism (kernel launch in device code)")
              for ln in launches if _in_device_code(scopes, ln.start)]
    defined = set(re.findall(r"#\s*define\s+(cuda[A-Z]\w*)", m))
    defined |= set(re.findall(r"\b(cuda[A-Z]\w*)\s*\([^;{}()]*\)\s*(?:const\s*)?\{", m))
    reported_api: set[str] = set()
    for call in re.finditer(r"\b(cuda[A-Z]\w*)(?=\s*\()", m):
        name = call.group(1)
        if name not in known_api and name not in defined and name not in reported_api:
            if all(pos != call.start() for pos, _ in found):  # not already named by a feature pattern
                found.append((call.start(), f"CUDA runtime API {name}()"))
            reported_api.add(name)
    found.sort()
    return [(feature, Loc(filename, *_line_col(text, pos))) for pos, feature in found]


_IF = re.compile(r"[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)")
_DEVICE_ONLY = re.compile(r"\s*(?:defined\s*\(\s*__CUDA_ARCH__\s*\)|defined\s+__CUDA_ARCH__|__CUDA_ARCH__)\s*")


def _blank_device_only(m: str) -> str:
    """``m`` with the lines of ``#if defined(__CUDA_ARCH__)`` branches blanked (up to the
    matching ``#elif``/``#else``/``#endif``), newlines kept."""
    lines = m.split("\n")
    depth, dead = 0, 0  # nesting depth; depth of the open dead branch (0: none)
    for n, line in enumerate(lines):
        d = _IF.match(line)
        kind = d.group(1) if d else ""
        if kind in ("if", "ifdef", "ifndef"):
            depth += 1
            if not dead and kind != "ifndef" and _DEVICE_ONLY.fullmatch(d.group(2)):  # type: ignore[union-attr]
                dead = depth
                continue
        elif kind in ("elif", "else", "endif") and dead == depth:
            dead = 0
        if kind == "endif":
            depth -= 1
        if dead:
            lines[n] = " " * len(line)
    return "\n".join(lines)


def kernel_names(text: str) -> tuple[str, ...]:
    """Names of the ``__global__`` functions defined or declared in ``text``."""
    m = mask(text)
    names: list[str] = []
    for g in re.finditer(r"\b__global__\b", m):
        i = g.end()
        while (paren := m.find("(", i)) >= 0:
            last = re.search(r"([A-Za-z_]\w*)\s*$", m[g.end():paren])
            if last and last.group(1) in _QUALIFIERS_WITH_ARGS:
                i = max(_match_forward(m, paren), paren + 1)  # skip __launch_bounds__(...) and the like
                continue
            if last and last.group(1) not in names:
                names.append(last.group(1))
            break
    return tuple(names)


_QUALIFIERS_WITH_ARGS = frozenset({"__launch_bounds__", "__maxnreg__", "__attribute__", "__align__", "alignas"})
