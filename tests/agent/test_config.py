"""Options from keywords, environment and file: precedence, naming rule, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from hawkwatch.config import Config, load_config, option_specs
from hawkwatch.errors import ConfigError


def test_defaults_match_the_documented_starting_values(tmp_path: Path) -> None:
    config = load_config(environ={}, cwd=tmp_path).config
    assert config == Config()
    assert config.resources.interval_s == 0.5
    assert config.gc.threshold_ms == 10.0
    assert config.sessions.keep == 10
    assert config.sessions.max_age_days == 7.0


def test_one_naming_rule_links_option_env_var_file_key_and_keyword() -> None:
    specs = {spec.name: spec for spec in option_specs()}
    spec = specs["resources.interval_s"]
    assert spec.env_var == "HAWKWATCH_RESOURCES_INTERVAL_S"
    assert spec.flat_name == "resources_interval_s"
    assert specs["home"].env_var == "HAWKWATCH_HOME"
    assert all(
        s.name.endswith(".enabled")
        for s in specs.values()
        if s.field_name == "enabled" and s.section
    )
    assert {s.section for s in specs.values() if s.field_name == "enabled"} >= {
        "resources",
        "gc",
        "launch",
        "imports",
    }


def test_keyword_beats_environment_beats_hawkwatch_toml_beats_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.hawkwatch.gc]\nthreshold_ms = 1\n[tool.hawkwatch.resources]\ninterval_s = 9\n"
    )
    project = tmp_path / "app"
    project.mkdir()
    (project / "hawkwatch.toml").write_text(
        "[resources]\ninterval_s = 2.0\nenabled = false\n[app]\nname = 'from-file'\n"
    )
    environ = {"HAWKWATCH_RESOURCES_INTERVAL_S": "3", "HAWKWATCH_APP_NAME": "from-env"}

    loaded = load_config({"resources_interval_s": 4.0}, environ=environ, cwd=project)

    assert loaded.config.resources.interval_s == 4.0
    assert loaded.config.app.name == "from-env"
    assert loaded.config.resources.enabled is False
    assert loaded.config.gc.threshold_ms == 10.0  # hawkwatch.toml found first: pyproject unused
    assert loaded.file == project / "hawkwatch.toml"
    assert loaded.sources["resources.interval_s"] == "option resources.interval_s"
    assert loaded.sources["app.name"] == "environment HAWKWATCH_APP_NAME"


def test_pyproject_table_is_found_from_a_subfolder(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.hawkwatch]\nhome = '/srv/hw'\n[tool.hawkwatch.gc]\nthreshold_ms = 2.5\n"
    )
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    loaded = load_config(environ={}, cwd=deep)
    assert loaded.config.home == "/srv/hw"
    assert loaded.config.gc.threshold_ms == 2.5


@pytest.mark.parametrize(
    "table",
    [
        "[tool.hawkwatch.gc]\nthreshold_ms = 3.5\n",
        "[tool]\nhawkwatch.gc.threshold_ms = 3.5\n",
        "tool = { 'hawkwatch' = { gc = { threshold_ms = 3.5 } } }\n",
        '[ tool . "hawkwatch" . gc ]\nthreshold_ms = 3.5\n',
    ],
)
def test_a_pyproject_table_is_found_however_it_is_spelt(tmp_path: Path, table: str) -> None:
    (tmp_path / "pyproject.toml").write_text(table + "[project]\nname = 'shop'\n")
    loaded = load_config(environ={}, cwd=tmp_path, strict=True)
    assert loaded.config.gc.threshold_ms == 3.5


def test_a_pyproject_that_never_names_hawkwatch_is_not_parsed(tmp_path: Path) -> None:
    """Not even read as TOML (``tomllib`` is not imported): a project's own file, broken or
    not, neither stops ``hawkwatch run`` nor costs its start; the search goes on upwards."""
    (tmp_path / "pyproject.toml").write_text("[tool.hawkwatch.gc]\nthreshold_ms = 2\n")
    project = tmp_path / "shop"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'shop'\nbroken = [\n")
    loaded = load_config(environ={}, cwd=project, strict=True)
    assert loaded.config.gc.threshold_ms == 2  # the folder above, as if shop had none
    (project / "pyproject.toml").write_text("[project]\nname = 'hawkwatch-shop'\nbroken = [\n")
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        load_config(environ={}, cwd=project, strict=True)


def test_dotted_keyword_names_are_accepted(tmp_path: Path) -> None:
    loaded = load_config({"sessions.keep": 3}, environ={}, cwd=tmp_path)
    assert loaded.config.sessions.keep == 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("1", True), ("YES", True), ("off", False), ("0", False), ("No", False)],
)
def test_booleans_from_the_environment(tmp_path: Path, text: str, expected: bool) -> None:
    loaded = load_config(environ={"HAWKWATCH_GC_ENABLED": text}, cwd=tmp_path, strict=True)
    assert loaded.config.gc.enabled is expected


def test_unknown_option_is_a_clear_error_listing_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"resources_intervall_s": 1}, environ={}, cwd=tmp_path, strict=True)
    message = str(caught.value)
    assert "resources_intervall_s" in message
    assert "resources.interval_s" in message and "gc.threshold_ms" in message


def test_unknown_environment_variable_names_the_valid_variables(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(environ={"HAWKWATCH_GC_TRESHOLD_MS": "5"}, cwd=tmp_path, strict=True)
    assert "HAWKWATCH_GC_TRESHOLD_MS" in str(caught.value)
    assert "HAWKWATCH_GC_THRESHOLD_MS" in str(caught.value)


def test_unknown_file_key_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "hawkwatch.toml").write_text("[resources]\nintervl_s = 1\n")
    with pytest.raises(
        ConfigError, match=r"hawkwatch\.toml: unknown option 'resources\.intervl_s'"
    ):
        load_config(environ={}, cwd=tmp_path, strict=True)


@pytest.mark.parametrize(
    ("variable", "value", "fragment"),
    [
        ("HAWKWATCH_RESOURCES_INTERVAL_S", "fast", "is not a number"),
        ("HAWKWATCH_RESOURCES_INTERVAL_S", "0.001", "below its minimum"),
        ("HAWKWATCH_SESSIONS_KEEP", "2.5", "is not an integer"),
        ("HAWKWATCH_GC_ENABLED", "maybe", "is not a boolean"),
    ],
)
def test_bad_values_are_named_with_the_accepted_form(
    tmp_path: Path, variable: str, value: str, fragment: str
) -> None:
    with pytest.raises(ConfigError, match=fragment):
        load_config(environ={variable: value}, cwd=tmp_path, strict=True)


def test_lenient_loading_keeps_defaults_and_reports_each_problem(tmp_path: Path) -> None:
    (tmp_path / "hawkwatch.toml").write_text("not = [valid toml")
    loaded = load_config(
        {"nope": 1, "gc_threshold_ms": "x"},
        environ={"HAWKWATCH_SESSIONS_KEEP": "0"},
        cwd=tmp_path,
    )
    assert loaded.config == Config()
    assert len(loaded.problems) == 4
    assert any("cannot read the configuration" in p for p in loaded.problems)


def test_the_agent_keeps_defaults_when_the_file_is_not_utf8_and_says_which_file(
    tmp_path: Path,
) -> None:
    config = tmp_path / "hawkwatch.toml"
    config.write_bytes(b"[gc]\nthreshold_ms = 4 # \xff\n")
    loaded = load_config(environ={}, cwd=tmp_path)
    assert loaded.config == Config()
    [problem] = loaded.problems
    assert str(config) in problem and "not UTF-8" in problem


def test_a_config_folder_is_a_problem_not_silence(tmp_path: Path) -> None:
    (tmp_path / "hawkwatch.toml").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.hawkwatch.gc]\nthreshold_ms = 4\n")
    loaded = load_config(environ={}, cwd=tmp_path)
    assert loaded.config == Config()  # the pyproject table behind it is not silently used
    [problem] = loaded.problems
    assert str(tmp_path / "hawkwatch.toml") in problem and "not a file" in problem
    with pytest.raises(ConfigError, match="not a file"):
        load_config(environ={}, cwd=tmp_path, strict=True)


def test_config_sections_are_frozen_values_compared_by_content() -> None:
    from hawkwatch.config import CpuConfig

    cpu = CpuConfig(highload_threshold=0.5)
    assert cpu == CpuConfig(highload_threshold=0.5) != CpuConfig()
    assert hash(cpu) == hash(CpuConfig(highload_threshold=0.5))
    assert cpu.per_core is False and cpu.highload_threshold == 0.5
    assert "highload_threshold=0.5" in repr(cpu)
    with pytest.raises(AttributeError, match="frozen"):
        cpu.per_core = True  # type: ignore[misc]
    with pytest.raises(TypeError, match="treshold"):
        CpuConfig(treshold=1)  # type: ignore[call-arg]
    changed = Config().replace(cpu=cpu)
    assert changed.cpu is cpu and changed.gc == Config().gc and Config().cpu == CpuConfig()
    assert Config().app is not Config().app  # each config gets its own sections
