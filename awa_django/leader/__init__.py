"""The leader process, ``manage.py runcron``: the loop and everything a pass does.

``loop`` runs the leader (``election`` is the advisory lock); ``evaluator``
reads due rows in bounded batches and plans them, ``row_checks`` parks rows it
cannot plan, ``policies`` applies the overlap, deadline and jitter policies,
``firing`` sends a batch through the fire statement, ``pipeline`` overlaps one
batch's statement with the planning of the next and ``prefire`` plans the next
slot's rows before it arrives; ``announcer`` sends ``task_enqueued`` for
committed fires off the firing thread; ``duties`` are the leader's own
maintenance services (the sync, parked rows); the others live in
:mod:`awa_django.maintenance`.
"""

__all__ = ["evaluator", "loop"]
