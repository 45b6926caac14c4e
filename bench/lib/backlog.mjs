// The backlog phase's database: the one an installed bridge left, with its queue filled as a
// Cast outage or a campaign fills it (every job due, in the location the webhooks are for).
import { createRequire } from "node:module";
import { textOf } from "./webhooks.mjs";

/** Queues `count` messages of `locationId` in the (stopped) bridge's database `file`, as intake would. */
export function fillQueue(file, count, locationId) {
  const Database = createRequire(import.meta.url)("better-sqlite3");
  const db = new Database(file);
  try {
    const now = Date.now();
    const seen = db.prepare("INSERT INTO seen_messages (message_id) VALUES (?)");
    const job = db.prepare(`INSERT INTO jobs (message_id, location_id, payload, next_attempt_at, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?)`);
    db.transaction(() => {
      for (let i = 0; i < count; i++) {
        const messageId = `backlog-${i}`;
        const payload = { messageId, locationId, contactId: "contact-bench", phone: "+639171234567", message: textOf(messageId), attachments: [] };
        seen.run(messageId);
        job.run(messageId, locationId, JSON.stringify(payload), now, now, now);
      }
    })();
    return db.prepare("SELECT count(*) AS n FROM jobs WHERE state = 'queued'").get().n;
  } finally {
    db.close();
  }
}
