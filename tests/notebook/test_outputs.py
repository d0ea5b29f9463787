"""Output post-processing without a kernel: nbclient's coalescing, control characters, bounds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jupyter_agent.notebook.outputs import StreamText, apply_control_characters, cap_outputs, coalesce_streams


def test_control_characters_and_coalescing_follow_nbclient():
    assert apply_control_characters("10%\r20%\r30%") == "30%"
    assert apply_control_characters("a\r\nb") == "a\r\nb"  # a Windows line ending is not an update
    assert apply_control_characters("ab\b\bc\n\bd") == "c\n\bd"  # \b never crosses a line
    outputs = [{"output_type": "stream", "name": "stderr", "text": "e1\n"},
               {"output_type": "stream", "name": "stdout", "text": ["o1\n", "x\ry\n"]},
               {"output_type": "display_data", "data": {"text/plain": "d"}, "metadata": {}},
               {"output_type": "stream", "name": "stdout", "text": "o2\n"}]
    assert coalesce_streams(outputs) == [
        {"output_type": "stream", "name": "stdout", "text": "o1\ny\no2\n"},
        {"output_type": "stream", "name": "stderr", "text": "e1\n"},
        {"output_type": "display_data", "data": {"text/plain": "d"}, "metadata": {}}]


def test_a_stream_stays_bounded_while_it_grows():
    stream = StreamText(limit=1_000)
    for i in range(5_000):
        stream.append(f"line {i}\n")
        assert len(stream.text) <= 2_000 + 20
    value = stream.value()
    assert value.startswith("line 0\nline 1\n") and value.endswith("line 4999\n")
    assert "characters cut here" in value and len(value) < 1_200


def test_rich_outputs_and_output_counts_are_capped_with_notes():
    big_png = "A" * 2_000
    outputs = [{"output_type": "display_data", "metadata": {},
                "data": {"image/png": big_png, "text/html": "<p>" + "h" * 3_000 + "</p>", "text/plain": "fig"}},
               {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["frame\n" * 1_000]}]
    outputs += [{"output_type": "display_data", "metadata": {}, "data": {"text/plain": str(i)}} for i in range(10)]
    capped = cap_outputs(outputs, limit=1_000, max_data=1_500, max_outputs=5)
    assert len(capped) == 6 and "7 more outputs were not kept" in capped[-1]["text"]
    data = capped[0]["data"]
    assert "image/png" not in data and "image/png (2,000 characters) not kept" in data["text/plain"]
    assert data["text/plain"].startswith("fig\n")
    assert len(data["text/html"]) < 1_200 and "characters cut here" in data["text/html"]
    assert data["text/html"].startswith("<p>hhh") and data["text/html"].endswith("hhh</p>")
    assert len(capped[1]["traceback"][0]) < 1_200 and "characters cut here" in capped[1]["traceback"][0]


def test_a_secret_that_straddles_a_cut_is_redacted_before_the_cut():
    secret = "S3CR3T-" * 10
    stream = StreamText(limit=1_000, redact=lambda text: text.replace(secret, "[redacted]"))
    stream.append("x" * 480)
    stream.append(secret)  # crosses the 500th character, where the kept start ends
    for _ in range(30):
        stream.append("y" * 100)
    value = stream.value()
    assert "S3CR3T-S3" not in value and "[redacted]" in value


@given(st.text(alphabet="ab\r\n", max_size=40))
def test_carriage_returns_settle_exactly_as_nbclients_pattern_does(text):
    from nbclient.client import _RGX_CARRIAGERETURN  # a test dependency: the reference

    assert apply_control_characters(text) == _RGX_CARRIAGERETURN.sub("", text)


def test_outputs_built_by_hand_are_nbformats_own():
    """``output_of`` skips nbformat's per-output schema check (a kernel's messages have the
    shape already): the same outputs as ``output_from_msg``, each valid in a notebook."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, output_from_msg

    from jupyter_agent.notebook.kernels import output_of

    messages = [
        ("execute_result", {"data": {"text/plain": "42", "text/html": "<b>42</b>"}, "metadata": {},
                            "execution_count": 3}),
        ("display_data", {"data": {"image/png": "iVBOR"}, "metadata": {"image/png": {"width": 4}},
                          "transient": {"display_id": "d1"}}),
        ("error", {"ename": "ValueError", "evalue": "no", "traceback": ["Traceback", "ValueError: no"]}),
    ]
    for kind, content in messages:
        ours = output_of(kind, content)
        assert ours == dict(output_from_msg({"msg_type": kind, "header": {"msg_type": kind}, "content": content}))
        nbformat.validate(new_notebook(cells=[new_code_cell("x", outputs=[ours])]))
    # a malformed message from a hostile kernel still gives a valid output, not an exception
    odd = output_of("display_data", {"data": ["not", "a", "dict"], "metadata": None})
    assert odd == {"output_type": "display_data", "data": {}, "metadata": {}}
