"""Subcommands of the ``workbench`` CLI, one module per group (see workbench.cli.COMMANDS)."""
