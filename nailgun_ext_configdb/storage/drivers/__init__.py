"""The storage drivers: ``base`` says what one does, ``sql`` and ``git`` are the two shipped."""
