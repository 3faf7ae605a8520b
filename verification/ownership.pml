/*
 * ownership.pml -- owner-scoped reconciliation and retirement with an
 * outdated writer present.
 *
 * Stands for: snapshot publication (awa_django/runtime.py RuntimeReporter.write
 * -> reconciliation.publish -> evaluate_locked / sync_definitions), the leader's
 * reconcile pass (reconciliation.reconcile), operator retire/restore
 * (ownership.operate), manual trigger (awa_cron_trigger_v1), the current fire
 * statement (awa_cron_fire_v3), and the triggers of sql/0004_reconciliation.sql:
 * the schedule fence (awa_cron_schedule_fence_v1), the protocol lock and the
 * unknown-runtime reset (awa_cron_unknown_runtime_v1). See README.md.
 *
 * Owner "billing" owns two rows, INVOICE and REMINDER. Two current runtimes A
 * and B publish one of two manifests:
 *   M1 = { invoice: definition 1, reminder: definition 1 }
 *   M2 = { invoice: definition 2 }                 (reminder dropped)
 * OLD is an outdated writer that predates the protocol: it heartbeats with
 * cron_protocol NULL, fires without the "retired_at IS NULL" guard, upserts its
 * own definition (3) without owner/retired guards, and deletes rows
 * (remove + re-create). Each transaction is one atomic step (they all take the
 * protocol lock or a row lock, so they serialise on the rows they touch).
 *
 * Safety:
 *   - retirement is durable: a tombstone disappears only by an operator restore;
 *   - a retired name never fires (automatic, outdated, or manual);
 *   - definitions never flip between mixed manifests: a definition changes only
 *     in a step where every live declaration agrees on one manifest, no
 *     unsupported runtime is fresh, and the new value is that manifest's.
 * Liveness (-DCONVERGE, weak fairness): with OLD gone and A, B both on M2,
 * REMINDER is eventually retired and INVOICE eventually has definition 2.
 *
 * A third row, RUNTIME, is a runtime schedule (owner awa:runtime): an operator
 * creates, edits (manager context awa:runtime) and deletes it (release, then
 * DELETE, one transaction); code declares the same name (the additive sync,
 * upsert.SYNC_ADDITIVE, and the outdated writer's upsert). Safety: only the
 * operator changes its definition, and nothing retires it.
 *
 * Broken variants (refuted by make verify):
 *   -DNO_FENCE  awa_cron_jobs without the BEFORE UPDATE OR DELETE fence
 *   -DNO_GATE   publication syncs its own manifest without the agreement gate
 *   -DSYNC_OVERWRITES_RUNTIME  the additive sync without "owner_id IS NULL"
 *   -DRECONCILE_RUNTIME  the leader reconciles awa:runtime like a deployment
 *                        owner whose (empty) manifest is authoritative
 * With -DNO_FENCE, -DOLD_ONLY_FIRES / -DOLD_ONLY_DELETES restrict the outdated
 * writer to firing / deleting, so SPIN shows each property the fence carries:
 * a retired name fires; a tombstone is deleted and re-created.
 */

#define INVOICE  0
#define REMINDER 1
#define NONE     0      /* no live declaration / no hash */
#define M1       1
#define M2       2
#define OLD_DEF  3      /* the outdated writer's idea of the definition */

#ifdef CONVERGE
#define MAX_OPS 0
#else
#define MAX_OPS 2       /* operator retire/restore actions */
#endif

byte decl[2];           /* awa_cron_declarations.desired_hash of A, B (fresh); NONE = stale */
bool old_live = false;  /* a fresh awa_runtime_instances row with cron_protocol NULL */
byte def[2];            /* awa_cron_jobs.cron_expr etc. of INVOICE, REMINDER */
bool retired[2];        /* awa_cron_jobs.retired_at IS NOT NULL */
bool owned[2];          /* awa_cron_jobs.owner_id = 'billing' */
bool present[2];        /* the row exists */
byte synced = NONE;     /* awa_cron_owners.synced_hash */
byte agreed = NONE;     /* awa_cron_owners.agreed_hash (agreed_since set) */
bool graced = false;    /* grace elapsed for agreed (agreed_since + grace <= now) */
bool tomb[2];           /* ghost: retired and not restored by an operator since */
byte ops = 0;
bool definition_change_agreed = false;   /* ghost, for the assertion's message */
byte cur = NONE;        /* scratch: the manifest a step works on */

/* RUNTIME: a runtime schedule, owner awa:runtime. */
bool rt_present = true; /* the row exists */
byte rt_def = 1;        /* its definition */
bool rt_retired = false;
byte rt_set = 1;        /* ghost: the definition the operator last gave it */

/* Blockers of evaluate_locked (order as in the code). */
#define LIVE_HASH       (decl[0] != NONE -> decl[0] : decl[1])
#define ZERO_LIVE       (decl[0] == NONE && decl[1] == NONE)
#define MIXED           (decl[0] != NONE && decl[1] != NONE && decl[0] != decl[1])
#define WANTS(m, n)     ((m) == M1 || (n) == INVOICE)
#define CONFLICT(m)     ((WANTS(m, INVOICE)  && present[INVOICE]  && (!owned[INVOICE]  || retired[INVOICE])) || \
                         (WANTS(m, REMINDER) && present[REMINDER] && (!owned[REMINDER] || retired[REMINDER])))
#define NO_BLOCKERS     (!old_live && !ZERO_LIVE && !MIXED && !CONFLICT(LIVE_HASH))
#define MDEF(m)         ((m) == M1 -> 1 : 2)

/* Every definition write goes through SET_DEF, which asserts the property. */
#define SET_DEF(n, v) \
    definition_change_agreed = (NO_BLOCKERS && (v) == MDEF(LIVE_HASH)); \
    assert(definition_change_agreed); \
    definition_change_agreed = false; \
    def[n] = v

#ifdef NO_GATE
#define GATE(m)  true
#else
#define GATE(m)  (NO_BLOCKERS)
#endif

/* sync_definitions under the manager context: owned active rows only; the
   fence lets the manager context change owned definitions. */
inline sync_definitions(m)
{
    if
    :: present[INVOICE] && owned[INVOICE] && !retired[INVOICE] && def[INVOICE] != MDEF(m) ->
           SET_DEF(INVOICE, MDEF(m))
    :: else -> skip
    fi;
    if
    :: WANTS(m, REMINDER) && present[REMINDER] && owned[REMINDER] && !retired[REMINDER] &&
       def[REMINDER] != MDEF(m) -> SET_DEF(REMINDER, MDEF(m))
    :: else -> skip
    fi;
    synced = m
}

/* evaluate_locked(persist=True): agreement clock and definitions. */
inline evaluate_persist(m)
{
    if
    :: GATE(m) ->
           if :: synced != m -> sync_definitions(m) :: else -> skip fi;
           if :: agreed != LIVE_HASH -> agreed = LIVE_HASH; graced = false :: else -> skip fi
    :: else -> agreed = NONE; graced = false
    fi
}

/* The fire of a row by a current writer (awa_cron_fire_v3: retired guard). */
#define FIRE_CURRENT(n)  atomic { present[n] && !retired[n] -> assert(!retired[n]) }

proctype Current(byte i)
{
    do
    /* RuntimeReporter.write: protocol lock, snapshot, publish(manifest). */
#ifndef CONVERGE
    :: atomic { decl[i] = M1; cur = M1; evaluate_persist(cur); cur = NONE }
#endif
    :: atomic { decl[i] = M2; cur = M2; evaluate_persist(cur); cur = NONE }
#ifndef CONVERGE
    /* Its snapshot goes stale (process stopped): the evidence window is missed. */
    :: atomic { decl[i] != NONE -> decl[i] = NONE; agreed = NONE; graced = false }
#endif
#ifndef CONVERGE
    :: FIRE_CURRENT(INVOICE)
    :: FIRE_CURRENT(REMINDER)
    /* Its code also declares RUNTIME's name: the additive sync
       (upsert.SYNC_ADDITIVE) writes unowned rows only. */
    :: atomic {
           rt_present ->
#ifdef SYNC_OVERWRITES_RUNTIME
           rt_def = OLD_DEF
#else
           skip     /* owned: reported as a conflict (check E043), not written */
#endif
       }
#endif
    od
}

/* The leader's reconcile(owner): recheck under the protocol lock, retire. */
proctype Reconciler()
{
    do
    /* evaluate_locked(persist=True, apply=True), always gated. An agreement
       already recorded by an earlier step on the same manifest has had time
       to pass its grace (the abstraction of agreed_since + grace <= now). */
    :: atomic {
           if
           :: NO_BLOCKERS ->
                  cur = LIVE_HASH;
                  if :: synced != cur -> sync_definitions(cur) :: else -> skip fi;
                  if
                  :: agreed == cur -> graced = true
                  :: else -> agreed = cur; graced = false
                  fi;
                  if
                  :: graced && !WANTS(cur, REMINDER) && present[REMINDER] && owned[REMINDER] &&
                     !retired[REMINDER] -> retired[REMINDER] = true; tomb[REMINDER] = true
                  :: else -> skip
                  fi;
                  cur = NONE
           :: else -> agreed = NONE; graced = false
           fi
       }
#ifdef RECONCILE_RUNTIME
    /* awa:runtime has no declaration; read as an authoritative empty
       manifest, every runtime schedule would be "absent". */
    :: atomic { rt_present && !rt_retired -> rt_retired = true }
#endif
    od
}

#ifndef CONVERGE
/* The outdated writer. */
proctype Outdated()
{
    byte n;
    do
    /* Its heartbeat: the statement trigger takes the protocol lock and
       awa_cron_unknown_runtime_v1 resets every owner's agreement clock. */
    :: atomic { old_live = true; agreed = NONE; graced = false }
    :: atomic { old_live -> old_live = false }
    :: atomic {
           if :: n = INVOICE :: n = REMINDER fi;
           if
#ifndef OLD_ONLY_DELETES
           /* Old fire: UPDATE ... WHERE last_enqueued_at IS NOT DISTINCT FROM prev
              (no retired guard) + INSERT from RETURNING. */
           :: present[n] ->
#ifdef NO_FENCE
                  assert(!retired[n])               /* a job is inserted */
#else
                  /* The fence returns NULL for a retired row: RETURNING is
                     empty, no job. Active rows fire normally. */
                  if :: !retired[n] -> assert(!retired[n]) :: else -> skip fi
#endif
#endif
#if !defined(OLD_ONLY_FIRES) && !defined(OLD_ONLY_DELETES)
           /* Old additive upsert of its own definition (no owner/retired guard). */
           :: present[n] ->
#ifdef NO_FENCE
                  SET_DEF(n, OLD_DEF)
#else
                  skip      /* owned or retired: the fence suppresses the update */
#endif
#endif
#ifndef OLD_ONLY_FIRES
           /* Old "remove": DELETE FROM awa_cron_jobs WHERE name = n. */
           :: present[n] ->
#ifdef NO_FENCE
                  present[n] = false; retired[n] = false; owned[n] = false
#else
                  skip      /* owned or retired: the fence raises 55000 */
#endif
#endif
#if !defined(OLD_ONLY_FIRES) && !defined(OLD_ONLY_DELETES)
           /* Old upsert re-creating a deleted row: new, unowned, not retired. */
           :: !present[n] -> present[n] = true; SET_DEF(n, OLD_DEF)
#endif
           fi;
           n = 0
       }
#if !defined(OLD_ONLY_FIRES) && !defined(OLD_ONLY_DELETES)
    /* Its upsert of RUNTIME's name (no owner guard), and its DELETE. */
    :: atomic {
           rt_present ->
#ifdef NO_FENCE
           rt_def = OLD_DEF
#else
           skip     /* owned: the fence suppresses the update, raises on DELETE */
#endif
       }
#endif
    od
}
#endif

/* ownership.operate(apply=True): protocol lock, owner row, rows by name;
   invalidates the owner's agreement and synced_hash. Manual trigger. */
proctype Operator()
{
    byte n;
    do
    :: atomic {
           ops < MAX_OPS -> ops++;
           if :: n = INVOICE :: n = REMINDER fi;
           if
           :: present[n] && !retired[n] -> retired[n] = true; tomb[n] = true
           :: present[n] && retired[n] -> retired[n] = false; tomb[n] = false
           :: else -> skip
           fi;
           synced = NONE; agreed = NONE; graced = false; n = 0
       }
    /* awa_cron_trigger_v1: FOR SHARE, refuses retired rows. */
    :: atomic { present[INVOICE] && !retired[INVOICE] -> assert(!retired[INVOICE]) }
    :: atomic { ops >= MAX_OPS -> break }
    od
}

#ifndef CONVERGE
/* Runtime schedules (actions.runtime_schedules): protocol lock, the row FOR
   UPDATE, one write. Edit: manager context awa:runtime. Delete: operator
   context releases the owner, then DELETE. Create: INSERT owned. */
proctype RuntimeOperator()
{
    do
    :: atomic { rt_present && !rt_retired -> rt_def = 3 - rt_def; rt_set = rt_def }
    :: atomic { rt_present -> rt_present = false; rt_retired = false }
    :: atomic { !rt_present -> rt_present = true; rt_def = 1; rt_set = 1 }
    od
}

/* Only the operator changes a runtime schedule, and nothing retires it. */
bool runtime_is_the_operators = false;  /* ghost: the monitor only runs when it fails */

active proctype RuntimeIntact()
{
end:
    atomic { rt_present && (rt_def != rt_set || rt_retired) -> assert(runtime_is_the_operators) }
}
#endif

/* Retirement is durable: a tombstone stays until an operator restores it. */
bool retirement_is_durable = false;   /* ghost: the monitor only runs when it fails */

active proctype Durability()
{
end:
    atomic { (tomb[INVOICE] && !retired[INVOICE]) || (tomb[REMINDER] && !retired[REMINDER])
             -> assert(retirement_is_durable) }
}

init
{
    atomic {
        def[INVOICE] = 1; def[REMINDER] = 1;
        owned[INVOICE] = true; owned[REMINDER] = true;
        present[INVOICE] = true; present[REMINDER] = true;
        synced = M1;
        run Current(0);
        run Current(1);
        run Reconciler();
#ifndef CONVERGE
        run Outdated();
        run Operator();
        run RuntimeOperator()
#endif
    }
}

#ifdef CONVERGE
/* A and B both move to M2 (a completed deploy); nothing else interferes. */
ltl reminder_retired { <> retired[REMINDER] }
ltl invoice_redefined { <> (def[INVOICE] == 2) }
#endif
