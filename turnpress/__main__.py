"""``python -m turnpress``: the same as the ``turnpress`` command."""

from turnpress.cli import main

if __name__ == "__main__":
    main()
