"""Run Django's own ``tests/tasks`` against ``AwaBackend`` (``make conformance``).

Nothing of Django's test-suite is stored here: ``scripts/conformance.py``
downloads the source distribution of the installed Django with pip. This
package holds only what the run needs: settings, the backend mapping, the
pytest plugin and the one list of expected deviations.
"""
