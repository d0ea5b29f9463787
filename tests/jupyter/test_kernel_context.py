"""The agent is told the kernel's variables at run start (names, types, shapes, a data
frame's columns and dtypes) without running any code of the user's objects."""

from __future__ import annotations

import pytest

from jupyter_agent.jupyter.kernel.kernel_context import kernel_variables
from jupyter_agent.testing import response, text

in_kernel = pytest.mark.asyncio(loop_scope="module")

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

#: A class every one of whose hooks leaves a trace, sleeps or raises when called.
HOSTILE = '''
import time
calls = []
class Meta(type):
    def __eq__(cls, other):
        calls.append("metaclass __eq__"); return False
    __hash__ = type.__hash__
class Hostile(metaclass=Meta):
    def __repr__(self):
        calls.append("__repr__"); time.sleep(5); raise RuntimeError("repr")
    __str__ = __repr__
    @property
    def shape(self):
        calls.append("shape"); time.sleep(5); return (1, 2)
    @property
    def __class__(self):
        calls.append("__class__"); return list
    def __getattr__(self, name):
        calls.append("__getattr__ " + name); raise AttributeError(name)
    def __len__(self):
        calls.append("__len__"); return 3
class Frame(pd.DataFrame):
    @property
    def shape(self):
        calls.append("Frame.shape"); return (0, 0)
class Items(list):
    def __len__(self):
        calls.append("Items.__len__"); return 99
'''


def test_a_hostile_object_is_listed_by_type_without_calling_its_code():
    scope: dict = {"pd": pd, "__name__": "__main__"}
    exec(HOSTILE, scope)
    Hostile, Frame, Items, calls = scope["Hostile"], scope["Frame"], scope["Items"], scope["calls"]
    ns = {"h": Hostile(), "frame": Frame({"a": [1]}), "items": Items([1, 2]), "Hostile": Hostile,
          "x": 41, "token": "sk-ant-api03-abcdefghijklmnop", "arr": np.zeros((3, 4), dtype="float32"),
          "df": pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]}), "s": pd.Series([1, 2, 3], name="n"),
          "np": np, "_hidden": 1, "In": [], "Out": {}}
    lines = kernel_variables(ns)
    assert calls == []
    assert lines == [
        "h: Hostile",
        "frame: Frame",  # a user subclass of DataFrame may override what pandas calls: type only
        "items: Items, length 2",  # the builtin's length, not the subclass's __len__
        "Hostile: class",
        "x: int = 41",
        "token: str = (hidden: the name looks like a secret)",
        "arr: numpy.ndarray, shape (3, 4), dtype float32",
        "df: pandas.DataFrame, 2 rows × 2 columns; columns: a int64, b float64",
        "s: pandas.Series, length 3, dtype int64, name n",
    ]


LOOK_ALIKES = '''
calls = []
class ExtrasFrame(pd.DataFrame):
    """A DataFrame subclass from a module whose name starts like pandas'."""
    @property
    def index(self):
        calls.append("ExtrasFrame.index"); raise RuntimeError("index")
ExtrasFrame.__module__ = "pandas_extras"
class NumpyExtrasArray(np.ndarray):
    @property
    def shape(self):
        calls.append("NumpyExtrasArray.shape"); return (7,)
NumpyExtrasArray.__module__ = "numpy.extras"
class FakeArray:
    """Claims to be numpy's ndarray."""
    @property
    def shape(self):
        calls.append("FakeArray.shape"); return (1,)
    @property
    def dtype(self):
        calls.append("FakeArray.dtype"); return "float64"
FakeArray.__module__ = "numpy"
FakeArray.__qualname__ = FakeArray.__name__ = "ndarray"
class FakeFrame:
    @property
    def shape(self):
        calls.append("FakeFrame.shape"); return (1, 1)
FakeFrame.__module__ = "pandas.core.frame"
FakeFrame.__qualname__ = FakeFrame.__name__ = "DataFrame"
'''


def test_look_alike_classes_get_their_type_name_and_no_code_runs():
    """Trusted types are recognised by identity, never by a module-name prefix or the name a
    class gives itself: subclasses and impostors are listed by type only."""
    scope: dict = {"pd": pd, "np": np, "__name__": "__main__"}
    exec(LOOK_ALIKES, scope)
    calls = scope["calls"]
    ns = {"extras": scope["ExtrasFrame"]({"a": [1, 2]}),
          "sub": np.zeros(3).view(scope["NumpyExtrasArray"]),
          "fake": scope["FakeArray"](), "fake_df": scope["FakeFrame"](),
          "arr": np.zeros((2, 5), dtype="int8"), "df": pd.DataFrame({"n": [1, 2, 3]}),
          "idx": pd.RangeIndex(4)}
    lines = kernel_variables(ns)
    assert calls == []
    assert lines == [
        "extras: pandas_extras.ExtrasFrame",
        "sub: numpy.extras.NumpyExtrasArray",
        "fake: numpy.ndarray (a look-alike, not that library's class)",
        "fake_df: pandas.core.frame.DataFrame",
        "arr: numpy.ndarray, shape (2, 5), dtype int8",
        "df: pandas.DataFrame, 3 rows × 1 columns; columns: n int64",
        "idx: pandas.RangeIndex, shape (4,), dtype int64",
    ]


def test_a_look_alike_dtype_is_not_spelt_out():
    """A real Series whose dtype is a user's extension dtype: its type name, not its str()."""
    calls: list[str] = []

    class LoudDtype(pd.api.extensions.ExtensionDtype):
        name = "loud"
        type = object

        def __str__(self) -> str:
            calls.append("LoudDtype.__str__")
            return "loud"

        def __repr__(self) -> str:
            calls.append("LoudDtype.__repr__")
            return "loud"

    LoudDtype.__module__ = "pandas_loud"
    dtype = LoudDtype()
    from jupyter_agent.jupyter.kernel import kernel_context

    kernel_variables({})  # the known classes of the libraries imported now
    spelt = "<pandas_loud.test_a_look_alike_dtype_is_not_spelt_out.<locals>.LoudDtype>"
    assert kernel_context._dtype_text(dtype) == spelt
    assert kernel_context._dtype_text(np.dtype("float32")) == "float32"
    assert kernel_context._dtype_text(pd.CategoricalDtype(["a"])) == "category"
    assert calls == []


def test_the_listing_is_bounded():
    wide = pd.DataFrame(np.zeros((2, 100)), columns=[f"c{i}" for i in range(100)])
    ns = {f"v{i}": i for i in range(500)} | {"wide": wide}
    lines = kernel_variables(ns)
    assert len(lines) == 101 and lines[-1] == "(401 more names not listed)"
    assert lines[-2].startswith("wide: pandas.DataFrame, 2 rows × 100 columns; columns: c0 float64")
    assert lines[-2].endswith("c29 float64, … 70 more")
    assert sum(len(line) for line in lines) < 4200
    long = kernel_variables({f"name_{i}": "x" * 50 for i in range(100)}, max_chars=1000)
    assert sum(len(line) for line in long) < 1100 and long[-1].endswith("more names not listed)")


@in_kernel
async def test_each_run_tells_the_model_the_kernel_variables(kernel, script, api):
    script(response(text("x is 41.")), response(text("Now there is y too.")))
    result = await kernel.execute(
        "import numpy as np, pandas as pd\n" + HOSTILE +
        "x = 41\nh = Hostile()\nframe = Frame({'a': [1]})\n"
        "df = pd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [3.5, 19.0]})\n"
        "arr = np.arange(12).reshape(3, 4)\nANTHROPIC_KEY_COPY = 'sk-ant-api03-abcdefghijklmnop'")
    assert result["reply"]["status"] == "ok", result
    await kernel.execute("import jupyter_agent\n%agent new")
    result = await kernel.execute("%%agent\nWhat is x?", timeout=30)
    await kernel.until(lambda: len(api.requests) >= 1 and "x is 41." in str(kernel.messages), 20, "the answer")
    first = api.requests[-1]["messages"]
    sent = variables_block(first[-1])
    assert "- x: int = 41" in sent
    assert "- df: pandas.DataFrame, 2 rows × 2 columns; columns: city str, temp float64" in sent \
        or "- df: pandas.DataFrame, 2 rows × 2 columns; columns: city object, temp float64" in sent
    assert "- arr: numpy.ndarray, shape (3, 4), dtype int64" in sent
    assert "- h: Hostile" in sent and "- frame: Frame" in sent
    assert "sk-ant-api03" not in sent and "- ANTHROPIC_KEY_COPY: str = (hidden" in sent
    assert "jupyter_agent" not in sent  # the module: not the user's data
    assert first[-1]["content"][-1]["text"] == "What is x?"  # the prompt comes last
    assert (await kernel.value("calls")) == "[]"  # no repr, property, __getattr__ of the user's objects ran
    # the next run lists what changed, and leaves the earlier message byte-identical (prompt cache)
    await kernel.execute("y = [1, 2, 3]")
    await _wait_idle_run(kernel)
    await kernel.execute("%%agent\nAnd now?", timeout=30)
    await kernel.until(lambda: len(api.requests) >= 2 and "Now there is y too." in str(kernel.messages), 20,
                       "the second answer")
    second = api.requests[-1]["messages"]
    assert without_cache_marks(second[0]) == without_cache_marks(first[0])
    assert "- y: list, length 3" in variables_block(second[-1])


@in_kernel
async def test_the_listing_can_be_turned_off(kernel, script, api):
    script(response(text("No variables told.")))
    await _wait_idle_run(kernel)
    await kernel.execute("%agent new\n%config AgentConfig.kernel_variables = False")
    try:
        await kernel.execute("%%agent\nHello", timeout=30)
        await kernel.until(lambda: "No variables told." in str(kernel.messages), 20, "the answer")
        assert "Variables in the user's kernel" not in str(api.requests[-1]["messages"])
    finally:
        await _wait_idle_run(kernel)
        await kernel.execute("%config AgentConfig.kernel_variables = True")


def without_cache_marks(message):
    return {**message, "content": [{k: v for k, v in b.items() if k != "cache_control"}
                                   for b in message["content"]]}


def variables_block(message) -> str:
    found = [b["text"] for b in message["content"] if "Variables in the user's kernel" in b.get("text", "")]
    assert len(found) == 1, message
    return found[0]


async def _wait_idle_run(kernel) -> None:
    """Wait until no agent run is going in the kernel."""
    for _ in range(200):
        if (await kernel.value("__import__('jupyter_agent.jupyter.kernel.agent_session', fromlist=['_'])"
                               ".get_session().active is None")) == "True":
            return
    raise TimeoutError("an agent run is still going")
