"""A throwaway app whose cron.py declares an invalid schedule.

Never installed by tests.settings; only tests/badapp/settings.py installs it, in a
subprocess, to show that startup fails with InvalidSchedule.
"""
