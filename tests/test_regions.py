"""The region marker protocol (transpile.cuda.regions): strip, nesting, errors."""

import pytest

from transpile.cuda import regions
from transpile.cuda.regions import Span, mark, strip


def test_strip_records_offsets_in_clean_text():
    text = "a" + mark("guard", "if (i < n) {" + mark("index", "i*n+j") + "}") + "z"
    clean, spans = strip(text)
    assert clean == "aif (i < n) {i*n+j}z"
    assert spans == [Span("guard", 1, 19), Span("index", 13, 18)]
    assert spans[1].of(clean) == "i*n+j"


def test_no_markers_is_identity():
    assert strip("__global__ void k() {}") == ("__global__ void k() {}", [])


@pytest.mark.parametrize("bad", [
    regions.OPEN + "guard" + regions.SEP + "x",          # never closed
    "x" + regions.CLOSE,                                  # never opened
    regions.OPEN + "nonsense" + regions.SEP + "x" + regions.CLOSE,
    "a" + regions.SEP + "b",
])
def test_malformed_markers_raise(bad):
    with pytest.raises(ValueError):
        strip(bad)


def test_unknown_label_rejected_at_mark():
    with pytest.raises(ValueError):
        mark("bogus", "x")


def test_template_filter_marks():
    from transpile import cuda
    t = cuda.environment().from_string('{{ "__syncthreads();" | region("barrier") }}')
    assert strip(t.render()) == ("__syncthreads();", [Span("barrier", 0, 16)])
