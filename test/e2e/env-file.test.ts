import { execFile, execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, test } from "vitest";
import { ENV_FILE_MAX_BYTES } from "../../src/cli/env-file.ts";
import { assertBuilt, BINARY } from "../helpers/binary.ts";

// ./.env is read by every command before anything else: what is not an env file must be
// refused at once, with what to do, never waited on.
let dir = "";
beforeEach(() => {
  assertBuilt();
  dir = mkdtempSync(join(tmpdir(), "bridge-envfile-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** `dist/bridge install-url` in `dir`; killed after 20 s, so a command that hangs fails the test instead of holding it. */
function installUrl() {
  return new Promise<{ code: number | string; stdout: string; stderr: string }>((done) => {
    execFile(BINARY, ["install-url"], { env: {}, cwd: dir, timeout: 20_000, killSignal: "SIGKILL" }, (error, stdout, stderr) => {
      done({ code: error ? (typeof error.code === "number" ? error.code : `signal ${error.signal}`) : 0, stdout, stderr });
    });
  });
}

const settings = "BASE_URL=https://bridge.example.com\nCRM_CLIENT_ID=0123456789abcdef01234567-x\n";

test("a named pipe as ./.env: the command exits 1 at once, saying what it is", async () => {
  execFileSync("mkfifo", ["-m", "0600", join(dir, ".env")]);
  expect(await installUrl()).toEqual({
    code: 1,
    stdout: "",
    stderr: "bridge: refusing ./.env: it is a named pipe, not a regular file. Remove it, or set the variables in the environment, or name a file with --env-file\n",
  });
});

test("./.env larger than 1 MiB is refused; a symlink to a file of ours is read", async () => {
  writeFileSync(join(dir, "big.env"), `${settings}#${"x".repeat(ENV_FILE_MAX_BYTES)}\n`, { mode: 0o600 });
  symlinkSync("big.env", join(dir, ".env"));
  expect(await installUrl()).toEqual({
    code: 1,
    stdout: "",
    stderr: `bridge: refusing ./.env: it is larger than ${ENV_FILE_MAX_BYTES} bytes, too large for an env file\n`,
  });

  writeFileSync(join(dir, "big.env"), settings, { mode: 0o600 });
  expect(await installUrl()).toMatchObject({ code: 0, stdout: expect.stringContaining("0123456789abcdef01234567") });
});

test("a ./.env that others may read and that holds a secret is read, with a warning that says chmod 600", async () => {
  writeFileSync(join(dir, ".env"), `${settings}CRM_CLIENT_SECRET=do-not-share\n`, { mode: 0o644 });
  chmodSync(join(dir, ".env"), 0o644); // whatever the umask
  const { code, stdout, stderr } = await installUrl();
  expect({ code, stdout }).toMatchObject({ code: 0, stdout: expect.stringContaining("0123456789abcdef01234567") });
  expect(stderr).toBe("bridge: warning: ./.env holds CRM_CLIENT_SECRET and other users may read it (mode 0644): run chmod 600 ./.env\n");
  expect(stderr).not.toContain("do-not-share");

  chmodSync(join(dir, ".env"), 0o600);
  expect((await installUrl()).stderr).toBe("");
});
