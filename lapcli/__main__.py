"""``python -m lapcli``: the same as the ``lap`` command."""

from .entry import main

if __name__ == "__main__":
    main()
