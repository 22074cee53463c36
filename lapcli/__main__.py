"""``python -m lapcli``: the same as the ``lap`` command."""

from .cli import main

if __name__ == "__main__":
    main()
