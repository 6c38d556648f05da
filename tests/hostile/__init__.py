"""The hostile-input corpus (``corpus.py``) and the test that runs it through every channel."""
