import { jsonResponse, startFake } from "./http.ts";

/** A fake Cast.ph: accepts every SMS unless a test swaps the handler. */
export async function startFakeGateway() {
  let serial = 0;
  const fake = await startFake({
    "POST /api/sms/send": () => jsonResponse({ success: true, message_id: `cast-${++serial}`, parts: 1 }),
  });
  return {
    ...fake,
    /** The SMS received: parsed bodies with the API key each came with. */
    sent() {
      return fake.received("POST /api/sms/send").map((r) => ({
        apiKey: r.headers["x-api-key"],
        ...(JSON.parse(r.body) as { to: string; message: string; sender_id?: string }),
      }));
    },
    accept: () => jsonResponse({ success: true, message_id: `cast-${++serial}`, parts: 1 }),
  };
}

export type FakeGateway = Awaited<ReturnType<typeof startFakeGateway>>;
