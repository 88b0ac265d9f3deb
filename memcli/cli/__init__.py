"""The Typer CLI: a thin layer that resolves options, calls one library function per command and
hands the result to one output helper. Only this package imports typer and rich."""
