"""C-compiler spellings on the ``transpile`` command line, mapped onto its own options (docs/cli.md).

Users type what they type to gcc and nvcc: ``-O2``, ``-std=c11``, ``-Wall``,
``-Wno-flat-index``, ``-Werror``, ``-w``, ``-v``, ``-x c``.  click parses
``-std=c99`` as ``-s td=c99``, so :func:`normalize` rewrites the compile
command's arguments before click sees them:

=================  ==============================================================
``-O0``            ``--naive`` (the baseline mapping)
``-O``, ``-O1``,   the default pipeline (nothing)
``-O2``, ``-Os``
``-O3``,           ``--evolve`` (the schedule search)
``-Ofast``
``-std=STD``       accepted for the C dialects (pycparser parses C99 to C11 and
                   the GNU spellings the fake libc headers need); else an error
``-x c``           accepted (the only language; ``.ir`` files are read by suffix)
``-w``             ``--w-off``: no warnings
``-Werror``        ``--w-error all``; ``-Werror=ID``: ``--w-error ID``
``-Wno-ID``        ``--silence ID``
``-WID``           ``--w-on ID`` (on by default: the id is checked)
``-Wall``,         accepted (every warning is on)
``-Wextra``, ...
``-v``, ``-q``     ``--verbose``, ``--quiet``
=================  ==============================================================

A repeated ``--function`` with different names is an error that says how to
compile several functions (leave ``--function`` out: every function with loops,
or those marked ``#pragma scop``, goes into one .cu).
"""

from __future__ import annotations

import click

#: ``-std=`` values accepted.
STANDARDS = frozenset({"c89", "c90", "c99", "c9x", "c11", "c1x", "c17", "c18", "c2x", "c23",
                       "gnu89", "gnu90", "gnu99", "gnu9x", "gnu11", "gnu1x", "gnu17", "gnu18", "gnu2x", "gnu23",
                       "iso9899:1990", "iso9899:199409", "iso9899:1999", "iso9899:2011", "iso9899:2017",
                       "iso9899:2018"})
#: Warning groups gcc users pass that name no single warning: every warning is on anyway.
GROUPS = frozenset({"all", "extra", "pedantic", "everything"})
#: Options of ``transpile compile`` that take a value as the next argument (never rewritten).
_VALUED = frozenset({"-o", "--output", "--emit", "--function", "-I", "-D", "--dump-ir", "--silence", "--tile",
                     "--coarsen", "--rows", "--stream", "--sweep", "--block", "--evolve-rounds", "--evolve-time",
                     "--evolve-seed", "--evolve-size", "--evolve-measure", "--report", "--from-text", "--model",
                     "--llm-base-url", "--llm-log", "--llm-rounds", "--llm-timeout", "--llm-retries",
                     "--llm-max-tokens", "--llm-token-budget", "--arch", "--header", "--w-error", "--w-on"})


def normalize(args: list[str]) -> list[str]:
    """``transpile compile``'s arguments with the C-compiler spellings rewritten (see the module doc)."""
    out: list[str] = []
    functions: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            out += args[i - 1:]
            break
        if a in _VALUED and i < len(args):
            if a == "--function":
                functions.append(args[i])
            out += [a, args[i]]
            i += 1
            continue
        if a.startswith("--function="):
            functions.append(a.split("=", 1)[1])
        out += _rewrite(a, args, i)
        if a == "-x" and i < len(args):
            i += 1  # its value was checked by _rewrite
    if len(set(functions)) > 1:
        raise click.UsageError(
            f"--function given {len(functions)} times ({', '.join(functions)}): one --function picks one "
            "function; leave --function out to compile every function with loops (or those holding "
            "'#pragma scop') into one .cu, or run transpile once per function")
    return out


def _rewrite(a: str, args: list[str], i: int) -> list[str]:
    """One argument's replacement (``args[i]`` follows it)."""
    if a.startswith("-O") and not a.startswith("--"):
        level = a[2:]
        if level == "0":
            return ["--naive"]
        if level in ("", "1", "2", "s", "g"):
            return []
        if level in ("3", "fast"):
            return ["--evolve"]
        raise click.UsageError(f"unknown optimization level '{a}' (-O0: the naive mapping; -O1, -O2: the "
                               "default; -O3: the schedule search)")
    if a.startswith(("-std=", "--std=")):
        std = a.split("=", 1)[1]
        if std not in STANDARDS:
            raise click.UsageError(f"'{a}': not a C standard this compiler reads (c99, c11, c17, gnu11, ...)")
        return []
    if a == "-x" or (a.startswith("-x") and len(a) > 2 and not a.startswith("--")):
        lang = a[2:] if len(a) > 2 else (args[i] if i < len(args) else "")
        if lang != "c":
            raise click.UsageError(f"-x {lang}: only C input is read this way (-x c; .ir files by their suffix)")
        return []
    if a == "-w":
        return ["--w-off"]
    if a == "-v":
        return ["--verbose"]
    if a == "-q":
        return ["--quiet"]
    if a == "-pedantic":
        return []
    if a.startswith("-W") and len(a) > 2:
        name = a[2:]
        if name == "error":
            return ["--w-error", "all"]
        if name.startswith("error="):
            return ["--w-error", name[6:]]
        if name.startswith("no-error"):
            return []  # warnings stay warnings (the default)
        if name.startswith("no-"):
            return [] if name[3:] in GROUPS else ["--silence", name[3:]]
        return [] if name in GROUPS else ["--w-on", name]
    return [a]
