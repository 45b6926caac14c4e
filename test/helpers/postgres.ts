import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

/**
 * A throwaway PostgreSQL for the tests: Debian's (the newest version under
 * /usr/lib/postgresql, or the bin directory PG_BIN names), initdb into a temporary
 * directory, listening on 127.0.0.1 and a free port only, a database and a user for the
 * tests; stopped and removed by stop() or at exit. As root it runs as user postgres
 * (PostgreSQL refuses root). Where initdb is missing, postgresMissing() says why, and the
 * tests skip saying so, except in CI (CI=true), where they fail.
 */
export interface Postgres {
  /** postgres://bridge@127.0.0.1:PORT/bridge */
  url: string;
  /** How long starting took, in milliseconds. */
  startMs: number;
  stop(): void;
}

const BIN = process.env.PG_BIN ?? debianBin();

/** Debian's PostgreSQL programs, of the newest version installed. */
function debianBin(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  return join(root, versions[0] ?? "15", "bin");
}

/** Why PostgreSQL cannot start here; undefined when it can. */
export function postgresMissing(): string | undefined {
  if (!existsSync(join(BIN, "initdb"))) return `no PostgreSQL here (${BIN}/initdb missing; apt-get install postgresql)`;
  if (process.getuid?.() === 0) {
    try {
      execFileSync("id", ["postgres"], { stdio: "ignore" });
    } catch {
      return "running as root and there is no user postgres to run PostgreSQL as";
    }
  }
  return undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Runs a PostgreSQL program as the user that may run it. */
function run(program: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const [cmd, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", join(BIN, program), ...args]] : [join(BIN, program), args];
  execFileSync(cmd, argv, { stdio: ["ignore", "ignore", "pipe"], cwd: "/" });
}

export async function startPostgres(): Promise<Postgres> {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), "bridge-pg-"));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  const port = await freePort();
  let running = false;
  const stop = () => {
    if (running) {
      running = false;
      try {
        run("pg_ctl", ["stop", "-D", data, "-m", "immediate", "-s"]);
      } catch {
        // already gone: the directory goes anyway
      }
    }
    rmSync(dir, { recursive: true, force: true });
    process.off("exit", stop);
  };
  process.on("exit", stop);
  try {
    run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
    const options = `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories=${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
    run("pg_ctl", ["start", "-D", data, "-w", "-s", "-l", join(dir, "log"), "-o", options]);
    running = true;
    const admin = new pg.Client({ host: "127.0.0.1", port, user: "postgres", database: "postgres" });
    await admin.connect();
    await admin.query("CREATE ROLE bridge LOGIN PASSWORD 'bridge'");
    await admin.query("CREATE DATABASE bridge OWNER bridge");
    await admin.end();
  } catch (error) {
    stop();
    throw error;
  }
  return { url: `postgres://bridge:bridge@127.0.0.1:${port}/bridge`, startMs: Date.now() - started, stop };
}
