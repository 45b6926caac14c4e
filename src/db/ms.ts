/**
 * A time or a duration as the store keeps it: whole milliseconds. Every time a store
 * function writes goes through here, so arithmetic upstream (a quarter of an elapsed
 * time, a back-off, a Retry-After) cannot put a fraction into a STRICT INTEGER column,
 * where SQLite refuses it and the job's write throws. Rounded up: a look scheduled for
 * "after t" never comes before t. NaN or an infinity is a bug upstream: it throws here,
 * naming the value, instead of reaching the table.
 */
export function ms(value: number): number {
  if (!Number.isFinite(value)) throw new RangeError(`not a time in milliseconds: ${value}`);
  return Math.ceil(value);
}
