// Everything that only `serve`, `token refresh`, `config set`, `locations sync`, `status`,
// `optouts`, `doctor` and `alerts test` use: the HTTP stack, the CRM and gateway clients, zod and consola, about nine
// tenths of bridge's code. Commands load it with `await import("../sea/heavy.ts")`. In
// dist/bridge it is a second script that is compiled only then (build.mjs), so
// `locations list` and `config get` start without it.
//
// In the executable this module is a separate bundle with its own copy of whatever it
// imports. So it imports nothing from src/cli (build.mjs refuses a build that does), and
// nothing that crosses back to the CLI may depend on class identity: the CLI tests errors
// by class only for its own classes and commander's (test/unit/heavy-split.test.ts).
export { createCore } from "../core/index.ts";
export { runDoctor } from "../core/operator/doctor.ts";
export { setLocationConfig } from "../core/installs/location-config.ts";
export { senderIdCheck } from "../core/installs/sender-check.ts";
export { createCastClient } from "../core/clients/cast.ts";
// Numbers are read with libphonenumber's metadata: `optouts` takes it from here.
export { addOptOut, listOptOuts, optOutPhone, removeOptOut } from "../core/operator/optouts.ts";
export { phoneOf, registerPhone } from "../core/operator/phones.ts";
export { createLogger, writesToJournal } from "../core/log.ts";
export { createRun } from "../core/run.ts";
export { sendTestAlert } from "../core/alerts/test-alert.ts";
export { PROVIDER_ID_MISSING } from "../core/inbound/sink.ts";
export { routeStoredReply } from "../core/inbound/operator.ts";
export { createApp } from "../server/app.ts";
export { listen } from "../server/listen.ts";
