"""One TOML format for the middleware and the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from urlguard import Config, Policy, config_from_mapping, load_config


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_standalone_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "urlguard.toml",
        """
preset = "browser"
mode = "report"
max_segments = 64
allowed_ranges = [[0x20, 0x7E], [0xA0, 0xFF]]

[routes."/files/"]
encoded_slash = "keep"
""",
    )
    config = load_config(path)
    assert config.mode == "report"
    assert config.policy == Policy.browser(
        max_segments=64, allowed_ranges=((0x20, 0x7E), (0xA0, 0xFF))
    )
    [(prefix, route)] = config.routes
    assert prefix == "/files/"
    # a route inherits the base policy and overrides its own keys
    assert route == config.policy.replace(encoded_slash="keep")


def test_pyproject_tool_table(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.urlguard]\ndot_segment = "allow"\n',
    )
    assert load_config(path).policy == Policy(dot_segment="allow")


def test_query_allow_chars_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "urlguard.toml",
        'query_allow_chars = "\\r\\n"\n\n[routes."/search/"]\nquery_allow_chars = "\\t"\n',
    )
    config = load_config(path)
    assert config.policy == Policy(query_allow_chars="\r\n")
    assert config.routes == (("/search/", Policy(query_allow_chars="\t")),)
    # The browser preset brings its own, which a file may take back.
    browser = load_config(write(tmp_path, "b.toml", 'preset = "browser"\nquery_allow_chars = ""\n'))
    assert browser.policy.query_allow_chars == ""
    with pytest.raises(TypeError, match="query_allow_chars"):
        load_config(write(tmp_path, "c.toml", "query_allow_chars = 1\n"))


def test_pyproject_without_table_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(ValueError, match=r"no \[tool.urlguard\]"):
        load_config(path)


def test_empty_file_is_the_default(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "u.toml", "")) == Config()


@pytest.mark.parametrize(
    ("mapping", "error", "named"),
    [
        pytest.param({"encoded_slashes": "keep"}, ValueError, "encoded_slashes", id="unknown key"),
        pytest.param({"preset": "lenient"}, ValueError, "preset", id="unknown preset"),
        pytest.param({"mode": "block"}, ValueError, "mode", id="unknown mode"),
        pytest.param({"max_length": "big"}, TypeError, "max_length", id="bad type"),
        pytest.param({"routes": {"files/": {}}}, ValueError, "files/", id="prefix without slash"),
        pytest.param(
            {"routes": {"/f/": {"preset": "browser"}}}, ValueError, "preset", id="preset in a route"
        ),
        pytest.param(
            {"routes": {"/f/": {"dot_segment": "x"}}}, ValueError, "/f/", id="bad value in a route"
        ),
        pytest.param({"routes": {"/f/": 1}}, TypeError, "/f/", id="route not a table"),
        pytest.param({"routes": []}, TypeError, "routes", id="routes not a table"),
    ],
)
def test_bad_configuration_is_named(
    mapping: dict[str, Any], error: type[Exception], named: str
) -> None:
    with pytest.raises(error, match=named):
        config_from_mapping(mapping)


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_config(write(tmp_path, "bad.toml", "preset = \n"))


def test_config_value_checks() -> None:
    with pytest.raises(TypeError):
        Config(policy="strict")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode"):
        Config(mode="off")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="route prefix"):
        Config(routes=(("files", Policy()),))


def test_default_preset_applies_only_when_the_file_names_none(tmp_path: Path) -> None:
    bare = write(tmp_path, "bare.toml", "max_segments = 9\n")
    assert load_config(bare, default_preset="browser").policy == Policy.browser(max_segments=9)
    named = write(tmp_path, "named.toml", 'preset = "strict"\n')
    assert load_config(named, default_preset="browser").policy == Policy()
    with pytest.raises(ValueError, match="default_preset"):
        config_from_mapping({}, default_preset="lenient")
