"""The ``%%agent`` / ``%agent`` magics (``%load_ext``), their text answers, the chat widget."""
