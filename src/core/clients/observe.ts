import { callFailure, type FailureKind } from "./network.ts";

/** HighLevel, Cast.ph, or one phone running SMS Gateway for Android (`phone:<device id>`). */
export type Remote = "crm" | "cast" | `phone:${string}`;

/** One HTTP call with a remote, as the clients report it to their observer. */
export interface CallRecord {
  remote: Remote;
  /** The client function that made the call: `send`, `balance`, `updateMessageStatus`, … */
  operation: string;
  ms: number;
  /** An answer that is not a 5xx: the remote is there (a 4xx or a 429 is its own word). */
  ok: boolean;
  /** The answer's HTTP status; absent when none came. */
  status?: number;
  /** Why the call was not ok. */
  error?: FailureKind;
  /** What went wrong, for a log line: `connection refused by api.cast.ph:443 (ECONNREFUSED)`. */
  message?: string;
}

export type CallObserver = (call: CallRecord) => void;

export interface ObservedCall {
  remote: Remote;
  operation: string;
  /** host:port, for the message of a call that got no answer. */
  host: string;
  timeoutMs: number;
  observe: CallObserver | undefined;
}

/** Runs one HTTP call and tells the observer how long it took and how it ended. */
export async function observed<T extends { status: number }>(call: ObservedCall, run: () => Promise<T>): Promise<T> {
  const { observe, remote, operation } = call;
  if (!observe) return run();
  const start = performance.now();
  try {
    const res = await run();
    const ok = res.status < 500;
    const record: CallRecord = { remote, operation, ms: performance.now() - start, ok, status: res.status };
    if (!ok) Object.assign(record, { error: "http", message: `${operation} answered ${res.status}` });
    report(observe, record);
    return res;
  } catch (error) {
    const failed = callFailure(error, call.host, call.timeoutMs);
    report(observe, { remote, operation, ms: performance.now() - start, ok: false, error: failed.kind, message: failed.message });
    throw error;
  }
}

/** An observer's own failure must never cost the call it watched (a send's result, say). */
function report(observe: CallObserver, record: CallRecord): void {
  try {
    observe(record);
  } catch {
    // Nothing to do: the record is lost, the call's result is not.
  }
}
