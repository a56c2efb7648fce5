"""The files a session keeps about how its process ends, by name: written by the agent (the
crash monitor, the ``os._exit`` hook), read by ``hawkwatch run``'s supervisor and by
``crash_recovery``. A module of its own so that the agent's start need not load the
supervisor's ``supervised_exit`` for these names.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

EVIDENCE_NAME: Final = "exit-evidence.json"
CLASSIFIED_NAME: Final = "exit-classified"
FAULT_NAME: Final = "crash-fault.txt"  # faulthandler's dump (crash_recovery reads it)
INTENT_NAME: Final = "exit-intent.json"  # written by os._exit
MAX_SESSIONS_LOOKED_AT: Final = 20
"""Earlier sessions looked at for an exit to classify (the newest)."""
