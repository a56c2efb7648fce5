"""The contract between ``hawkwatch run`` and the agent's bootstrap in the program it starts.

Kept in a module of its own, importing nothing, so that neither side has to import the other
(the supervisor must not pay for importing the agent it never runs).
"""

from __future__ import annotations

import os

# Plain names and os.path only: this module is on the supervisor's start path, which imports as
# little as it can (pathlib and typing cost milliseconds on every ``hawkwatch run``).
BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.realpath(__file__)), "agent", "_bootstrap")
"""Put first on the program's PYTHONPATH; holds only ``sitecustomize.py``."""
SUPERVISED_VAR = "_HAWKWATCH_SUPERVISED"
"""Set to "1" for the process ``hawkwatch run`` starts; removed from the environment once read."""
SESSION_FILE_VAR = "_HAWKWATCH_SESSION_FILE"
"""A file the started process writes its session folder's path into, for the supervisor."""
PYTHON_VAR = "_HAWKWATCH_PYTHON"
"""The supervisor's interpreter: named in the warning when the program's lacks hawkwatch."""
MAIN_STARTED = "main-started"
"""A line the bootstrap adds to the session file when the program's own code starts."""
WATCHING_MAIN = "watching-main"
"""A line written with the session's path when the bootstrap can see the program's code start."""
