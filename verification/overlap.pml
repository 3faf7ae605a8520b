/*
 * overlap.pml: the overlap guard of the fire statement (overlap = 'skip').
 *
 * One schedule, two leaders that both fire (a deposed leader keeps firing
 * until its ping fails: the model lets both fire all the time), a worker
 * finishing jobs, and an operator's manual trigger (which bypasses the
 * policy and holds the row lock FOR SHARE while it inserts its job).
 *
 * awa_cron_fire_v5 (sql/0017_execution_policies.sql) runs two statements:
 * 1. lock the row (FOR UPDATE SKIP LOCKED: a held row writes nothing);
 * 2. with a snapshot taken after the lock, count the unfinished jobs of the
 *    schedule, do the compare-and-swap, and insert the job only if none is
 *    unfinished (else record the slot as skipped_overlap).
 * Statement 2 is one atomic step here: while the row lock is held no job of
 * the schedule can be inserted (fires and triggers need the lock), and a job
 * finishing meanwhile only lowers the count.
 *
 * Claims: an automatic job is never inserted while a job of the schedule is
 * unfinished; no slot is enqueued twice; a slot is never both enqueued and
 * skipped; the token only moves forward.
 *
 * -DCHECK_OUTSIDE: the broken variant. The unfinished jobs are counted before
 * the row lock (a separate transaction, or one statement whose snapshot
 * predates its lock, as in v3's single statement): a manual trigger that
 * commits in between is not seen, and SPIN finds the overlap.
 */

#define SLOTS 3

byte clock = 1;            /* slots <= clock are due (the database clock) */
byte last = 0;             /* awa_cron_jobs.last_enqueued_at (0 = NULL): the CAS token */
bool locked = false;       /* the schedule row's lock */
byte unfinished = 0;       /* unfinished jobs of the schedule, automatic and manual */
byte jobs[SLOTS + 1];      /* automatic jobs per slot */
byte skipped[SLOTS + 1];   /* slots recorded as skipped_overlap */
bool triggered = false;    /* one manual trigger (bounds the state space) */

proctype Leader() {
    byte prev, s, seen;
    bool got;
end:
    do
    :: atomic {            /* read + plan (coalesce: the latest due slot) */
           prev = last;
           s = (clock > last -> clock : 0)
       };
       if
       :: s == 0 -> skip
       :: else ->
#ifdef CHECK_OUTSIDE
          seen = unfinished;
#endif
          atomic {         /* statement 1: FOR UPDATE SKIP LOCKED */
              if
              :: !locked -> locked = true; got = true
              :: else -> got = false
              fi
          };
          if
          :: got ->
             atomic {      /* statement 2, snapshot after the lock */
#ifndef CHECK_OUTSIDE
                 seen = unfinished;
#endif
                 if
                 :: last == prev ->
                    assert(s > last);
                    last = s;
                    if
                    :: seen == 0 ->
                       assert(unfinished == 0);
                       assert(jobs[s] == 0 && skipped[s] == 0);
                       jobs[s]++;
                       unfinished++
                    :: else ->
                       assert(jobs[s] == 0 && skipped[s] == 0);
                       skipped[s]++
                    fi
                 :: else -> skip   /* CAS lost: nothing written */
                 fi;
                 locked = false
             }
          :: else -> skip
          fi
       fi
    od
}

proctype Worker() {
end:
    do
    :: atomic { unfinished > 0 -> unfinished-- }
    od
}

proctype Operator() {
    /* awa_cron_trigger_v1: FOR SHARE on the row, insert the job, commit. */
    atomic { !locked && !triggered -> triggered = true; unfinished++ }
}

proctype Clock() {
end:
    do
    :: atomic { clock < SLOTS -> clock++ }
    od
}

init {
    atomic {
        run Leader();
        run Leader();
        run Worker();
        run Operator();
        run Clock()
    }
}
