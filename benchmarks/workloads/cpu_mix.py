"""A CPU-bound mix in the spirit of pyperformance, for ``benchmarks/agent_overhead.py``.

Run: python benchmarks/workloads/cpu_mix.py [--scale 1.0] [--start-agent]

Seven kernels, each modelled on a pyperformance benchmark: ``json`` (json_dumps/json_loads),
``regex`` (regex_effbot/regex_v8), ``nbody``, ``dict_str`` (word counts, formatting, split/join),
``deepcopy``, ``alloc_churn`` (object graphs with reference cycles, so the cyclic GC runs often,
like gc_traversal/gc_collect) and ``float`` (object attributes and math). The kernels are
interleaved in ``ROUNDS`` rounds, so the agent's periodic work (every 0.5 s) falls evenly across
them. ``--scale 1.0`` is about 4 s on a 2-vCPU EPYC VM under CPython 3.11.

The last line printed is one JSON object: ``work_s`` (perf_counter around the kernels only),
``work_cpu_s`` (the process's CPU time over the same span, every thread included),
per-kernel seconds, ``main_unix`` (``time.time()`` at the first line of this file, to measure
start-up from the harness), GC collection counts and whether a hawkwatch agent was running.
``--start-agent`` calls ``hawkwatch.start()`` before the work (the in-code way to start it).
"""

import time

MAIN_UNIX = time.time()  # first statement: when the interpreter reached the main module

import argparse  # noqa: E402 - after the start-up timestamp on purpose
import copy  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402

ROUNDS = 8


# -- json ------------------------------------------------------------------------------------


def make_document(rng: random.Random) -> dict[str, object]:
    return {
        "id": rng.randrange(10**9),
        "name": "".join(rng.choice("abcdefghij") for _ in range(12)),
        "tags": [f"tag-{rng.randrange(100)}" for _ in range(8)],
        "scores": [rng.random() for _ in range(20)],
        "nested": {
            "active": True,
            "owner": {"login": "user", "ids": list(range(10)), "ratio": 0.25},
            "history": [{"t": i, "v": rng.random(), "ok": i % 3 == 0} for i in range(10)],
        },
        "text": "unicode ✓ text \u00e9\u00e8 " * 3,
    }


def kernel_json(n: int) -> int:
    rng = random.Random(1)
    docs = [make_document(rng) for _ in range(20)]
    total = 0
    for _ in range(n):
        for doc in docs:
            text = json.dumps(doc)
            back = json.loads(text)
            total += len(text) + len(back)
        total += len(json.dumps(docs, indent=2, sort_keys=True))
    return total


# -- regex -----------------------------------------------------------------------------------

_WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def make_text(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        words = " ".join(rng.choice(_WORDS) for _ in range(10))
        out.append(
            f"{i:05d} user{rng.randrange(500)}@example{rng.randrange(9)}.com {words} "
            f"GET /api/v1/items/{rng.randrange(10**6)}?page={rng.randrange(50)} "
            f"200 {rng.randrange(10**5)} 2024-0{rng.randrange(1, 10)}-1{rng.randrange(10)}"
        )
    return "\n".join(out)


_PATTERNS = [
    re.compile(r"[\w.+-]+@[\w-]+\.\w+"),
    re.compile(r"/api/v(\d+)/(\w+)/(\d+)\?page=(\d+)"),
    re.compile(r"\b(?:alpha|gamma|theta)\s+\w+a\b"),
    re.compile(r"(\d{4})-(\d{2})-(\d{2})"),
    re.compile(r"^(\d+) .*? (\d{3}) (\d+)", re.MULTILINE),
]


def kernel_regex(n: int) -> int:
    text = make_text(random.Random(2), 300)
    total = 0
    for _ in range(n):
        for pattern in _PATTERNS:
            total += len(pattern.findall(text))
        total += len(_PATTERNS[3].sub(r"\3/\2/\1", text))
        total += sum(1 for _ in re.finditer(r"user(\d+)@", text))
    return total


# -- nbody (pyperformance's bm_nbody) ------------------------------------------------------

PI = 3.14159265358979323
SOLAR_MASS = 4 * PI * PI
DAYS_PER_YEAR = 365.24

Body = tuple[list[float], list[float], float]


def make_bodies() -> list[Body]:
    return [
        ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], SOLAR_MASS),
        (
            [4.84143144246472090e00, -1.16032004402742839e00, -1.03622044471123109e-01],
            [
                1.66007664274403694e-03 * DAYS_PER_YEAR,
                7.69901118419740425e-03 * DAYS_PER_YEAR,
                -6.90460016972063023e-05 * DAYS_PER_YEAR,
            ],
            9.54791938424326609e-04 * SOLAR_MASS,
        ),
        (
            [8.34336671824457987e00, 4.12479856412430479e00, -4.03523417114321381e-01],
            [
                -2.76742510726862411e-03 * DAYS_PER_YEAR,
                4.99852801234917238e-03 * DAYS_PER_YEAR,
                2.30417297573763929e-05 * DAYS_PER_YEAR,
            ],
            2.85885980666130812e-04 * SOLAR_MASS,
        ),
        (
            [1.28943695621391310e01, -1.51111514016986312e01, -2.23307578892655734e-01],
            [
                2.96460137564761618e-03 * DAYS_PER_YEAR,
                2.37847173959480950e-03 * DAYS_PER_YEAR,
                -2.96589568540237556e-05 * DAYS_PER_YEAR,
            ],
            4.36624404335156298e-05 * SOLAR_MASS,
        ),
        (
            [1.53796971148509165e01, -2.59193146099879641e01, 1.79258772950371181e-01],
            [
                2.68067772490389322e-03 * DAYS_PER_YEAR,
                1.62824170038242295e-03 * DAYS_PER_YEAR,
                -9.51592254519715870e-05 * DAYS_PER_YEAR,
            ],
            5.15138902046611451e-05 * SOLAR_MASS,
        ),
    ]


def kernel_nbody(n: int) -> int:
    bodies = make_bodies()
    pairs = [(bodies[i], bodies[j]) for i in range(len(bodies)) for j in range(i + 1, len(bodies))]
    dt = 0.01
    for _ in range(n * 1000):
        for ([x1, y1, z1], v1, m1), ([x2, y2, z2], v2, m2) in pairs:
            dx, dy, dz = x1 - x2, y1 - y2, z1 - z2
            mag = dt * ((dx * dx + dy * dy + dz * dz) ** (-1.5))
            b1m, b2m = m1 * mag, m2 * mag
            v1[0] -= dx * b2m
            v1[1] -= dy * b2m
            v1[2] -= dz * b2m
            v2[0] += dx * b1m
            v2[1] += dy * b1m
            v2[2] += dz * b1m
        for r, [vx, vy, vz], _m in bodies:
            r[0] += dt * vx
            r[1] += dt * vy
            r[2] += dt * vz
    return int(sum(abs(r[0]) for r, _v, _m in bodies) * 1000)


# -- dict / str ------------------------------------------------------------------------------


def kernel_dict_str(n: int) -> int:
    rng = random.Random(3)
    text = " ".join(rng.choice(_WORDS) + str(rng.randrange(50)) for _ in range(4000))
    total = 0
    for _ in range(n):
        counts: dict[str, int] = {}
        for word in text.split():
            counts[word] = counts.get(word, 0) + 1
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        lines = [f"{word:>12}|{count:5d}|{word.upper()}|{word[::-1]}" for word, count in ranked]
        report = "\n".join(lines)
        index = {word.capitalize(): {"n": count, "len": len(word)} for word, count in ranked}
        total += len(report) + len(index) + report.count("A") + len(report.replace("|", ", "))
    return total


# -- deepcopy (pyperformance's bm_deepcopy) --------------------------------------------------


class Point:
    def __init__(self, x: float, y: float) -> None:
        self.x = x
        self.y = y


def kernel_deepcopy(n: int) -> int:
    data = {
        "list": [1, 2, 3, 43, "s", (1, 2), Point(1.0, 2.0)],
        "str": "hello world",
        "dict": {"a": [1, 2, 3], "b": {"c": "d", "e": (5.0, 6.0)}},
        "points": [Point(i, -i) for i in range(20)],
        "rows": [{"id": i, "name": f"row{i}", "values": list(range(5))} for i in range(20)],
    }
    total = 0
    for _ in range(n * 40):
        total += len(copy.deepcopy(data))
    return total


# -- allocation churn: cycles the cyclic GC has to find -------------------------------------


class Node:
    __slots__ = ("children", "parent", "payload")

    def __init__(self, parent: "Node | None", payload: object) -> None:
        self.parent = parent
        self.children: list[Node] = []
        self.payload = payload


def build_tree(depth: int, fanout: int, parent: Node | None = None) -> Node:
    node = Node(parent, {"depth": depth, "tags": [depth] * 3})
    if depth:
        node.children = [build_tree(depth - 1, fanout, node) for _ in range(fanout)]
    return node


_RETAINED: list[Node] = []  # a long-lived heap, so full collections have something to traverse


def kernel_alloc_churn(n: int) -> int:
    total = 0
    for i in range(n * 2):
        tree = build_tree(5, 4)  # ~1,365 nodes, each in a parent <-> child cycle
        total += len(tree.children)
        if i % 4 == 0 and len(_RETAINED) < 32:
            _RETAINED.append(tree)
    return total


# -- float / attributes (pyperformance's bm_float) ------------------------------------------


class Vec:
    __slots__ = ("x", "y", "z")

    def __init__(self, i: float) -> None:
        self.x = x = math.sin(i)
        self.y = math.cos(i) * 3
        self.z = (x * x) / 2

    def normalize(self) -> None:
        norm = math.sqrt(self.x * self.x + self.y * self.y + self.z * self.z)
        self.x /= norm
        self.y /= norm
        self.z /= norm

    def maximize(self, other: "Vec") -> "Vec":
        self.x = max(self.x, other.x)
        self.y = max(self.y, other.y)
        self.z = max(self.z, other.z)
        return self


def kernel_float(n: int) -> int:
    total = 0.0
    for _ in range(n):
        points = [Vec(i) for i in range(4000)]
        for p in points:
            p.normalize()
        best = points[0]
        for p in points[1:]:
            best = best.maximize(p)
        total += best.x + best.y + best.z
    return int(total)


# Per round at --scale 1.0; tuned so each kernel takes roughly 0.5-0.7 s in all (CPython 3.11).
KERNELS: dict[str, tuple[Callable[[int], int], int]] = {
    "json": (kernel_json, 18),
    "regex": (kernel_regex, 10),
    "nbody": (kernel_nbody, 12),
    "dict_str": (kernel_dict_str, 40),
    "deepcopy": (kernel_deepcopy, 8),
    "alloc_churn": (kernel_alloc_churn, 9),
    "float": (kernel_float, 8),
}


# What a typical service (a web framework, an ORM, a logging setup) has imported before its
# first request: with these loaded in every arm, only what the agent itself adds is measured.
APP_IMPORTS = (
    "logging",
    "dataclasses",
    "typing",
    "pathlib",
    "inspect",
    "traceback",
    "threading",
    "queue",
    "weakref",
    "contextlib",
    "enum",
    "struct",
    "zlib",
    "mmap",
    "heapq",
    "signal",
)


def agent_running() -> bool:
    api = sys.modules.get("hawkwatch.agent.api")
    return api is not None and api.current_agent() is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scale", type=float, default=1.0, help="work multiplier (1.0 ≈ 4 s)")
    parser.add_argument("--start-agent", action="store_true", help="call hawkwatch.start() first")
    parser.add_argument(
        "--app-imports",
        action="store_true",
        help="first import the standard modules a typical service has loaded anyway",
    )
    args = parser.parse_args()
    if args.app_imports:
        for name in APP_IMPORTS:
            importlib.import_module(name)

    agent_import_s = agent_start_s = 0.0
    if args.start_agent:
        t0 = time.perf_counter()
        import hawkwatch

        t1 = time.perf_counter()
        hawkwatch.start()
        agent_import_s, agent_start_s = t1 - t0, time.perf_counter() - t1

    gc_before = [s["collections"] for s in gc.get_stats()]
    per_kernel = dict.fromkeys(KERNELS, 0.0)
    checksum = 0
    clock = time.perf_counter
    cpu_started = time.process_time()
    started = clock()
    for _ in range(ROUNDS):
        for name, (kernel, base) in KERNELS.items():
            t0 = clock()
            checksum += kernel(max(1, round(base * args.scale)))
            per_kernel[name] += clock() - t0
    work_s = clock() - started
    work_cpu_s = time.process_time() - cpu_started
    gc_after = [s["collections"] for s in gc.get_stats()]

    print(
        json.dumps(
            {
                "work_s": work_s,
                "work_cpu_s": work_cpu_s,
                "kernels": per_kernel,
                "main_unix": MAIN_UNIX,
                "agent_import_s": agent_import_s,
                "agent_start_s": agent_start_s,
                "gc_collections": [a - b for a, b in zip(gc_after, gc_before, strict=True)],
                "agent": agent_running(),
                "checksum": checksum,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
