import { run } from "./index.ts";

// The single process.exit of bridge: every command returns its exit code to here.
run(process.argv.slice(2)).then((code) => process.exit(code));
