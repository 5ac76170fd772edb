"""tools/mutate.py, the mutation tool: the tree copy is the working tree (uncommitted and
untracked files included), a mutant applies at the offsets it was made from, and a known
non-equivalent mutant of a small block (hw/lib/pipemul.py) is killed by its tests."""

from __future__ import annotations

import pytest

from tools import mutate


def test_tree_copy_is_the_working_tree(tmp_path):
    files = mutate.tree_files()
    # this file may be uncommitted: the copy holds it all the same, and the block's sources
    assert "tests/test_mutate.py" in files and "hw/lib/pipemul.py" in files
    assert not any(f.startswith(("build/", ".venv/")) for f in files)
    n = mutate.copy_tree(tmp_path / "tree")
    assert n == len(files)
    for f in ("tests/test_mutate.py", "hw/lib/pipemul.py", "tools/mutate.py"):
        assert (tmp_path / "tree" / f).read_bytes() == (mutate.ROOT / f).read_bytes()


def test_mutants_apply_at_their_offsets():
    src = (mutate.ROOT / "hw/lib/pipemul.py").read_text()
    muts = mutate.mutants_of("hw/lib/pipemul.py")
    assert {mu.kind for mu in muts} >= {"cmp", "const"}
    for mu in muts:
        assert mu.old and src[mu.start:mu.end] == mu.old
        out = mutate.apply_mutant(src, mu)
        assert out != src and out.splitlines()[mu.line - 1].strip() != mu.source_line(src)
    # a copy that differs from the source the mutant was made of is refused, not corrupted
    with pytest.raises(RuntimeError, match="out of date"):
        mutate.apply_mutant("\n" + src, muts[0])


def test_known_mutant_is_killed(tmp_path):
    """``terms > 1`` -> ``terms > 2`` in ``product_levels`` stops the adder tree one level
    early (2 levels for a 17-bit multiplier instead of 3): tests/test_pipemul.py must fail;
    the unmutated copy must pass."""
    files, tests = mutate.BLOCKS["pipemul"]
    muts = [mu for mu in mutate.mutants_of(files[0])
            if mu.kind == "const" and mu.desc == "1 -> 2"
            and "while terms > 1" in mu.source_line((mutate.ROOT / files[0]).read_text())]
    assert len(muts) == 1
    tree = tmp_path / "tree"
    mutate.copy_tree(tree)
    assert mutate._run_tests(tree, tests, 60)[0] == "passed"
    status, _ = mutate.run_mutant(tree, muts[0], tests, 60)
    assert status == "failed"
    # the copy is restored after the run
    assert (tree / files[0]).read_text() == (mutate.ROOT / files[0]).read_text()
