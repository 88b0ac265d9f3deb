"""Every command documents itself."""

from __future__ import annotations

import pytest
import typer

from memcli.cli.app import app


def _commands():
    group = typer.main.get_command(app)
    return sorted(group.commands)


def test_the_documented_commands_exist():
    assert "ingest" in _commands()


@pytest.mark.parametrize("name", _commands())
def test_every_command_has_help_text(cli, name):
    result = cli(name, "--help")
    assert result.exit_code == 0
    command = typer.main.get_command(app).commands[name]
    assert command.help and len(command.help.strip()) > 20, f"{name} needs a docstring"
    assert "Usage:" in result.stdout


def test_top_level_help_lists_commands(cli):
    result = cli("--help")
    assert result.exit_code == 0
    for name in _commands():
        assert name in result.stdout
