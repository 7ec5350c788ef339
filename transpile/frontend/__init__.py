"""Front-end dispatch: a path to IR by its suffix (.c/.h through pycparser, .ir as text)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from transpile import ir
from transpile.diagnostics import Loc, TranspileError


def load(path: Path, *, function: str | None = None, include_dirs: Sequence[str] = (),
         defines: Sequence[str] = ()) -> ir.Module:
    """Read ``path`` (C source or the IR text form) into a Module."""
    if not path.exists():
        raise TranspileError(None, f"{path}: no such file or directory")
    if path.is_dir():
        raise TranspileError(None, f"{path}: is a directory")
    if path.suffix == ".ir":
        from transpile.ir import text

        try:
            source = path.read_text()
        except UnicodeDecodeError:
            raise TranspileError(Loc(str(path), 1, 1), "file is not UTF-8 text") from None
        module = text.parse(source, str(path))
        if function is not None:
            picked = tuple(k for k in module.kernels if k.name == function)
            if not picked:
                names = ", ".join(k.name for k in module.kernels) or "none"
                raise TranspileError(Loc(str(path), 1, 1),
                                     f"no kernel named '{function}' (kernels in this file: {names})")
            module = ir.Module(module.funcs, picked, loc=module.loc)
        return module
    if path.suffix in (".c", ".h", ".i"):
        from transpile.frontend import c as cfront

        return cfront.parse_file(str(path), function=function, include_dirs=include_dirs,
                                 defines=defines)
    raise TranspileError(None, f"{path}: unknown input kind '{path.suffix}' (expected .c or .ir)")
