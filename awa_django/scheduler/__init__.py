"""Firing: the ``runcron`` leader and everything a pass does.

``leader`` runs the loop (``election`` is the advisory lock); ``evaluator``
reads due rows in bounded batches and plans them, ``row_checks`` parks rows it
cannot plan, ``firing`` sends a batch through the fire statement, ``pipeline``
overlaps one batch's statement with the planning of the next and ``prefire``
plans the next slot's rows before it arrives; ``announcer`` sends
``task_enqueued`` for committed fires off the firing thread; ``duties`` are the
leader's own maintenance services (the rest live in ``maintenance``).
"""

__all__ = ["evaluator", "leader"]
