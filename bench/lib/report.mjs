// The bench's verdicts and its printed table, both read from the results object alone.
import { round } from "./stats.mjs";

/** Each target of the brief, with the measured value and whether it was met. */
export function targets(r) {
  const i = r.intake;
  const d = r.drain;
  return [
    ...receiptsTargets(r.receipts),
    { name: "intake req/s ratio (bridge / bare h3)", value: i.ratio, target: ">= 0.5", met: i.ratio >= 0.5 },
    { name: "intake p99 latency (ms)", value: i.bridge.latencyMs.p99, target: "< 25", met: i.bridge.latencyMs.p99 < 25 },
    ...backlogTargets(r.backlog),
    { name: "peak RSS (MiB)", value: i.memoryMb.peak, target: "< 120", met: i.memoryMb.peak < 120 },
    {
      name: "drain: delivered / allowed",
      value: d.fractionOfAllowed,
      target: ">= 0.95, all delivered",
      met: d.fractionOfAllowed >= 0.95 && d.delivered >= d.queued && !d.capped,
    },
    { name: "drain: 429s (% of gateway calls)", value: d.rateLimitedPct, target: "< 1", met: d.rateLimitedPct < 1 },
    {
      name: "four keys: sent / per-address budget left after receipt reads",
      value: r.keys.fractionOfAllowed,
      target: ">= 0.95, all sent",
      met: r.keys.fractionOfAllowed >= 0.95 && r.keys.sent >= r.keys.total,
    },
    { name: "four keys: 429s", value: r.keys.rateLimited429, target: "< 1 %", met: r.keys.rateLimited429 < 0.01 * r.keys.total },
    {
      name: "fairness: other location's ack-to-gateway p99 (ms)",
      value: r.fairness.p99Ms,
      target: "<= 1500, none missing",
      met: r.fairness.p99Ms <= 1500 && r.fairness.missing === 0,
    },
    { name: "drain: receipt polls (% of gateway calls)", value: d.receiptPollPct, target: "<= 15", met: d.receiptPollPct <= 15 },
    { name: "idle ack-to-gateway p50 (ms)", value: r.idleLatency.p50Ms, target: "< 20", met: r.idleLatency.p50Ms < 20 },
    { name: "CLI start-up ratio (bridge / node -e 0)", value: r.cli.ratio, target: "<= 1.5", met: r.cli.ratio <= 1.5 },
    {
      name: "messages list ratio (100,000 messages / 1,000 locations)",
      value: r.cli.messages.ratio,
      target: "<= 2",
      met: r.cli.messages.ratio <= 2,
    },
    ...inboundTargets(r.inbound),
    ...serversTargets(r.servers),
  ];
}

/**
 * Several servers: three send at least 2.5 times what one does with ten busy keys; with one
 * busy key three send what one does; no key above its rate, which the fake's per-key limiter
 * tells by never refusing (a window's count may hold the bucket's burst on top of the rate).
 */
export function serversTargets(s) {
  if (s.skipped) return [{ name: "servers: 3 / 1 servers, ten keys", value: `skipped: ${s.skipped}`, target: ">= 2.5", met: false }];
  const one = s.oneKey;
  const refusedByKey = s.tenKeys.refusedBy.key + one.refusedBy.key;
  return [
    { name: "servers: 3 / 1 servers, ten keys (SMS/s)", value: s.tenKeys.ratio, target: ">= 2.5", met: s.tenKeys.ratio >= 2.5 },
    {
      name: "servers: 3 / 1 servers, one key (SMS/s)",
      value: `${one.ratio} (${one.perSec[1]} / ${one.perSec[3]})`,
      target: "0.9-1.1",
      met: one.ratio >= 0.9 && one.ratio <= 1.1,
    },
    { name: "servers: sends refused by the per-key limit", value: refusedByKey, target: "0", met: refusedByKey === 0 },
  ];
}

/** The servers phase's lines, alone (BENCH_ONLY=servers) or under the full table. */
export function printServers(r, log) {
  const s = r.servers;
  if (s.skipped) return log(`\nservers: skipped (${s.skipped})`);
  const S = s.settings;
  log(`\nservers: SMS accepted per second by a fake Cast (${S.perSource.ratePerSec}/s burst ${S.perSource.burst} per address, ${S.perKey.ratePerSec}/s burst ${S.perKey.burst} per key),`);
  log(`  ${S.windowSec} s from ${S.settleSec} s after the first SMS, median of ${S.rounds} rounds each`);
  for (const [name, c] of [["ten keys", s.tenKeys], ["one key", s.oneKey]]) {
    const rounds = (n) => c.runs[n].map((f) => f.perSec).join(", ");
    log(`  ${name}: 1 server ${c.perSec[1]} (rounds ${rounds(1)}), 3 servers ${c.perSec[3]} (rounds ${rounds(3)}): ratio ${c.ratio}`);
    log(`    a key's most SMS in any 1 s: ${c.keyMostIn1s}; 429s by address ${c.refusedBy.source}, by key ${c.refusedBy.key}; sent twice ${c.duplicates}`);
  }
  for (const t of serversTargets(s)) log(`  ${t.name}: ${t.value} (target ${t.target}) ${t.met ? "met" : "NOT met"}`);
  log(`  1-min load average at the phase's start: ${s.loadAverage1m}; at each round's end: ${[...Object.values(s.tenKeys.runs), ...Object.values(s.oneKey.runs)].flat().map((f) => f.loadAverage1m).join(", ")}`);
}

/**
 * Replies: committed before the 200 on the same stack as a webhook, so the intake's ratio
 * to the bare app; and each acknowledged reply in HighLevel once.
 */
export function inboundTargets(n) {
  return [
    { name: "inbound replies/s ratio (bridge / bare h3)", value: n.ratio, target: ">= 0.5", met: n.ratio >= 0.5 },
    {
      name: "inbound: acknowledged replies posted, and none twice",
      value: `${n.posted} of ${n.acknowledged}, ${n.postedTwice} twice`,
      target: "all, 0 twice",
      met: n.posted >= n.acknowledged && n.postedTwice === 0 && !n.capped,
    },
  ];
}

/** The backlog phase's target: intake with 50,000 queued keeps to that on an empty queue. */
export function backlogTargets(b) {
  const name = `intake with ${b.queued} queued / on an empty queue`;
  return [{ name, value: b.ratio, target: ">= 0.9", met: b.ratio >= 0.9 }];
}

/** The backlog phase's lines, alone (BENCH_ONLY=backlog). */
export function printBacklog(r, log) {
  const b = r.backlog;
  const B = r.settings.BACKLOG;
  log(`\nbacklog: ${B.connections} connections, median of ${B.rounds} rounds of ${B.durationSec} s after ${B.warmupSec} s of warm-up, each bridge started afresh`);
  log(`  with ${b.queued} queued: ${b.backlog.reqPerSec} req/s, p50 / p99 ${b.backlog.latencyMs.p50} / ${b.backlog.latencyMs.p99} ms (rounds ${b.backlog.roundsReqPerSec.join(", ")})`);
  log(`  empty queue:      ${b.empty.reqPerSec} req/s, p50 / p99 ${b.empty.latencyMs.p50} / ${b.empty.latencyMs.p99} ms (rounds ${b.empty.roundsReqPerSec.join(", ")})`);
  for (const t of backlogTargets(b)) log(`  ${t.name}: ${t.value} (target ${t.target}) ${t.met ? "met" : "NOT met"}`);
  log(`  1-min load average at the phase's start: ${r.loadAverage1m?.backlog} (other work on the machine skews figures)`);
}

/** The receipts phase's targets: the truth, on time, without a call per message. */
export function receiptsTargets(rc) {
  return [
    {
      name: "receipts: every message reported as its receipt says",
      value: `${rc.wrong} wrong, ${rc.missing} missing`,
      target: "0, 0",
      met: rc.wrong === 0 && rc.missing === 0,
    },
    { name: "receipts: reported before its receipt", value: rc.beforeReceipt, target: "0", met: rc.beforeReceipt === 0 },
    { name: "receipts: receipt -> report p95 (ms)", value: rc.lagMs.p95, target: "<= 10000", met: rc.lagMs.p95 <= 10_000 },
    { name: "receipts: status calls (% of messages)", value: rc.statusCallsPct, target: "<= 10", met: rc.statusCallsPct <= 10 },
    { name: "receipts: 429s (% of Cast calls)", value: rc.rateLimitedPct, target: "<= 1", met: rc.rateLimitedPct <= 1 },
    { name: "receipts: error lines in the log", value: rc.errorLines, target: "0", met: rc.errorLines === 0 },
  ];
}

/** The receipts phase's rows, alone (BENCH_ONLY=receipts) or under the full table. */
export function printReceipts(r, log) {
  const rc = r.receipts;
  const verdict = (name) => (r.targets.find((t) => t.name === name)?.met ? "met" : "NOT met");
  const R = r.settings.RECEIPTS;
  log(`\nreceipts: ${rc.sent} of ${rc.messages} sent, ${rc.reported} reported; ${rc.logReads} log reads, ${rc.castCalls} Cast calls in all`);
  for (const t of receiptsTargets(rc)) log(`  ${t.name}: ${t.value} (target ${t.target}) ${verdict(t.name)}`);
  log(`  receipt -> report p50 / p95 / max (ms): ${rc.lagMs.p50} / ${rc.lagMs.p95} / ${rc.lagMs.max}`);
  log(`  (one key at ${R.ratePerSec} messages/s and ${R.address.ratePerSec} requests/s, burst ${R.address.burst}; receipts ${R.delayMs[0]}-${R.delayMs[1]} ms after the send)`);
}

export function printTable(r, log) {
  const { INTAKE, DRAIN } = r.settings;
  const i = r.intake;
  const d = r.drain;
  const l = r.idleLatency;
  const c = r.cli;
  const verdict = (name) => (r.targets.find((t) => t.name === name)?.met ? "met" : "NOT met");
  const rows = [
    ["figure", "bridge", "baseline", "ratio", "target", "result"],
    [`intake req/s (${INTAKE.connections} conn, median of ${INTAKE.rounds} x ${INTAKE.durationSec} s)`, i.bridge.reqPerSec, `${i.baseline.reqPerSec} (bare h3)`, i.ratio, "ratio >= 0.5", verdict("intake req/s ratio (bridge / bare h3)")],
    ["intake p50 latency (ms)", i.bridge.latencyMs.p50, i.baseline.latencyMs.p50, ratio(i.bridge.latencyMs.p50, i.baseline.latencyMs.p50), "", ""],
    ["intake p99 latency (ms)", i.bridge.latencyMs.p99, i.baseline.latencyMs.p99, ratio(i.bridge.latencyMs.p99, i.baseline.latencyMs.p99), "< 25 ms", verdict("intake p99 latency (ms)")],
    [`intake with ${r.backlog.queued} queued (median of ${r.settings.BACKLOG.rounds})`, r.backlog.backlog.reqPerSec, `${r.backlog.empty.reqPerSec} (empty queue)`, r.backlog.ratio, "ratio >= 0.9", verdict(backlogTargets(r.backlog)[0].name)],
    ["intake non-2xx / errors / timeouts", `${i.bridge.non2xx} / ${i.bridge.errors} / ${i.bridge.timeouts}`, `${i.baseline.non2xx} / ${i.baseline.errors} / ${i.baseline.timeouts}`, "", "", ""],
    ["CPU under load (% of one core)", i.cpuPct.bridge, i.cpuPct.bare, "", "", ""],
    ["RSS idle (MiB)", i.memoryMb.idleRss, i.memoryMb.bareIdleRss, ratio(i.memoryMb.idleRss, i.memoryMb.bareIdleRss), "", ""],
    ["RSS peak under load (MiB, VmHWM)", i.memoryMb.peak, i.memoryMb.bareHwm, ratio(i.memoryMb.peak, i.memoryMb.bareHwm), "< 120 MiB", verdict("peak RSS (MiB)")],
    ["SMS sent during intake (of acked)*", `${i.drainedDuringIntake.gatewayAccepted} of ${i.drainedDuringIntake.acknowledged}`, "", "", "", ""],
    ["drain: delivered in window", `${d.delivered} / ${d.queued} in ${d.windowSec} s`, `${d.allowed} allowed`, d.fractionOfAllowed, ">= 0.95", verdict("drain: delivered / allowed")],
    ["drain: rate after the burst (msg/s)", d.afterBurstPerSec, DRAIN.ratePerSec, ratio(d.afterBurstPerSec, DRAIN.ratePerSec), "", ""],
    ["drain: 429s / gateway calls", `${d.rateLimited429} / ${d.gatewayCalls}`, "0", `${d.rateLimitedPct}%`, "< 1%", verdict("drain: 429s (% of gateway calls)")],
    ["drain: status reports deliv./failed", `${d.reports.delivered} / ${d.reports.failed}`, `${d.queued}`, "", "", ""],
    ["drain: receipt -> report p50 / p99 (ms)", `${d.receipts.p50Ms} / ${d.receipts.p99Ms}`, `${d.receipts.measured} measured`, "", "", ""],
    ["drain: receipt polls / all gateway calls", `${d.receiptPolls} / ${d.gatewayCalls + d.receiptPolls}`, "", `${d.receiptPollPct}%`, "<= 15%", verdict("drain: receipt polls (% of gateway calls)")],
    ["four keys: sent in window", `${r.keys.sent} / ${r.keys.total} in ${r.keys.windowSec} s`, `${r.keys.allowed} allowed`, r.keys.fractionOfAllowed, ">= 0.95", verdict("four keys: sent / per-address budget left after receipt reads")],
    ["four keys: receipt reads/s, 429s", `${r.keys.receiptPollsPerSec}/s, ${r.keys.rateLimited429}`, "", "", "429s < 1%", verdict("four keys: 429s")],
    ["fairness: other location ack -> gateway p50 / p99 (ms)", `${r.fairness.p50Ms} / ${r.fairness.p99Ms}`, `${r.fairness.campaignSentMeanwhile} campaign SMS sent`, "", "p99 <= 1500 ms", verdict("fairness: other location's ack-to-gateway p99 (ms)")],
    ["idle ack -> gateway p50 / p99 (ms)", `${l.p50Ms} / ${l.p99Ms}`, "", "", "p50 < 20 ms", verdict("idle ack-to-gateway p50 (ms)")],
    ["CLI locations list, median (ms)", c.bridge.medianMs, `${c.node.medianMs} (node -e 0)`, c.ratio, "<= 1.5x", verdict("CLI start-up ratio (bridge / node -e 0)")],
    [`CLI messages list on ${c.messages.count}, median (ms)`, c.messages.medianMs, `${c.bridge.medianMs} (locations list)`, c.messages.ratio, "<= 2x", verdict("messages list ratio (100,000 messages / 1,000 locations)")],
    ...inboundRows(r),
  ].map((row) => row.map(String));
  const widths = rows[0].map((_, col) => Math.max(...rows.map((row) => row[col].length)));
  log("");
  for (const [n, row] of rows.entries()) {
    log(row.map((cell, col) => cell.padEnd(widths[col])).join("  "));
    if (n === 0) log(widths.map((w) => "-".repeat(w)).join("  "));
  }
  log(
    `\ndrain rate: delivered / allowed, where allowed = ${DRAIN.burst} + ${DRAIN.ratePerSec} x t and t runs from the first` +
      ` acknowledgement to the last SMS the gateway accepted (to the end of the phase if some never went out).` +
      ` That counts the burst as allowed, so 1.0 is the gateway's own ceiling. "rate after the burst" is` +
      ` (sent - ${DRAIN.burst}) / (time from the ${DRAIN.burst}th to the last SMS).` +
      `\n*the gateway has no limit in the intake phase; bridge's own pacing (Cast's 10 messages/s per API key, 30 requests/s in all) still applies.` +
      `\nRSS in MiB (2^20 bytes: the kernel's KiB / 1024); the target read as 120 million bytes would be 114.4 MiB.` +
      `\ninbound: replies/s acknowledged by POST /api/inbound; posted: after each bridge round, that round's replies` +
      ` (a contact upsert and an inbound message each) over the time to the last one HighLevel took.` +
      `\nidle latency: time from the client receiving 200 to the gateway receiving the SMS (negative: the SMS left first).` +
      `\nmachine: ${r.machine.cpu}, ${r.machine.cores} cores, ${r.machine.memoryGb} GB, node ${r.machine.node};` +
      ` database on ${r.settings.databaseFs} (${r.settings.databaseDir}), synchronous=FULL` +
      `\ndist/bridge ${r.build.version} built ${r.build.builtAt}, tree at ${r.build.commit}${r.build.dirty ? " + uncommitted changes" : ""};` +
      ` 1-min load average at each phase's start: ${JSON.stringify(r.loadAverage1m)} (other work on the machine skews figures)`,
  );
  if (d.capped) log(`drain: stopped at the ${DRAIN.capSec} s cap with ${d.reports.total} of ${d.queued} reported`);
  printReceipts(r, log);
  printServers(r, log);
}

/** The inbound phase's rows of the table. */
function inboundRows(r) {
  const { INBOUND } = r.settings;
  const n = r.inbound;
  const verdict = (name) => (r.targets.find((t) => t.name === name)?.met ? "met" : "NOT met");
  const [b, m] = [n.baseline.latencyMs, n.bridge.latencyMs];
  return [
    [`inbound replies/s (${INBOUND.connections} conn, median of ${INBOUND.rounds} x ${INBOUND.replies})`, n.bridge.reqPerSec, `${n.baseline.reqPerSec} (bare h3)`, n.ratio, "ratio >= 0.5", verdict("inbound replies/s ratio (bridge / bare h3)")],
    ["inbound p50 / p99 latency (ms)", `${m.p50} / ${m.p99}`, `${b.p50} / ${b.p99}`, ratio(m.p99, b.p99), "", ""],
    ["inbound: posted to HighLevel (replies/s)", n.postedPerSec, "", "", "", ""],
    ["inbound: posted / acknowledged, twice", `${n.posted} / ${n.acknowledged}, ${n.postedTwice}`, "", "", "all, 0 twice", verdict("inbound: acknowledged replies posted, and none twice")],
  ];
}

function ratio(a, b) {
  return round(a / b, 2);
}
