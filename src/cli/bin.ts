import { run } from "./index.ts";

// The single process.exit of bridge: every command returns its exit code to here.
// Commands write their output synchronously (see processIo), so none is lost by exiting.
run(process.argv.slice(2)).then((code) => process.exit(code));
