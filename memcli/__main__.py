"""``python -m memcli`` runs the CLI."""

from memcli.cli.app import main

if __name__ == "__main__":
    main()
