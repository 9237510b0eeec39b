// Webhook signature verification, as the API signs deliveries (Standard
// Webhooks, https://www.standardwebhooks.com): webhook-signature holds
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>" keyed with the bytes of
// the endpoint's whsec_ secret (base64 after the prefix); the timestamp
// must be within five minutes. node:crypto only, no dependency.
import { createHmac, timingSafeEqual } from "node:crypto";

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

const tolerance = 5 * 60; // seconds, as the specification's libraries

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(h: HeaderBag, name: string): string {
  if (typeof (h as Headers).get === "function") return (h as Headers).get(name) ?? "";
  const rec = h as Record<string, string | string[] | undefined>;
  const key = Object.keys(rec).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : rec[key];
  return Array.isArray(v) ? (v[0] ?? "") : (v ?? "");
}

/**
 * Throws WebhookVerificationError unless the delivery is signed with
 * secret and recent. body must be the raw request body as received (a
 * string or its bytes), before any JSON parsing. Returns the parsed event.
 * Deliver each webhook-id once: a retry carries the same id.
 */
export function verifyWebhook(secret: string, headers: HeaderBag, body: string | Uint8Array, nowMs = Date.now()): unknown {
  const id = header(headers, "webhook-id");
  const ts = header(headers, "webhook-timestamp");
  const sigs = header(headers, "webhook-signature");
  if (!id || !ts || !sigs) throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
  const at = Number(ts);
  if (!/^[0-9]+$/.test(ts) || Math.abs(nowMs / 1000 - at) > tolerance) throw new WebhookVerificationError("timestamp too old or too new");
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64");
  const payload = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  const want = createHmac("sha256", key).update(`${id}.${ts}.`).update(payload).digest();
  for (const s of sigs.split(" ")) {
    const [version, b64] = s.split(",", 2);
    if (version !== "v1" || !b64) continue;
    const got = Buffer.from(b64, "base64");
    if (got.length === want.length && timingSafeEqual(got, want)) return JSON.parse(payload.toString("utf8"));
  }
  throw new WebhookVerificationError("no matching signature");
}
