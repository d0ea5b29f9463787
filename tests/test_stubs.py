"""Our stubs for the untyped parts of dependencies (``stubs/``, mypy's ``mypy_path``) say
what the installed packages do: mypy's ``stubtest`` imports each package and compares every
name, signature and class in a stub with the runtime object.

One difference stubtest cannot judge: a traitlets trait (``value = Unicode()``) is written
in the stubs as the value an instance holds (``value: str``), and stubtest sees a class
attribute of another type. For those this test checks the trait itself: its kind matches
the type written (``Unicode`` for ``str``, ``Bool`` for ``bool``...), and it allows None
exactly when the type says ``| None``.
"""

from __future__ import annotations

import importlib
import pathlib
import re
import subprocess
import sys

import traitlets

ROOT = pathlib.Path(__file__).resolve().parents[1]
STUBS = ROOT / "stubs"
#: The packages stubs/ has stubs in (each checked whole: its stubs, not its own sources).
PACKAGES = sorted(p.name for p in STUBS.iterdir() if p.is_dir())

#: the trait kinds each type written in a stub stands for
_KINDS: dict[str, tuple[type, ...]] = {
    "str": (traitlets.Unicode, traitlets.Enum),
    "bool": (traitlets.Bool,),
    "int": (traitlets.Int,),
    "float": (traitlets.Float,),
    "tuple": (traitlets.Tuple,),
    "list": (traitlets.List,),
    "dict": (traitlets.Dict,),
}
_TRAIT_DIFFERS = re.compile(r"^error: (?P<name>\S+) variable differs from runtime type traitlets\.")


def _blocks(output: str) -> list[str]:
    """stubtest's report, one block per difference."""
    return ["error: " + b for b in re.split(r"(?m)^error: ", output)[1:]]


def _stub_type(block: str) -> str:
    lines = block.splitlines()
    return next(lines[i + 1] for i, line in enumerate(lines) if line.startswith("Stub: "))


def trait_matches(trait: traitlets.TraitType, written: str) -> bool:
    """Whether ``written`` (a stub's type, as stubtest prints it) is the value ``trait`` holds."""
    optional = written.endswith(" | None")
    base = written.removesuffix(" | None")
    if isinstance(trait, traitlets.Any):  # anything goes: the stub says what is put there
        return True
    if bool(trait.allow_none) != optional:
        return False
    kinds = _KINDS.get(base.split("[", 1)[0].removeprefix("builtins."))
    if kinds is not None:
        return isinstance(trait, kinds)
    if isinstance(trait, traitlets.Instance):  # Instance, InstanceDict: the class named
        klass = trait.klass.__name__ if isinstance(trait.klass, type) else str(trait.klass)
        return base.rsplit(".", 1)[-1] == klass.rsplit(".", 1)[-1]
    return False


def _runtime_trait(name: str) -> traitlets.TraitType:
    module_name, class_name, attribute = name.rsplit(".", 2)
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls.class_traits()[attribute]


def test_the_stubs_say_what_the_installed_packages_do():
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--ignore-missing-stub", "--mypy-config-file",
         str(ROOT / "pyproject.toml"), *PACKAGES],
        cwd=ROOT, capture_output=True, text=True)
    assert "not checking stubs" not in result.stdout, result.stdout
    ours = [b for b in _blocks(result.stdout) if f"Stub: in file {STUBS}" in b]
    wrong = []
    for block in ours:
        differs = _TRAIT_DIFFERS.match(block)
        if differs is None or not trait_matches(_runtime_trait(differs["name"]), _stub_type(block)):
            wrong.append(block)
    assert not wrong, "\n\n".join(wrong)
    # (stubtest did look: the traits written as values are among what it reported)
    assert any(_TRAIT_DIFFERS.match(b) for b in ours), result.stdout[-2000:]


def test_a_trait_written_with_another_type_is_caught():
    assert trait_matches(traitlets.Unicode(None, allow_none=True), "str | None")
    assert trait_matches(traitlets.Bool(), "bool")
    assert trait_matches(traitlets.CaselessStrEnum(["a", "b"], default_value="a"), "str")
    assert not trait_matches(traitlets.Unicode(), "str | None")  # never None
    assert not trait_matches(traitlets.Unicode(None, allow_none=True), "str")  # may be None
    assert not trait_matches(traitlets.Bool(), "int")
    assert not trait_matches(traitlets.List(), "logging.Logger")
    assert trait_matches(traitlets.Instance("logging.Logger"), "logging.Logger")
    assert trait_matches(traitlets.Int(None, allow_none=True), "int | None")
