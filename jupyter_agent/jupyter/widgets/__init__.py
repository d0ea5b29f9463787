"""The run's widgets: the live run view, its cards and approval cards, the undo bar, the
plain-output fallback, and the run handle (``AgentRun``) whose display they are."""
