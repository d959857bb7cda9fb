"""VS Code ``${input:id}`` answered through the ask form, in a real kernel, while a plain
``bench.load_config`` blocks the cell: the test plays JupyterLab's widget manager (comm
messages, as in ``test_ask.py``). A password input is a password box, emptied once read;
its value reaches the server and nothing shows it."""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolbench._bench.clients.inputs import InputPrompt
from toolbench._notebook.ask.inputs import InputCard

ROOT = Path(__file__).parent.parent
ECHO = str(ROOT / "tests" / "servers" / "echo_server.py")
SECRET = "pw-4471-kernel-secret"


def test_the_card_escapes_the_declaration_and_empties_a_password() -> None:
    pytest.importorskip("ipywidgets")
    answers: list[object] = []
    prompt = InputPrompt("tok", "<b>mcp.json</b>", "<img src=x> your token", True, None, ())
    card = InputCard(prompt.source, prompt, answers.append)
    assert "<img" not in card.message.value and "&lt;img src=x&gt;" in card.message.value
    assert type(card.box).__name__ == "Password"
    card.box.value = "s3cret-value"
    card._use()
    assert answers == ["s3cret-value"] and card.box.value == "" and card.box.disabled
    assert "s3cret" not in card.status.value and "hidden" in card.status.value
    choice = InputPrompt("region", "f", "Region", False, "eu", ("us", "eu"))
    picked: list[object] = []
    InputCard("f", choice, picked.append)._use()
    assert picked == ["eu"]



def test_the_card_refuses_an_empty_box_by_name_and_forgets_a_password_it_never_used() -> None:
    pytest.importorskip("ipywidgets")
    answers: list[object] = []
    prompt = InputPrompt("acc-token", "mcp.json", "Token", True, None, ())
    card = InputCard(prompt.source, prompt, answers.append)
    card._use()  # nothing typed: refused, naming the input and the rule, and still open
    assert answers == [] and card.answered is None and not card.box.disabled
    assert "input 'acc-token' needs a value" in html.unescape(card.status.value)
    assert "nothing was sent" in card.status.value
    # Typed and sent on blur, then the question ends (interrupt, timeout): the box forgets.
    card.box.value = "typed-but-never-used"
    card.expire("this request ended before it was answered")
    assert card.box.value == "" and card.box.disabled and answers == []
    assert "ended" in card.status.value
    plain = InputPrompt("region", "mcp.json", "Region", False, None, ())
    kept = InputCard(plain.source, plain, answers.append)
    kept.box.value = "eu"
    kept.expire("ended")
    assert kept.box.value == "eu" and kept.box.disabled  # not a secret: left as typed

@pytest.fixture
def frontend() -> Iterator[object]:
    pytest.importorskip("jupyter_client")
    pytest.importorskip("ipywidgets")
    from test_ask import Frontend

    made = Frontend()
    try:
        made.run(f"import sys; sys.path.insert(0, {str(ROOT)!r})\nimport toolbench as tb\n"
                 "bench = tb.Bench(timeout=60, connect_timeout=90)")
        yield made
    finally:
        made.close()


@pytest.mark.slow
def test_inputs_are_asked_in_the_blocked_cell_and_reach_the_server(
        frontend: object, tmp_path: Path) -> None:
    from test_ask import Frontend, type_keys

    assert isinstance(frontend, Frontend)
    config = tmp_path / ".vscode" / "mcp.json"
    config.parent.mkdir()
    config.write_text(json.dumps({
        "inputs": [{"type": "promptString", "id": "acc-token-4471",
                    "description": "Account token", "password": True},
                   {"type": "promptString", "id": "region", "description": "Region"}],
        "servers": {"echo": {"type": "stdio", "command": sys.executable, "args": [ECHO],
                             "env": {"TOOLBENCH_TEST_SECRET": "${input:acc-token-4471}",
                                     "REGION": "${input:region}"}}}}))
    cell = frontend.start(
        f"table = bench.load_config({str(config)!r})\n"
        "print('STATUS', list(table['status']))\n"
        "print('LEN', bench.call('echo-whoami').data['secret_len'])\n"
        "print('SHOWN', repr(bench.servers.to_dict()) + repr(bench.records.to_dict()))")
    frontend.read_until(lambda: frontend.find("PasswordModel"))
    (password,) = frontend.find("PasswordModel")
    update = frontend.update(password, value=SECRET)
    frontend.read_until(lambda: frontend.answered_like_the_kernel(update, password))
    (use,) = frontend.find("ButtonModel", description="Use")
    frontend.click(use)
    frontend.read_until(lambda: frontend.find("TextModel", placeholder="region"))
    (region,) = frontend.find("TextModel", placeholder="region")
    type_keys(frontend, region, "eu")
    (use2,) = frontend.find("ButtonModel", description="Use", disabled=False)
    frontend.click(use2)
    frontend.read_until(lambda: cell in frontend.idle, timeout=120)
    printed = frontend.printed.get(cell, "")
    assert "STATUS ['connected']" in printed, frontend.outputs
    assert f"LEN {len(SECRET)}" in printed  # the server got the answer, not "${input:...}"
    assert frontend.displayed[:1] == [cell]  # the form showed in the blocked cell
    # the password box was emptied by the kernel, and nothing printed or shown holds it
    assert frontend.models[password]["value"] == ""
    assert SECRET not in "".join(frontend.outputs)
    assert all(SECRET not in json.dumps(state, default=str)
               for cid, state in frontend.models.items() if cid != password)
    assert frontend.showing("received (hidden)")
