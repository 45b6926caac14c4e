import type { Db } from "./index.ts";

/**
 * What the message log records besides the columns, each with its time. "error": a run
 * of the job threw (a sealed secret it cannot open, say) and it will be tried again.
 * "sent": a phone said it sent the message (a Cast message's acceptance is its `sent_at`).
 */
export type EventKind = "retry" | "held" | "failed" | "report_retry" | "report_failed" | "restart" | "requeued" | "error" | "sent";

export interface MessageEvent {
  at: number;
  kind: EventKind;
  detail: string;
}

/** The head of every insert into the timeline; a bulk one goes on with its own SELECT. */
export const INSERT_EVENT = "INSERT INTO job_events (job_id, at, kind, detail)";

export type Timeline = ReturnType<typeof createTimeline>;

/** A job's timeline (job_events): what happened to it besides its columns, in order. */
export function createTimeline(db: Db) {
  const add = db.prepare<[number, number, EventKind, string]>(`${INSERT_EVENT} VALUES (?, ?, ?, ?)`);
  const last = db.prepare<[number, EventKind], string>("SELECT detail FROM job_events WHERE job_id = ? AND kind = ? ORDER BY id DESC LIMIT 1").pluck();
  const all = db.prepare<[number], MessageEvent>("SELECT at, kind, detail FROM job_events WHERE job_id = ? ORDER BY id");
  return {
    add(jobId: number, at: number, kind: EventKind, detail: string): void {
      add.run(jobId, at, kind, detail);
    },
    /** The detail of the job's latest event of this kind; undefined if none. */
    last(jobId: number, kind: EventKind): string | undefined {
      return last.get(jobId, kind);
    },
    of(jobId: number): MessageEvent[] {
      return all.all(jobId);
    },
  };
}
