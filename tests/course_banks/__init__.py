"""The course's check banks, one module per lesson (see ``tests/checkbank.py``)."""
