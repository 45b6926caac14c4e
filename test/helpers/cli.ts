import { run } from "../../src/cli/index.ts";
import { commandEnv } from "./test-store.ts";

/** `bridge ARGS…` run in this process against a test bridge's environment (its database: commandEnv); what it printed and its exit code. */
export async function runCli(b: { env: Record<string, string> }, ...args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await run(args, { out: (t) => (stdout += t), err: (t) => (stderr += t), env: commandEnv(b.env) });
  return { code, stdout, stderr };
}
