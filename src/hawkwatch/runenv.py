"""The contract between ``hawkwatch run`` and the agent's bootstrap in the program it starts.

Kept in a module of its own, importing nothing, so that neither side has to import the other
(the supervisor must not pay for importing the agent it never runs).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hawkwatch run's start)
if TYPE_CHECKING:
    from typing import Final

BOOTSTRAP_DIR: Final = os.path.join(
    os.path.dirname(os.path.realpath(__file__)), "agent", "_bootstrap"
)
"""Put first on the program's PYTHONPATH; holds only ``sitecustomize.py``. A string: the
supervisor does not import ``pathlib`` before its spawn."""
SUPERVISED_VAR: Final = "_HAWKWATCH_SUPERVISED"
"""Set to "1" for the process ``hawkwatch run`` starts; removed from the environment once read."""
SESSION_FILE_VAR: Final = "_HAWKWATCH_SESSION_FILE"
"""A file the started process writes its session folder's path into, for the supervisor."""
CHILDREN_VAR: Final = "_HAWKWATCH_CHILDREN"
"""Set to "1" by ``hawkwatch run --children``: every Python child of the program (spawned, exec'd)
starts an agent of its own. Without it only the program itself does (and its ``fork()`` children,
which cost no new interpreter); other Python children skip the agent before importing it."""
TIDY_VAR: Final = "_HAWKWATCH_SUPERVISOR_TIDIES"
"""Set to "1" by a supervisor that removes old sessions after the program ends: the program's
agent then leaves that to it unless the program runs long enough (``SUPERVISED_TIDY_DELAY_S``);
removed from the environment once read, like ``SUPERVISED_VAR``."""
SUPERVISED_TIDY_DELAY_S: Final = 1.0
PYTHON_VAR: Final = "_HAWKWATCH_PYTHON"
"""The supervisor's interpreter: named in the warning when the program's lacks hawkwatch."""
PTRACER_VAR: Final = "_HAWKWATCH_PTRACER"
"""The supervisor's pid, set when its out-of-process sampler runs: the agent names it as an
allowed tracer (Yama ``PR_SET_PTRACER``). Inherited, so forked and exec'd children do it too."""
OUTSIDE_SAMPLER_VAR: Final = "_HAWKWATCH_OUTSIDE_SAMPLER"
"""Set to "py-spy" while the supervisor samples the program from outside: the in-process sampler
then keeps only ``IN_PROCESS_SHARE`` of the budget (wall mode, and a profile if the supervisor
dies), py-spy gets the rest. Inherited, like the sampling itself (``--subprocesses``)."""
IN_PROCESS_SHARE: Final = 0.2
OUTSIDE_STOPPED_VAR: Final = "_HAWKWATCH_OUTSIDE_STOPPED"
"""Set beside ``OUTSIDE_SAMPLER_VAR``: a file in the supervisor's private scratch folder that
does not exist while the outside sampler samples. The supervisor creates it, holding why, when
the sampler gave up (py-spy cannot attach: no ptrace rights; or it keeps failing) or never
started; the in-process sampler looks for it about once a second and from then on takes the
whole budget and honours a fixed ``profiler.rate_hz``. Inherited with the rest."""
MAIN_STARTED: Final = "main-started"
"""A line the bootstrap adds to the session file when the program's own code starts."""
WATCHING_MAIN: Final = "watching-main"
"""A line written with the session's path when the bootstrap can see the program's code start."""
