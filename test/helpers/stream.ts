import { Writable } from "node:stream";

/** A stream that keeps every chunk written to it, as a string, in `lines`. */
export function captureStream(lines: string[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
}
