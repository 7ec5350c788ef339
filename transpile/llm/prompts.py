"""The prompts: the IR grammar, worked examples, and the three roles' instructions.

Three independent conversations use them: the *generator* writes the IR for
the spec, the *reference* writer (a fresh conversation that never sees the
generator's answer and is not told how it is used) writes the plainest
possible IR for the same spec, and the *arbiter* is shown both programs and a
counterexample when they disagree.  The spec text and the model's answers are
data: they are quoted into messages and parsed, never executed.
"""

from __future__ import annotations

from functools import cache

from transpile.resources import data_dir

EXAMPLES: tuple[tuple[str, str], ...] = (
    (
        "Leaky ReLU in single precision: for each of the n elements of x, write x[i] if it is "
        "positive and alpha * x[i] otherwise into y. Signature: leaky_relu(n, alpha, x, y).",
        """kernel leaky_relu(i32 n, f32 alpha, in f32 x[n], out f32 y[n]) {
  for i in 0..n {
    y[i] = x[i] > 0.0f ? x[i] : alpha * x[i];
  }
}""",
    ),
    (
        "Double-precision matrix-vector product y = A x, where A is m x n (row-major), x has n "
        "elements and y has m. Signature: matvec(m, n, A, x, y).",
        """kernel matvec(i32 m, i32 n, in f64 A[m][n], in f64 x[n], out f64 y[m]) {
  for i in 0..m {
    f64 acc = 0.0;
    for j in 0..n {
      acc += A[i][j] * x[j];
    }
    y[i] = acc;
  }
}""",
    ),
    (
        "Running maximum: out[i] is the largest of v[0..i] (inclusive), doubles, n elements. "
        "Signature: running_max(n, v, out).",
        """kernel running_max(i32 n, in f64 v[n], out f64 out[n]) {
  if (n > 0) {
    f64 m = v[0];
    for i in 0..n {
      m = fmax(m, v[i]);
      out[i] = m;
    }
  }
}""",
    ),
)

_RULES = """\
Rules of the language (the grammar below is authoritative):
- One `kernel NAME(params) { ... }`, optionally preceded by scalar helper `func`s.
- Parameters: scalars `i32 n`, `f32 a`; arrays `in f32 X[n]`, `out f64 C[m][n]`, `inout f32 Y[n]`
  (intent in = only read, out = only written, inout = both). Extents are expressions over scalar parameters.
- Loops: `for i in lo..hi { }` (hi exclusive), optional `step K` with a constant K. No C-style for,
  no while, no break/continue, no ++/--. Braces are always required.
- Locals: `f64 acc = 0.0;` (each name declared once per kernel). Literals: 1 (i32), 1.0 (f64), 1.0f (f32).
- Math functions are C's: sqrt/sqrtf, exp/expf, fmax/fmaxf, fabs/fabsf, ...
- A function that returns a value (a dot product, a maximum): the result is the last parameter,
  `out f64 result[1]`, the body ends with `result[0] = ...;`, and the header names it after the
  parameters: `kernel dot(i32 n, in f64 x[n], in f64 y[n], out f64 result[1]) -> result {`.
- Write plain sequential loops; the compiler finds the parallelism. Do not write `launch` or `par`.
- Use exactly the kernel name, parameter names, parameter order and types the description gives."""

_ANSWER = ("Answer with exactly one fenced code block tagged `ir` holding the program, and nothing "
           "else of importance: text outside the block is ignored.")


@cache
def grammar_text() -> str:
    """The lark grammar of the IR text form, as shipped."""
    return (data_dir("grammars") / "loopir.lark").read_text()


def _examples() -> str:
    parts = []
    for spec, ir_text in EXAMPLES:
        parts.append(f"Description:\n{spec}\n\nAnswer:\n```ir\n{ir_text}\n```")
    return "\n\n".join(parts)


def _system(task: str) -> str:
    return (f"{task}\n\n{_RULES}\n\n{_ANSWER}\n\n"
            f"The grammar of the language (lark EBNF):\n```lark\n{grammar_text()}```\n\n"
            f"Worked examples:\n\n{_examples()}")


GENERATOR_TASK = ("You are a compiler front end. You translate a natural-language description of a "
                  "numerical kernel into the loopir language, the text form of a typed loop-nest IR.")

REFERENCE_TASK = ("You write reference implementations of numerical kernels in the loopir language, "
                  "the text form of a typed loop-nest IR. Write the most straightforward, naive "
                  "program for the description: plain loops in the obvious order, one output element "
                  "at a time, no optimisation or reordering of any kind. Clarity over speed.")

ARBITER_TASK = ("You review two candidate programs in the loopir language (a C-like loop language) "
                "written for the same natural-language description of a numerical kernel.")


def generator_messages(spec: str) -> list[dict[str, str]]:
    """The first request of the generator conversation."""
    return [{"role": "system", "content": _system(GENERATOR_TASK)},
            {"role": "user", "content": f"Description:\n{spec}"}]


def reference_messages(spec: str) -> list[dict[str, str]]:
    """The first request of the (independent) reference conversation."""
    return [{"role": "system", "content": _system(REFERENCE_TASK)},
            {"role": "user", "content": f"Description:\n{spec}"}]


def repair_message(error: str) -> dict[str, str]:
    """The follow-up after an answer failed to parse or type-check."""
    return {"role": "user", "content": (
        "Your answer was rejected by the loopir parser/type checker:\n"
        f"```\n{error}\n```\n"
        "Fix the program and answer again with the whole program in one fenced `ir` block.")}


def arbiter_messages(spec: str, a: str, b: str, evidence: str) -> list[dict[str, str]]:
    """The arbitration request: both programs, the evidence of disagreement, one question."""
    return [{"role": "system", "content": f"{ARBITER_TASK}\n\n{_RULES}"},
            {"role": "user", "content": (
                f"Description:\n{spec}\n\n"
                f"Program A:\n```ir\n{a}\n```\n\n"
                f"Program B:\n```ir\n{b}\n```\n\n"
                f"They disagree:\n{evidence}\n\n"
                "Which program matches the description? Explain briefly why, then end your answer "
                "with a line `CHOICE: A` or `CHOICE: B`.")}]
