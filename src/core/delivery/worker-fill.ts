import { wallClock } from "../clock.ts";
import type { DueJob, Job } from "../../store/types.ts";
import { clip, errorMessage } from "../../errors.ts";
import { RETRY } from "../retry.ts";
import type { WorkerOptions } from "./worker-options.ts";
import { createPauses, type Pauses } from "./worker-pauses.ts";
import { createSendOrder, type Turn } from "./send-order.ts";

/**
 * The worker's look at the queue (worker.ts): starts due jobs, up to `concurrency` at
 * once, in turns between locations, past the jobs pausing. `settled`: a job finished.
 *
 * `ended`: the jobs that ended while the look was out, having stored when they are due
 * next. The list it read before may still say they are due (on PostgreSQL a look is round
 * trips): started again from it, a report put off for a minute would run at once, and be
 * told to wait out that minute in the worker. The next look reads them as they are. One
 * that ended told to wait stored nothing: its pause holds it.
 */
export function createFiller(options: WorkerOptions, settled: () => void) {
  const { jobs, now } = options;
  const concurrency = options.concurrency ?? 16;
  const pauses = createPauses(options.backoffMs ?? RETRY.job.firstMs);
  const order = createSendOrder();
  const [active, ended] = [new Map<number, Promise<void>>(), new Set<number>()];
  // The earliest time a job skipped in the last look may run (the next look then); when the queue was last looked at.
  let nextLook = Infinity;
  let lastFill = 0;

  // Active from the look that took it: a look meanwhile does not take it again.
  function startJob(due: DueJob): void {
    const turn = due.state === "queued" ? order.enter(due.locationId, due.id) : undefined;
    const done = run(options, pauses, due, turn).finally(() => {
      turn?.pass();
      active.delete(due.id);
      if (pauses.notBefore(due.id) === 0) ended.add(due.id);
      settled();
    });
    active.set(due.id, done);
  }

  async function fill(): Promise<void> {
    const free = concurrency - active.size;
    if (free <= 0) return;
    // Look past the jobs pausing, so they cannot hold up the rest; but only so far: a
    // look must stay cheap while many fail at once (a disk that refuses every write).
    const extra = Math.min(pauses.count(), concurrency * 2);
    const at = wallClock();
    nextLook = Infinity;
    // A location whose sends wait for the gateway's budget: only its reports are read now.
    const waiting = (locationId: string) => {
      const ready = options.readyAt?.(locationId) ?? 0;
      if (ready > at) nextLook = Math.min(nextLook, ready);
      return ready > at;
    };
    lastFill = at;
    const spread = options.spread?.() ?? 1;
    ended.clear();
    const due = await jobs.due(now(), (free + active.size + extra) * spread, options.readyAt && waiting);
    for (const job of inTurn(spread > 1 ? fromRandomTurn(due) : due, options.lastServed)) {
      if (active.size >= concurrency) break;
      if (active.has(job.id) || ended.has(job.id) || (job.state === "queued" && options.claims?.() === false)) continue;
      const notBefore = Math.max(pauses.notBefore(job.id), job.state === "queued" ? (options.readyAt?.(job.locationId) ?? 0) : 0);
      if (notBefore > at) {
        nextLook = Math.min(nextLook, notBefore);
        continue;
      }
      startJob(job);
    }
  }

  return {
    fill,
    /** The jobs running now, by id. */
    active,
    nextLook: () => nextLook,
    lastFill: () => lastFill,
  };
}

/** Runs the due job, read whole first; its pause set by how it ended. */
async function run(options: WorkerOptions, pauses: Pauses, due: DueJob, turn?: Turn): Promise<void> {
  let job: Job | undefined;
  try {
    job = await options.jobs.byId(due.id);
  } catch (error) {
    return options.log.error(`queue: cannot read job ${due.id}: ${errorMessage(error)}`);
  }
  if (!job) return; // finished and pruned meanwhile
  const { id } = job;
  await options.run(job, turn).then(
    (waitMs) => pauses.ran(id, waitMs),
    (error) => noteFailure(options, job, error, pauses.failed(id)),
  );
}

async function noteFailure({ jobs, log, now }: WorkerOptions, job: Job, error: unknown, delay: number): Promise<void> {
  log.error(`job for message ${job.message.messageId} failed: ${errorMessage(error)}; trying again in ${delay} ms`);
  // The operator's view shows why the message waits (`bridge messages show`). When the
  // database itself refuses the write, the line above is all there is.
  try {
    await jobs.noteError(job.id, clip(errorMessage(error)), now());
  } catch {}
}

/**
 * Each location's due jobs from a random one on, in order from there round to its first:
 * their turns renumbered so. Servers sharing the queue then mostly start different jobs.
 */
function fromRandomTurn(due: DueJob[]): DueJob[] {
  const byLocation = new Map<string, DueJob[]>();
  for (const job of due) (byLocation.get(job.locationId) ?? byLocation.set(job.locationId, []).get(job.locationId)!).push(job);
  return [...byLocation.values()].flatMap((mine) => {
    const first = Math.floor(Math.random() * mine.length);
    return mine.map((job, i) => ({ ...job, turn: ((i - first + mine.length) % mine.length) + 1 }));
  }).sort((a, b) => a.turn - b.turn);
}

/**
 * The due jobs come in turns (each location's first, then each one's second, …);
 * within a turn, the location served longest ago goes first.
 */
function inTurn(due: DueJob[], lastServed: WorkerOptions["lastServed"]): DueJob[] {
  if (!lastServed) return due;
  return due.toSorted((a, b) => a.turn - b.turn || lastServed(a.locationId) - lastServed(b.locationId));
}
