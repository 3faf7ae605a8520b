"""Owner-scoped reconciliation: retiring schedules removed from code, safely.

``snapshots`` publishes each process's runtime snapshot and declarations;
``manifest`` builds and hashes an owner's manifest; ``evidence`` loads what the
database knows of an owner; ``decision`` decides (pure: evidence in, plan out);
``persistence`` records the agreement and retires.
"""

__all__ = ["evidence", "manifest", "persistence", "snapshots"]
