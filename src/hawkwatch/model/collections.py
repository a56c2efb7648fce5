"""Names of the record collections, defined once.

MTHawkeye's names are reused where the meaning matches (``formats/hawkeye.md`` §4); hawkwatch's
own additions use new names. Value shapes are documented in ``docs/collections.md``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

# Written by MTHawkeye and by hawkwatch with the same meaning.
LAUNCH_TIME: Final = "launch-time"
RESIDENT_FOOTPRINT: Final = "r-mem"
AVAILABLE_MEMORY: Final = "avl-mem"
CPU: Final = "cpu"
THREADS_COUNT: Final = "threads-count"
APP_LAUNCH: Final = "app-launch"
CUSTOM_TIME_EVENT: Final = "custom-time-event"

# Written by MTHawkeye only (read by reports of iOS sessions).
FPS: Final = "fps"
GL_FPS: Final = "gl-fps"
ANR: Final = "anr"
CPU_HIGHLOAD: Final = "cpu-highload"
CPU_HIGHLOAD_STACKFRAME: Final = "cpu-highload-stackframe"
#: Side file (not a collection) for stack-frame trees of 15 KB or more (hawkeye.md §5.3).
CPU_HIGHLOAD_STACKFRAME_EXT: Final = "cpu-highload-stackframe-ext"
#: MTHawkeye's network side files (hawkeye.md §5.2): an AppenderFile of JSON lines, and the
#: plain file of transactions of 16 KiB or more, each followed by ``hawkeyeNetwork``.
NETWORK_TRANSACTIONS_FILE: Final = "network-transactions"
HUGE_NETWORK_RECORDS_FILE: Final = "hugeNetworkRecords"

# hawkwatch's own additions.
MEMORY_RESIDENT: Final = "mem"
GC_PAUSE: Final = "gc-pause"
IMPORT_TIME: Final = "import-time"
CUSTOM_SPAN: Final = "custom-span"
EXIT_STATE: Final = "exit-state"
HAWKWATCH_ERROR: Final = "hawkwatch-error"
STORE_DROPPED: Final = "store-dropped"
HANG_KILL: Final = "hang-kill"
CPU_PROFILE: Final = "cpu-profile"
NETWORK_TRANSACTION: Final = "network-transaction"
NETWORK_AGGREGATE: Final = "network-aggregate"
IO_ISSUE: Final = "io-issue"
#: Folder of ``cpu-profile`` windows too large for a record (``<key>.json`` each).
CPU_PROFILE_DIR: Final = "cpu-profile"
CRASH: Final = "crash"
EXIT_CLASSIFICATION: Final = "exit-classification"
MEMORY_LEVEL: Final = "memory-level"
MEMORY_GROWTH: Final = "memory-growth"
MEMORY_TRACE: Final = "memory-trace"
MEMORY_SNAPSHOT: Final = "memory-snapshot"
MEMORY_LEAK: Final = "memory-leak"
MEMORY_TYPES: Final = "memory-types"
MEMORY_CYCLES: Final = "memory-cycles"

#: The series sampled by the resources monitor, in report order.
RESOURCE_SERIES: Final = (MEMORY_RESIDENT, RESIDENT_FOOTPRINT, AVAILABLE_MEMORY, CPU, THREADS_COUNT)

#: Every collection hawkwatch's agent (and ``hawkwatch run``) writes, documented in
#: ``docs/collections.md``.
AGENT_COLLECTIONS: Final = (
    LAUNCH_TIME,
    *RESOURCE_SERIES,
    GC_PAUSE,
    ANR,
    HANG_KILL,
    APP_LAUNCH,
    IMPORT_TIME,
    CUSTOM_TIME_EVENT,
    CUSTOM_SPAN,
    EXIT_STATE,
    HAWKWATCH_ERROR,
    STORE_DROPPED,
    CPU_HIGHLOAD,
    CPU_HIGHLOAD_STACKFRAME,
    CPU_PROFILE,
    NETWORK_TRANSACTION,
    NETWORK_AGGREGATE,
    IO_ISSUE,
    CRASH,
    EXIT_CLASSIFICATION,
    MEMORY_LEVEL,
    MEMORY_GROWTH,
    MEMORY_TRACE,
    MEMORY_SNAPSHOT,
    MEMORY_LEAK,
    MEMORY_TYPES,
    MEMORY_CYCLES,
)
