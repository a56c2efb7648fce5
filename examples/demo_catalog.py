"""A module that is slow to import: it builds a lookup table at import time (a common mistake)."""

import hashlib

CATALOG = {
    hashlib.sha256(str(n).encode()).hexdigest()[:12]: {"sku": n, "price": n % 997 / 10}
    for n in range(150_000)
}
