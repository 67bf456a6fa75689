"""`python -m gpuscale ...` runs the same CLI as the `gpuscale` command."""

from gpuscale.cli import entry

if __name__ == "__main__":
    entry()
