/*
 * fire_protocol.pml -- the automatic fire protocol of one schedule row.
 *
 * Stands for: the runcron leader loop (awa_django/leader.py), one evaluation
 * pass (awa_django/evaluator.py: SELECT_DUE, plan_row) and the fire statement
 * awa_cron_fire_v3 (awa_django/sql/0008_parked_rows.sql; README.md says how
 * its parking and SKIP LOCKED map onto these steps), with the
 * unique slot index awa_jobs_cron_slot (sql/0002_cron_core.sql), operator
 * pause/resume/remove (awa_django/operations.py) and the database clock.
 * verification/README.md maps every variable and step to its SQL.
 *
 * Two runcron processes compete. The leader lock can be lost silently (the
 * session drops while the process still believes it leads), a process can
 * crash at any point -- in particular between reading the row and firing --
 * and restart; an operator pauses, resumes, removes and re-creates the row.
 *
 * Safety (assertions, checked in every reachable state):
 *   - no slot is enqueued twice (at most one job per (cron_name, cron_fire_at));
 *   - within one life of the row, the compare-and-swap alone prevents a re-fire:
 *     the unique slot index is only ever needed after remove + re-create;
 *   - every accepted fire moves last_enqueued_at strictly forward;
 *   - no job is enqueued while the row is paused.
 * Liveness (LTL, weak fairness, built with -DSTABLE: no crash, no pause, no
 * removal, at most one silent lock loss, the row may start paused and the
 * operator resumes it):  <> (jobs[MAXF] > 0)  "the latest due slot is
 * eventually enqueued", and for catch_up every slot after the first fire.
 *
 * Broken variants (make verify expects SPIN to refute each):
 *   -DNO_CAS         the UPDATE without "last_enqueued_at IS NOT DISTINCT FROM prev"
 *   -DNO_PAUSE_GUARD the UPDATE without "paused_at IS NULL"
 *   -DNO_SLOT_INDEX  awa_jobs without the unique slot index (remove + re-create)
 */

#define MAXF      3   /* fire slots 1..MAXF; slot s is due once clock >= s */
#define NULL_TOKEN 0  /* last_enqueued_at IS NULL */
#define NOBODY    9   /* no session holds the leader advisory lock */
#define COALESCE  0
#define CATCH_UP  1

#ifdef STABLE
#define MAX_CRASHES  0
#define MAX_LOSSES   1
#define MAX_PAUSES   0
#define MAX_REMOVALS 0
#else
#define MAX_CRASHES  1
#define MAX_LOSSES   1
#define MAX_PAUSES   1
#define MAX_REMOVALS 1
#endif

byte clock = 0;                 /* statement_timestamp(): slots <= clock are due  */
byte last = NULL_TOKEN;         /* awa_cron_jobs.last_enqueued_at                 */
bool paused = false;            /* awa_cron_jobs.paused_at IS NOT NULL            */
bool present = true;            /* the awa_cron_jobs row exists                   */
byte gen = 1;                   /* awa_cron_jobs.created_at (new on re-create)    */
byte policy = 2;                /* awa_cron_jobs.missed_fire_policy (2: not chosen yet) */
byte jobs[MAXF + 1];            /* count of awa_jobs rows with cron_fire_at = s   */
byte holder = NOBODY;           /* session holding pg_advisory_lock(LEADER_LOCK)  */
byte crashes = 0, losses = 0, removals = 0;
bit  pauses = 0;                /* at most one pause (wraps harmlessly in PAUSE_STORM) */
bool token_moves_forward = false;              /* ghosts for assertion messages */
bool only_recreated_rows_reach_index = false;
byte first = 0;                 /* ghost: the first slot ever enqueued            */

/* The WHERE clause of the mark UPDATE in awa_cron_fire_v3 (a firing entry). */
#ifdef NO_CAS
#define CAS_MATCHES  true
#else
#define CAS_MATCHES  (last == snap_last)
#endif
#ifdef NO_PAUSE_GUARD
#define NOT_PAUSED   true
#else
#define NOT_PAUSED   (!paused)
#endif
/* -DPAUSE_STORM (with -DSTABLE): an operator pausing and resuming forever.
   Liveness is not claimed then (ADR-007); SPIN must find the starvation. */
#ifdef PAUSE_STORM
#define CAN_PAUSE    true
#else
#define CAN_PAUSE    (pauses < MAX_PAUSES)
#endif
#define ROW_MATCHES  (present && gen == snap_gen && CAS_MATCHES && NOT_PAUSED)

proctype Runcron(byte me)
{
    bool leading = false;       /* the process believes it holds the lock */
    bool planned = false;       /* it read the row and holds a fire plan  */
    byte snap_last, snap_gen;   /* plan "prev" and "created_at"           */
    byte lo, hi, s;             /* plan "fires" = slots lo..hi            */

    do
    /* Election: pg_try_advisory_lock on the dedicated leader connection. */
    :: atomic { !leading && holder == NOBODY -> holder = me; leading = true }

    /* The session drops silently: PostgreSQL releases the lock, the process
       still believes it leads (until its next ping). */
    :: atomic { holder == me && losses < MAX_LOSSES -> holder = NOBODY; losses++ }

    /* Ping (SELECT 1) fails: step down, drop any plan. */
    :: atomic { leading && holder != me -> leading = false; planned = false }

    /* SELECT_DUE + plan_row: read the row (paused rows are skipped) and
       compute the due fires at database time "clock". */
    :: atomic {
           leading && !planned && present && !paused ->
           snap_last = last; snap_gen = gen;
           if
           :: snap_last == NULL_TOKEN && clock > 0 ->
                  lo = clock; hi = clock; planned = true   /* first fire: coalesced */
           :: snap_last != NULL_TOKEN && clock > snap_last && policy == CATCH_UP ->
                  lo = snap_last + 1; hi = clock; planned = true
           :: snap_last != NULL_TOKEN && clock > snap_last && policy == COALESCE ->
                  lo = clock; hi = clock; planned = true
           :: else -> skip                                 /* nothing due */
           fi
       }

    /* awa_cron_fire_v3: one statement, so one atomic step. Crash = neither. */
    :: atomic {
           planned ->
           if
           :: ROW_MATCHES ->
                  token_moves_forward = (hi > last || last == NULL_TOKEN);
                  assert(token_moves_forward); token_moves_forward = false;
                  last = hi;
                  s = lo;
                  do
                  :: s <= hi ->
                         assert(!paused);                   /* no enqueue while paused */
                         if
                         :: jobs[s] > 0 ->
                                /* Only a re-created row reaches the slot index. */
                                only_recreated_rows_reach_index = (removals > 0);
                                assert(only_recreated_rows_reach_index);
                                only_recreated_rows_reach_index = false;
#ifdef NO_SLOT_INDEX
                                jobs[s]++
#else
                                skip                        /* ON CONFLICT DO NOTHING */
#endif
                         :: else ->
                                jobs[s]++;
                                if :: first == 0 -> first = s :: else -> skip fi
                         fi;
                         assert(jobs[s] <= 1);              /* no slot enqueued twice */
                         s++
                  :: else -> break
                  od
           :: else -> skip                                  /* CAS lost: nothing, no error */
           fi;
           planned = false; s = 0; lo = 0; hi = 0
       }

    /* SIGKILL at any point (also between reading and firing): the session
       dies, the lock is released, the plan is lost; the process restarts. */
    :: atomic {
           crashes < MAX_CRASHES -> crashes++;
           leading = false; planned = false;
           if :: holder == me -> holder = NOBODY :: else -> skip fi
       }
    od
}

/* The database clock. */
proctype Clock()
{
    do
    :: clock < MAXF -> clock++
    :: else -> break
    od
}

/* An operator: pause/resume (operations.pause/resume), remove and re-create
   (operations.remove, then the next definition sync inserts a new row). */
proctype Operator()
{
    do
    :: atomic { !paused && CAN_PAUSE -> paused = true; pauses++ }
    :: paused -> paused = false
    :: atomic { present && removals < MAX_REMOVALS -> present = false; removals++ }
    :: atomic { !present -> present = true; gen++; last = NULL_TOKEN; paused = false }
    :: else -> break
    od
}

init
{
    atomic {
        if :: policy = COALESCE :: policy = CATCH_UP fi;
#ifdef STABLE
        if :: paused = true :: paused = false fi;   /* resumed by the operator */
#endif
        run Clock();
        run Operator();
        run Runcron(0);
        run Runcron(1)
    }
}

#ifdef STABLE
/* The latest due slot is eventually enqueued (both policies). */
ltl latest_slot_enqueued { <> (jobs[MAXF] > 0) }
/* catch_up: every slot after the first fire is eventually enqueued. */
ltl catch_up_complete {
    <> (policy == COALESCE ||
        (first > 0 && (jobs[1] > 0 || first > 1) && (jobs[2] > 0 || first > 2) && jobs[3] > 0))
}
#endif
