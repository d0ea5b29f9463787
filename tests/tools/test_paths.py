"""Path resolution and globs: the ground every permission decision stands on."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jupyter_agent.loop.tool import ToolError
from jupyter_agent.tools.paths import compile_glob, expand_braces, resolve_path


def test_resolution_makes_absolute_collapses_dots_expands_home_and_follows_links(tmp_path, monkeypatch):
    root = Path(os.path.realpath(tmp_path))
    (root / "real").mkdir()
    (root / "link").symlink_to(root / "real", target_is_directory=True)
    monkeypatch.setenv("HOME", str(root / "real"))
    assert resolve_path("a/../b.txt", root).real == root / "b.txt"
    assert resolve_path("~/x.txt", root).real == root / "real" / "x.txt"
    via_link = resolve_path("link/x.txt", root)
    assert via_link.lexical == root / "link" / "x.txt" and via_link.real == root / "real" / "x.txt"
    assert resolve_path(str(root / "real" / ".." / "b.txt"), "/elsewhere").real == root / "b.txt"


@pytest.mark.parametrize("bad,phrase", [
    ("", "empty"), ("  ", "empty"), ("a\x00b", "NUL"), ("a\nb", "control"), ("\ud800.txt", "surrogate"),
    ("x" * 5000, "at most 4096"), (17, "must be a string"),
])
def test_unusable_path_text_is_refused_with_the_reason(bad, phrase, tmp_path):
    with pytest.raises(ToolError, match=phrase):
        resolve_path(bad, tmp_path)


def test_globs_follow_path_rules():
    assert compile_glob("**/*.py").match("a/b/c.py") and compile_glob("**/*.py").match("c.py")
    assert not compile_glob("*.py").match("a/c.py")
    assert compile_glob("src/**").match("src/a/b") and not compile_glob("src/**").match("srcx/a")
    assert compile_glob("a/**/b").match("a/b") and compile_glob("a/**/b").match("a/x/y/b")
    assert expand_braces("x.{py,{md,rst}}") == ["x.py", "x.md", "x.rst"]
    assert compile_glob("file[0-9].txt").match("file7.txt") and not compile_glob("file[!0-9].txt").match("file7.txt")


@given(name=st.text(alphabet="ab.*?_-", min_size=1, max_size=8),
       pattern=st.text(alphabet="ab.*?_-", min_size=1, max_size=6))
def test_single_folder_globs_agree_with_fnmatch(name, pattern):
    assert bool(compile_glob(pattern).match(name)) == fnmatch.fnmatchcase(name, pattern)
