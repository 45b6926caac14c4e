import { readSync, writeSync } from "node:fs";

/** More than any key bridge takes: input with no line end stops here, not at the end of memory. */
const MAX_LINE = 4096;

/**
 * One line of standard input without its line ending (\n, \r\n, or none before the end).
 * From a terminal it is typed after `prompt` (on stderr) and not echoed, so the secret is
 * neither in the process list nor on the screen.
 */
export function readStdinLine(prompt: string): Promise<string> {
  if (process.getBuiltinModule("node:tty").isatty(0)) return readHidden(prompt);
  return Promise.resolve(readLineSync(0));
}

function readLineSync(fd: number): string {
  const buffer = Buffer.alloc(MAX_LINE + 1);
  let length = 0;
  for (;;) {
    let read: number;
    try {
      read = readSync(fd, buffer, length, buffer.length - length, null);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EOF") break;
      if (code !== "EAGAIN") throw error;
      // A pipe someone else made non-blocking, with nothing in it yet: wait a moment.
      Atomics.wait(PAUSE, 0, 0, 5);
      continue;
    }
    if (read === 0) break;
    const newline = buffer.subarray(length, length + read).indexOf(10);
    length += read;
    if (newline >= 0) break;
    if (length > MAX_LINE) throw new Error(`standard input holds no line end within ${MAX_LINE} bytes`);
  }
  const line = buffer.subarray(0, length).toString("utf8").split("\n", 1)[0] ?? "";
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}

/** Raw mode: no echo, and each key arrives as typed (Ctrl-C too, so the terminal is always restored). */
function readHidden(prompt: string): Promise<string> {
  const input = process.stdin;
  writeSync(2, prompt);
  input.setRawMode(true);
  return new Promise((resolve, reject) => {
    let line = "";
    const finish = (error?: Error) => {
      input.off("data", onData);
      input.setRawMode(false);
      input.pause();
      writeSync(2, "\n");
      if (error) reject(error);
      else resolve(line);
    };
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString("utf8")) {
        if (char === "\r" || char === "\n" || char === "\x04") return finish(); // Enter, or Ctrl-D
        if (char === "\x03") return finish(new Error("cancelled")); // Ctrl-C
        if (char === "\x7f" || char === "\b") line = line.slice(0, -1);
        else line += char;
      }
    };
    input.on("data", onData);
  });
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));
