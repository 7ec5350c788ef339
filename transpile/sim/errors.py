"""Exceptions of the CUDA simulator.

They derive from :class:`~transpile.diagnostics.TranspileError`, so the CLI
prints them as ``file:line:col: error: msg`` without a traceback.
"""

from __future__ import annotations

from transpile.diagnostics import Loc, TranspileError


class SimError(TranspileError):
    """Base class of every simulator failure."""


class SimUnsupported(SimError):
    """The .cu file uses a CUDA feature the simulator does not model.

    ``feature`` names the first one found (e.g. ``"inline PTX assembly (asm)"``);
    ``features`` lists every ``(feature, loc)`` found, in source order.
    """

    def __init__(self, features: list[tuple[str, Loc]], *, source: str | None = None) -> None:
        assert features, "SimUnsupported needs at least one feature"
        self.features = tuple(features)
        self.feature = features[0][0]
        names = ", ".join(dict.fromkeys(f for f, _ in features))
        super().__init__(features[0][1], f"unsupported by the CUDA simulator: {names}", source=source)


class SimBuildError(SimError):
    """g++ rejected the rewritten .cu file; ``output`` is its full message."""

    def __init__(self, loc: Loc | None, msg: str, *, output: str = "", source: str | None = None) -> None:
        super().__init__(loc, msg, source=source)
        self.output = output


class SimCrash(SimError):
    """The simulated program died (signal or ``exit``) instead of returning."""

    def __init__(self, msg: str, *, exitcode: int | None, stderr: str = "") -> None:
        super().__init__(None, msg)
        self.exitcode = exitcode
        self.stderr = stderr


class SimTimeout(SimError):
    """The simulated program ran past its time limit (a spin loop, or far too big)."""

    def __init__(self, msg: str, *, stderr: str = "") -> None:
        super().__init__(None, msg)
        self.stderr = stderr
