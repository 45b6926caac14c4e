import { run } from "./index.ts";

// The single process.exit of bridge: every command returns its exit code to here.
// Exit only once stdout has drained: `bridge locations list --json | jq` must get all of it.
run(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
  process.stdout.write("", () => process.exit(code));
});
