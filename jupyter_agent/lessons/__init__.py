"""Lessons: step through the agent loop state by state (the stepper), watch it (the
widget), and see a finished run as a picture (the timeline). The notebooks in
``notebooks/`` use these.

Importing this package stays light: the widget (ipywidgets) loads only from
``jupyter_agent.lessons.widget``.
"""

from .kit import Lesson, pairing_problems
from .recording import ApprovalSpan, Recording, Timed, record_run
from .snapshot import END_TABLE, STEP_TITLES, FrozenDict, Pair, Snapshot, freeze, thaw
from .stepper import Stepper, describe

__all__ = ["Lesson", "pairing_problems", "Stepper", "Snapshot", "Pair", "Recording", "Timed", "ApprovalSpan",
           "record_run", "END_TABLE", "STEP_TITLES", "FrozenDict", "freeze", "thaw", "describe"]
