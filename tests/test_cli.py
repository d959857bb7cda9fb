"""The ``toolbench`` command, run as a real process (plus two in-process checks of main)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from toolbench._cli import main as _cli

SERVERS = Path(__file__).parent / "servers"
ECHO = SERVERS / "echo_server.py"
EXITS = SERVERS / "exit_server.py"
STARTED = "import pathlib, sys; pathlib.Path(sys.argv[1]).touch(); sys.exit(1)"
"""A stdio 'server' that only leaves a marker file: proof that something started it."""


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolbench", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=180,
                          env={**os.environ, **env})


def stdio(script: Path | str, *args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(script), *args]}


def write_config(folder: Path, servers: dict[str, Any], name: str = "mcp.json") -> Path:
    path = folder / name
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_config(tmp_path, {"one": stdio(ECHO), "two": stdio(ECHO)})
    return tmp_path


@pytest.fixture
def marked(tmp_path: Path) -> Path:
    """A config with a working server ``one`` and a ``marker`` server that must not start."""
    write_config(tmp_path, {"one": stdio(ECHO),
                            "marker": stdio("-c", STARTED, str(tmp_path / "started"))})
    return tmp_path


@pytest.mark.slow
def test_catalog_uses_local_mcp_json(project: Path) -> None:
    out = run(["catalog"], project)
    assert out.returncode == 0, out.stderr
    assert "one-echo" in out.stdout and "two-echo" in out.stdout


@pytest.mark.slow
def test_call_with_args_and_json(project: Path) -> None:
    out = run(["call", "one-add", "--arg", "a=2", "--json", '{"b": 40}'], project)
    assert out.returncode == 0, out.stderr
    assert "42" in out.stdout


@pytest.mark.slow
def test_compare(project: Path) -> None:
    out = run(["compare", "echo", "--arg", "text=hello"], project)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("hello") >= 2 and "one" in out.stdout and "two" in out.stdout


@pytest.mark.slow
def test_compare_with_a_failed_row_exits_1_and_still_prints_the_table(project: Path) -> None:
    out = run(["compare", "fail", "--arg", "reason=on purpose"], project)
    assert out.returncode == 1, out.stderr
    assert "one" in out.stdout and "two" in out.stdout and "on purpose" in out.stdout
    assert "2 of 2 calls failed" in out.stderr and "ToolFailed" in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("name", ["one-echo", "tool://one/echo"])
def test_call_starts_only_the_server_that_owns_the_name(marked: Path, name: str) -> None:
    out = run(["call", name, "--arg", "text=hi"], marked)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"result": "hi"} and out.stderr == ""
    assert not (marked / "started").exists(), f"call {name} started the other server"


@pytest.mark.slow
def test_catalog_of_one_server_starts_only_that_server(marked: Path) -> None:
    out = run(["catalog", "--server", "one"], marked)
    assert out.returncode == 0, out.stderr
    assert "one-echo" in out.stdout and not (marked / "started").exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", [
    "one-x-echo",  # server one's tool "x-echo" or server one-x's tool "echo": both start
    "ns-echo",     # a config's own namespace counts, not the server's name
])
def test_a_name_several_servers_could_own_starts_just_those(tmp_path: Path, name: str) -> None:
    write_config(tmp_path, {"one": stdio(ECHO), "one-x": stdio(ECHO),
                            "renamed": {**stdio(ECHO), "namespace": "ns"},
                            "marker": stdio("-c", STARTED, str(tmp_path / "started"))})
    out = run(["call", name, "--arg", "text=hi"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"result": "hi"}
    assert not (tmp_path / "started").exists()


@pytest.mark.slow
@pytest.mark.parametrize(("args", "words"), [
    (["call", "marker-x", "--arg", "a"], "KEY=VALUE"),
    (["call", "marker-x", "--arg", "=1"], "KEY=VALUE"),
    (["call", "marker-x", "--json", "{"], "not valid JSON"),
    (["call", "marker-x", "--json", "[1]"], "JSON object"),
    (["call", "marker-x", "--json", '{"a": NaN}'], "NaN is not JSON"),
    (["call", "marker-x", "--json", '{"a": 1}', "--arg", "a=2"], "given twice"),
    (["compare", "x", "--json", "{"], "not valid JSON"),
    (["call", "nobody-x"], "no server in mcp.json owns 'nobody-x'"),
    (["call", "tool://nobody/x"], "no server 'nobody'"),
    (["call", "tool://bad"], "malformed reference"),
    (["catalog", "--server", "nobody"], "no server 'nobody'"),
])
def test_usage_errors_exit_2_before_any_server_starts(marked: Path, args: list[str],
                                                       words: str) -> None:
    out = run(args, marked)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toolbench: error:"), out.stderr
    assert words in lines[0]
    assert not (marked / "started").exists(), "a server started before the usage check"


@pytest.mark.slow
@pytest.mark.parametrize(("args", "code", "words"), [
    (["call", "one-ech", "--arg", "text=x"], 2, "did you mean 'one-echo'"),
    (["call", "tool://one/ech"], 2, "did you mean 'echo'"),
    (["call", "one-add", "--arg", "a=notanumber", "--arg", "b=1"], 1, "Refused"),
    (["call", "one-fail", "--arg", "reason=no luck"], 1, "ToolFailed (landed)"),
])
def test_unknown_names_are_usage_errors_and_failed_calls_exit_1(
        project: Path, args: list[str], code: int, words: str) -> None:
    out = run(args, project)
    assert out.returncode == code, out.stderr
    assert out.stderr.startswith("toolbench: error:") and words in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("servers", "args"), [
    (["boom", "one"], ["catalog"]),
    (["boom"], ["catalog"]),  # nothing else to show: still not "(none)" and status 0
    (["boom", "one"], ["call", "boom-anything"]),
    (["boom", "one"], ["compare", "echo", "--arg", "text=hi"]),
])
def test_a_server_that_fails_to_start_is_reported_by_every_command(
        tmp_path: Path, servers: list[str], args: list[str]) -> None:
    write_config(tmp_path, {name: stdio(EXITS if name == "boom" else ECHO) for name in servers})
    out = run(args, tmp_path)
    assert out.returncode == 1, out.stderr
    assert "'boom'" in out.stderr and "failed to start" in out.stderr
    # the server's own stderr, in full, so the user sees why
    assert "fatal: missing configuration file settings.toml" in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("before", [True, False])
def test_config_before_or_after_the_command(project: Path, before: bool) -> None:
    other = write_config(project, {"three": stdio(ECHO)}, "other.json")
    option = ["--config", str(other)]
    command = ["catalog", "--search", "echo"]
    out = run(option + command if before else command + option, project)
    assert out.returncode == 0, out.stderr
    assert "three-echo" in out.stdout and "one-echo" not in out.stdout


@pytest.mark.slow
def test_no_command_is_a_usage_error_that_prints_the_help(tmp_path: Path) -> None:
    out = run([], tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stdout == "" and out.stderr.startswith("usage: toolbench")
    for command in ("catalog", "call", "compare", "demo", "lab"):
        assert command in out.stderr
    assert out.stderr.strip().splitlines()[-1] == (
        "toolbench: error: a command is required (catalog, call, compare, demo or lab)")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["catalog", "call", "compare", "demo", "lab"])
def test_every_commands_help_has_a_description_line(tmp_path: Path, command: str) -> None:
    out = run([command, "--help"], tmp_path)
    assert out.returncode == 0, out.stderr
    top = run(["--help"], tmp_path).stdout  # the one-line summary in the command list
    summary = re.search(rf"^\s+{command}\s+(.+)$", top, re.MULTILINE)
    assert summary, top
    # after the usage lines, a blank line, then the description (the summary's first words)
    after_usage = out.stdout.split("\n\n", 1)[1]
    assert after_usage.startswith(summary.group(1).split()[0]), out.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("args", "words"), [
    (["call", "one-echo", "--arg", "text=hi", "--arg", "volume=11"],
     "'one-echo' has no parameter 'volume' (its parameters: text); nothing was called"),
    (["call", "tool://one/add", "--arg", "a=1", "--arg", "bb=2"],
     "'tool://one/add' has no parameter 'bb'; did you mean 'b'? (its parameters: a, b)"),
    (["compare", "echo", "--json", '{"text": "hi", "txt": 1, "x": 2}'],
     "'echo' has no parameters 'txt', 'x'; did you mean 'text'? (its parameters: text)"),
])
def test_an_argument_the_tool_does_not_have_is_refused_before_calling(
        project: Path, args: list[str], words: str) -> None:
    out = run(args, project)
    assert out.returncode == 2, out.stderr
    assert out.stdout == "" and words in out.stderr, out.stderr


@pytest.mark.parametrize("command", [[], ["catalog"], ["call"], ["compare"], ["demo"]])
@pytest.mark.slow
def test_help_on_every_command_documents_exit_codes(tmp_path: Path, command: list[str]) -> None:
    out = run([*command, "--help"], tmp_path)
    assert out.returncode == 0 and "usage: toolbench" in out.stdout
    codes = re.findall(r"^\s+([0-3])\s+(\w+)", out.stdout, re.MULTILINE)
    assert dict(codes) == {"0": "success", "1": "a", "2": "usage", "3": "a"}, out.stdout


@pytest.mark.slow
def test_lab_help_says_it_adds_allow_root(tmp_path: Path) -> None:
    out = run(["lab", "--help"], tmp_path)
    assert out.returncode == 0 and "--allow-root" in out.stdout


def commands_in(text: str, command: str) -> list[list[str]]:
    return [shlex.split(line.strip())[1:] for line in text.splitlines()
            if line.strip().startswith(f"toolbench {command} ")]


@pytest.mark.slow
def test_call_help_explains_names_and_references(tmp_path: Path) -> None:
    text = run(["call", "--help"], tmp_path).stdout
    assert "tool://SERVER/TOOL" in text and "SERVER-TOOL" in text
    examples = commands_in(text, "call")
    assert len(examples) == 3 and any(e[1].startswith("tool://") for e in examples)


@pytest.mark.slow
@pytest.mark.parametrize("index", [0, 1, 2])
def test_call_help_examples_are_real_and_run(tmp_path: Path, index: int) -> None:
    example = commands_in(run(["call", "--help"], tmp_path).stdout, "call")[index]
    out = run(example, tmp_path)
    assert out.returncode == 0, (example, out.stderr)
    assert re.search(r'"result": \d+\.\d+', out.stdout), (example, out.stdout)


def hints_in(text: str, command: str) -> list[str]:
    """The demo's hint lines for ``command``, exactly as printed (launcher included)."""
    return [line.strip() for line in text.splitlines()
            if re.match(rf"^\s+\S.* {command} ", line) and "--arg" in line]


def shell(line: str, cwd: Path, path: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a printed command line the way a person pastes it into a shell."""
    return subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "PATH": path, **env})


def fake_venv(folder: Path) -> Path:
    """``.venv/bin/toolbench`` as pip writes a console script (this interpreter, main()),
    beside an ``activate``; the venv is not activated, as after the quick start."""
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "toolbench"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom toolbench._cli.main import main\n"
                      "if __name__ == '__main__':\n    sys.exit(main())\n")
    script.chmod(0o755)
    (bin_dir / "activate").write_text(f"export PATH={shlex.quote(str(bin_dir))}:$PATH\n")
    return script


@pytest.mark.slow
@pytest.mark.parametrize(("command", "with_mcp_json", "expect"), [
    ("compare", False, "geo_precise"),
    ("call", False, '"result": '),
    ("compare", True, "geo_precise"),  # the hint says --demo, so ./mcp.json does not win
])
def test_demo_hint_works_as_printed(tmp_path: Path, command: str, with_mcp_json: bool,
                                    expect: str) -> None:
    if with_mcp_json:
        write_config(tmp_path, {"one": stdio(ECHO)})
    out = run(["demo"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "geo" in out.stdout and "connected" in out.stdout and "distance" in out.stdout
    assert "toolbench.demo.atlas" in out.stdout and "08_apps" in out.stdout  # the app demo
    hints = hints_in(out.stdout, command)
    assert len(hints) == 1 and ("--demo" in hints[0]) == with_mcp_json, out.stdout
    # A seed makes flaky's deliberate failures repeatable: seed 0 fails none of the first few.
    ran = shell(hints[0], tmp_path, os.environ["PATH"], TOOLBENCH_DEMO_SEED="0")
    assert ran.returncode == 0, (hints[0], ran.stderr)
    assert expect in ran.stdout


@pytest.mark.slow
def test_demo_hints_name_a_command_that_works_without_an_activated_venv(tmp_path: Path) -> None:
    # After the quick start, `.venv/bin/toolbench demo` runs with no toolbench on PATH: a
    # bare `toolbench` in its hints would be "command not found".
    script = fake_venv(tmp_path)
    bare = "/usr/bin:/bin"
    assert shell("command -v toolbench", tmp_path, bare).returncode != 0
    out = shell(".venv/bin/toolbench demo", tmp_path, bare)
    assert out.returncode == 0, out.stderr
    hints = hints_in(out.stdout, "call")
    assert len(hints) == 1 and hints[0].startswith(".venv/bin/toolbench call "), out.stdout
    assert "source .venv/bin/activate" in out.stdout
    ran = shell(hints[0], tmp_path, bare, TOOLBENCH_DEMO_SEED="0")
    assert ran.returncode == 0 and '"result": ' in ran.stdout, ran.stderr
    # activated: the venv's bin first on PATH, so the plain name works and is what is printed
    out = shell(f"source {shlex.quote(str(script.parent / 'activate'))} && toolbench demo",
                tmp_path, bare)
    hints = hints_in(out.stdout, "call")
    assert hints and hints[0].startswith("toolbench call "), out.stdout
    assert "activate" not in out.stdout
    # python -m toolbench with no script on PATH: the interpreter's own path
    out = shell(f"{shlex.quote(sys.executable)} -m toolbench demo", tmp_path, bare)
    hints = hints_in(out.stdout, "compare")
    assert hints and hints[0].startswith(f"{shlex.quote(sys.executable)} -m toolbench compare ")
    ran = shell(hints[0], tmp_path, bare, TOOLBENCH_DEMO_SEED="0")
    assert ran.returncode == 0 and "geo_precise" in ran.stdout, ran.stderr


@pytest.mark.slow
def test_bad_config_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text("{not json")
    out = run(["catalog"], tmp_path)
    assert out.returncode == 2 and "mcp.json" in out.stderr


def test_every_command_module_adds_its_parsers_with_a_runner() -> None:
    """The registration pattern (``toolbench._cli.command``): each module in COMMANDS adds
    its parser(s), and each command parser names what runs it."""
    parser = _cli._parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(sub.choices) == ["catalog", "call", "compare", "demo", "report", "eval", "auth",
                                 "lab", "serve-recording", "doctor"]
    for name, command in sub.choices.items():
        assert callable(command.get_default("run")), f"{name} names no runner"
    assert all(callable(getattr(m, "add", None)) for m in _cli.COMMANDS)


@pytest.mark.parametrize("error", [TypeError("bad type"), KeyError("key"),
                                   AttributeError("attr")])
def test_programming_errors_are_reported_as_bugs_not_user_errors(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        error: Exception) -> None:
    def broken(argv: Any = None) -> int:
        raise error

    monkeypatch.setattr(_cli, "run", broken)
    with pytest.raises(SystemExit) as exited:
        _cli.main([])
    assert exited.value.code == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "bug in toolbench" in err
    assert "toolbench: error:" not in err


@pytest.mark.slow
def test_lab_passes_allow_root_when_run_as_root(tmp_path: Path) -> None:
    # A stand-in `jupyterlab` module first on the path shows the exact command line.
    fake = tmp_path / "fake" / "jupyterlab"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text("import json, sys; print(json.dumps(sys.argv[1:]))")
    out = run(["lab", "--no-browser"], tmp_path, PYTHONPATH=os.pathsep.join(
        [str(fake.parent), *filter(None, [os.environ.get("PYTHONPATH")])]))
    assert out.returncode == 0, out.stderr
    passed = json.loads(out.stdout)
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    assert ("--allow-root" in passed) == root and "--no-browser" in passed


CONTROL_SERVER = """
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("ctl")


@server.tool(description="desc \\x1b]0;pwned\\x07 \\x1b[2J\\r\\x08 \\x9b")
def shout(text: str) -> str:
    raise ToolError("bad \\x1b[2J\\x07red\\rover\\x08\\x9b " + text)


server.run("stdio")
"""


@pytest.mark.slow
def test_server_text_reaches_the_terminal_with_control_characters_escaped(
        tmp_path: Path) -> None:
    (tmp_path / "ctl.py").write_text(CONTROL_SERVER)
    write_config(tmp_path, {"ctl": stdio(tmp_path / "ctl.py")})
    shown = [run(["catalog"], tmp_path), run(["call", "ctl-shout", "--arg", "text=x"], tmp_path)]
    assert shown[0].returncode == 0 and shown[1].returncode == 1, shown
    for out in shown:
        for raw in ("\x1b", "\x07", "\r", "\x08", "\x9b"):
            assert raw not in out.stdout and raw not in out.stderr, out
    assert "\\x1b]0;pwned\\x07" in shown[0].stdout
    assert "bad \\x1b[2J\\x07red\\x0dover\\x08\\x9b x" in shown[1].stderr


@pytest.mark.slow
def test_a_config_nested_100000_deep_is_a_config_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}")
    out = run(["catalog", "--config", str(deep)], tmp_path)
    assert out.returncode == 2, out.stderr
    assert "deep.json" in out.stderr and "nested too deeply" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "zero", "auto-fifo"])
def test_a_config_that_is_not_a_regular_file_is_refused_at_once(
        tmp_path: Path, kind: str) -> None:
    if kind == "zero":
        path = "/dev/zero"
    else:
        path = str(tmp_path / ("mcp.json" if kind == "auto-fifo" else "pipe.json"))
        os.mkfifo(path)
    args = ["catalog"] if kind == "auto-fifo" else ["catalog", "--config", path]
    started = time.monotonic()
    out = run(args, tmp_path)
    if kind == "auto-fifo":  # not a file, so not picked: the demo servers are listed
        assert out.returncode == 0 and "geo" in out.stdout, out.stderr
    else:
        assert out.returncode == 2, out.stderr
        assert "not a regular file" in out.stderr
    assert time.monotonic() - started < 60  # it hung for good before


X_ECHO = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("xecho")


@server.tool(name="x-echo")
def x_echo(text: str) -> str:
    return "x-echo of server one: " + text


server.run("stdio")
"""


@pytest.mark.slow
def test_a_name_two_servers_own_is_a_usage_error_naming_both(tmp_path: Path) -> None:
    (tmp_path / "xecho.py").write_text(X_ECHO)
    write_config(tmp_path, {"one": stdio(tmp_path / "xecho.py"), "one-x": stdio(ECHO)})
    out = run(["call", "one-x-echo", "--arg", "text=hi"], tmp_path)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "'one'" in out.stderr and "'one-x'" in out.stderr and "tool://" in out.stderr
    assert "hi" not in out.stdout  # nothing was called


@pytest.mark.parametrize(("args", "fixed"), [
    (["call", "geo-distance", "--arg", "from_city", "London"], "--arg from_city=London"),
    (["call", "geo-distance", "--arg", "to_city=Paris", "--arg", "from_city", "New York"],
     "--arg 'from_city=New York'"),
    (["compare", "distance", "--arg", "from_city", "London", "--arg", "to_city=Paris"],
     "--arg from_city=London"),
])
def test_an_arg_value_after_a_space_says_how_to_write_it(tmp_path: Path, args: list[str],
                                                         fixed: str) -> None:
    """Issue 37, item 16: ``--arg from_city London`` got only "unrecognized arguments"."""
    with pytest.raises(_cli.UsageError) as caught:
        _cli.run(args)
    assert fixed in str(caught.value) and "'from_city' has no value" in str(caught.value)


def test_other_unrecognized_arguments_stay_argparse_errors(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        _cli.run(["call", "geo-distance", "--arg", "a=1", "stray"])
    assert caught.value.code == 2
    assert "unrecognized arguments: stray" in capsys.readouterr().err


@pytest.mark.slow
def test_catalog_from_a_client_reads_its_own_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    write_config(home / ".cursor", {"one": stdio(ECHO)})
    out = run(["catalog", "--from", "cursor"], tmp_path, HOME=str(home))
    assert out.returncode == 0, out.stderr
    assert "one-echo" in out.stdout
    missing = run(["catalog", "--from", "windsurf"], tmp_path, HOME=str(home))
    assert missing.returncode == 2
    assert "no windsurf config found; looked at" in missing.stderr
    both = run(["catalog", "--from", "cursor", "--demo"], tmp_path, HOME=str(home))
    assert both.returncode == 2 and "exclude each other" in both.stderr


@pytest.mark.slow
def test_doctor_prints_a_line_a_step_and_fails_with_the_step(tmp_path: Path) -> None:
    codex = tmp_path / "config.toml"
    codex.write_text(f'[mcp_servers.good]\ncommand = {json.dumps(sys.executable)}\n'
                     f'args = [{json.dumps(str(ECHO))}]\n\n[mcp_servers.cat]\ncommand = "cat"\n')
    good = run(["doctor", "good", "--config", str(codex)], tmp_path)
    assert good.returncode == 0, good.stderr
    lines = good.stdout.splitlines()
    assert "every step passed" in lines[0]
    assert [line.split("  ")[0] for line in lines[1:]] == [
        "✔ command found", "✔ process started", "✔ stdout speaks JSON-RPC",
        "✔ initialize answered", "✔ tools listed"]
    bad = run(["doctor", "cat", "--config", str(codex), "--timeout", "5"], tmp_path)
    assert bad.returncode == 1
    assert "failed at: stdout speaks JSON-RPC" in bad.stdout and "like cat" in bad.stdout
    unknown = run(["doctor", "nope", "--config", str(codex)], tmp_path)
    assert unknown.returncode == 2 and "no server 'nope'" in unknown.stderr
