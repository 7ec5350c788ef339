"""Text2CUDA: natural-language kernel specs -> IR text form (through an LLM) -> verified CUDA.

The model never writes the CUDA: it writes the IR's text form
(``grammars/loopir.lark``), which is parsed and checked like any other input;
everything it returns is data, never executed.  See ``docs/text2cuda.md``.

* :mod:`transpile.llm.client` -- the OpenAI-compatible client (retries, caps, transcript).
* :mod:`transpile.llm.prompts` -- the prompts and worked examples.
* :mod:`transpile.llm.generate` -- generation with parse/type-error repair rounds.
* :mod:`transpile.llm.crosscheck` -- the isolated reference, the interpreter comparison, arbitration.
* :mod:`transpile.llm.fromtext` -- the ``--from-text`` driver (pipeline, verifier, atomic output).
"""
