/*
 * lock_order.pml -- no deadlock between migrations, snapshot publication,
 * operator actions, pause, manual trigger and fires.
 *
 * Each process is one transaction of awa_django, taking PostgreSQL locks in
 * the order its SQL takes them (README.md gives the statement of every step),
 * then committing, which releases everything. A deadlock is a state where
 * some transactions wait forever: SPIN reports it as an invalid end state.
 *
 * Lock kinds:
 *   protocol  pg_advisory_xact_lock(awa_cron_protocol_lock key), exclusive
 *   owner     the awa_cron_owners row of "billing", FOR UPDATE
 *   RUNTIME/CRON/JOBS table locks on awa_runtime_instances / awa_cron_jobs /
 *             awa_jobs: a weak mode (AccessShare, RowShare, RowExclusive --
 *             mutually compatible) or ACCESS EXCLUSIVE
 *   row[A|B]  awa_cron_jobs rows "a" < "b": FOR UPDATE (exclusive) or FOR SHARE
 *
 * Broken variants (refuted by make verify):
 *   -DMIGRATION_WRONG_ORDER  a migration locking awa_jobs before awa_cron_jobs
 *   -DMIGRATION_NO_PROTOCOL  a migration altering awa_cron_jobs and then
 *                            awa_runtime_instances without the protocol lock
 *                            (0018_execution_policies before in_lock_order)
 *   -DFIRE_UNORDERED         the second leader locks rows b, a (awa_cron_fire_v1:
 *                            row order left to the planner)
 *   -DOPERATOR_ROWS_FIRST    an operator action locking rows before the protocol lock
 */

#define FREE 0
#define A 0
#define B 1
#define BIT(p) (1 << (p))

byte protocol = FREE;           /* advisory xact lock holder (pid) */
byte owner = FREE;              /* owner row holder */
byte runtime_ae = FREE, cron_ae = FREE, jobs_ae = FREE;  /* ACCESS EXCLUSIVE holder */
int  runtime_weak = 0, cron_weak = 0, jobs_weak = 0;      /* weak-mode holders, one bit per pid */
byte rowx[2];                   /* FOR UPDATE holder of row a, b */
int  rows[2];                    /* FOR SHARE holders of row a, b (bits) */

inline lock_protocol()  { atomic { protocol == FREE -> protocol = _pid } }
inline lock_owner()     { atomic { owner == FREE -> owner = _pid } }
inline weak_runtime()   { atomic { runtime_ae == FREE || runtime_ae == _pid -> runtime_weak = runtime_weak | BIT(_pid) } }
inline exclusive_runtime() { atomic { (runtime_ae == FREE || runtime_ae == _pid) && (runtime_weak & ~BIT(_pid)) == 0 -> runtime_ae = _pid } }
inline weak_cron()      { atomic { cron_ae == FREE || cron_ae == _pid -> cron_weak = cron_weak | BIT(_pid) } }
inline weak_jobs()      { atomic { jobs_ae == FREE || jobs_ae == _pid -> jobs_weak = jobs_weak | BIT(_pid) } }
inline exclusive_cron() { atomic { (cron_ae == FREE || cron_ae == _pid) && (cron_weak & ~BIT(_pid)) == 0 -> cron_ae = _pid } }
inline exclusive_jobs() { atomic { (jobs_ae == FREE || jobs_ae == _pid) && (jobs_weak & ~BIT(_pid)) == 0 -> jobs_ae = _pid } }
inline row_update(k)    { atomic { (rowx[k] == FREE || rowx[k] == _pid) && (rows[k] & ~BIT(_pid)) == 0 -> rowx[k] = _pid } }
inline row_share(k)     { atomic { rowx[k] == FREE || rowx[k] == _pid -> rows[k] = rows[k] | BIT(_pid) } }

/* COMMIT (or ROLLBACK): every lock of the transaction is released at once. */
inline commit()
{
    atomic {
        if :: protocol == _pid -> protocol = FREE :: else -> skip fi;
        if :: owner == _pid -> owner = FREE :: else -> skip fi;
        if :: runtime_ae == _pid -> runtime_ae = FREE :: else -> skip fi;
        if :: cron_ae == _pid -> cron_ae = FREE :: else -> skip fi;
        if :: jobs_ae == _pid -> jobs_ae = FREE :: else -> skip fi;
        runtime_weak = runtime_weak & ~BIT(_pid);
        cron_weak = cron_weak & ~BIT(_pid);
        jobs_weak = jobs_weak & ~BIT(_pid);
        if :: rowx[A] == _pid -> rowx[A] = FREE :: else -> skip fi;
        if :: rowx[B] == _pid -> rowx[B] = FREE :: else -> skip fi;
        rows[A] = rows[A] & ~BIT(_pid);
        rows[B] = rows[B] & ~BIT(_pid)
    }
}

/* awa_cron_fire_v2 (two leaders overlap after a failover; v3 skips a held
   row instead of waiting, see README.md): the CTE's
   relations are locked as the statement is parsed (awa_cron_jobs first, from
   the WITH clause, then the INSERT target awa_jobs), then "locked" takes the
   rows FOR UPDATE in name order, then the INSERT writes awa_jobs. */
proctype Fire(bool reversed)
{
    weak_cron();
    weak_jobs();
    if
    :: !reversed -> row_update(A); row_update(B)
    :: reversed -> row_update(B); row_update(A)
    fi;
    commit()
}

/* A migration altering several tables (in_lock_order, as 0018_execution_policies:
   the protocol lock, then LOCK TABLE awa_runtime_instances, awa_cron_jobs,
   awa_jobs IN ACCESS EXCLUSIVE MODE, then DDL), and one touching only awa_jobs
   (0007_release_and_prune_index). */
proctype MigrationBoth()
{
#if defined(MIGRATION_WRONG_ORDER)
    lock_protocol();
    exclusive_runtime();
    exclusive_jobs();
    exclusive_cron();
#elif defined(MIGRATION_NO_PROTOCOL)
    exclusive_cron();
    exclusive_runtime();
    exclusive_jobs();
#else
    lock_protocol();
    exclusive_runtime();
    exclusive_cron();
    exclusive_jobs();
#endif
    commit()
}

proctype MigrationJobsOnly()
{
    exclusive_jobs();
    commit()
}

/* RuntimeReporter.write -> publish -> evaluate_locked -> sync_definitions:
   protocol lock, the runtime snapshot upsert, INSERT of new names, the owner
   row FOR UPDATE, the upsert of owned rows in name order. */
proctype Publication()
{
    lock_protocol();
    weak_runtime();
    weak_cron();
    lock_owner();
    row_update(A);
    row_update(B);
    commit()
}

/* ownership.operate(apply=True), e.g. retire_owner; reconcile() is the same
   shape: protocol lock, owner rows, (reconcile) the fleet's runtime rows,
   schedule rows ORDER BY name FOR UPDATE. */
proctype OperatorAction()
{
#ifdef OPERATOR_ROWS_FIRST
    weak_cron();
    row_update(A);
    row_update(B);
    lock_protocol();
    lock_owner();
#else
    lock_protocol();
    lock_owner();
    weak_runtime();
    weak_cron();
    row_update(A);
    row_update(B);
#endif
    commit()
}

/* operations.pause/resume/remove: SELECT ... FOR UPDATE of one row, UPDATE. */
proctype Pause()
{
    weak_cron();
    row_update(B);
    commit()
}

/* awa_cron_trigger_v1: FOR SHARE of the row, INSERT INTO awa_jobs (the
   relations are locked at parse time, awa_cron_jobs first). */
proctype Trigger()
{
    weak_cron();
    weak_jobs();
    row_share(A);
    commit()
}

init
{
    atomic {
        run Fire(false);
#ifdef FIRE_UNORDERED
        run Fire(true);
#else
        run Fire(false);
#endif
        run MigrationBoth();
        run MigrationJobsOnly();
        run Publication();
        run OperatorAction();
        run Pause();
        run Trigger()
    }
}
