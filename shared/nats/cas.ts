// Compare-and-set writes: a publish with `expect.lastSubjectSequence`, so a write lands only on the
// revision it was decided on. The stream leader rejects a write whose base is not the subject's last
// sequence, counting proposals still in flight (nats-server >= 2.10; the project refuses older ones,
// shared/nats/server.ts).
//
// nats-server 2.9 checked only against what it had *stored*: on a replicated (R3) stream several
// writers holding the same revision were all accepted, each later one silently undoing the earlier
// ones (nats-server#4320; 181 of 200 rounds of six concurrent updates on Debian's 2.9.10). Every
// write here then also carried the message id `cas:<subject>@<base>`, so that the dedupe window let
// only one through. On 2.10.27 the server's own check holds (0 of 200 rounds with the plain KV update,
// `node --import tsx scripts/diagnostics/cas-check.ts`, asserted by test/platform/cas.test.ts), so the id is gone:
// it cost a dedupe entry per write and, worse, refused a write on a base whose earlier write was lost
// from the stream but not from the dedupe window (docs/reliability.md "Durability").
// Across a leader change the new leader knows nothing of its predecessor's in-flight writes; the
// window for a double write is then that of the server's own stored-state check (a failover is rare
// and short), as it was with the id.
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';
import { JetStreamApiError, type JetStreamClient } from '@nats-io/jetstream';
import type { Bucket, KV, KvEntry } from '@nats-io/kv';
import { sleep } from '../runtime.ts';
import { ApiError } from '../errors.ts';

/** Somebody else wrote first: read again and decide again. */
export class CasConflict extends Error {
  constructor(subject: string, base: number) {
    super(`wrong last sequence: ${subject} moved past revision ${base}`);
    this.name = 'CasConflict';
  }
}

/**
 * Server answers that mean "not written, somebody else's write is (being) stored": 10071 wrong last
 * sequence; on newer servers also 10158 (this message id is in process) and 10163 (the expected
 * per-subject sequence cannot be checked yet). Each is a conflict: read again, decide again.
 */
const CONFLICT_CODES = new Set([10071, 10158, 10163]);

/** A conflict from this module or from the server's own checks (see CONFLICT_CODES). */
export function isCasConflict(e: unknown): boolean {
  if (e instanceof CasConflict) return true;
  if (e instanceof JetStreamApiError && CONFLICT_CODES.has(e.code)) return true;
  return /wrong last sequence|key exists|duplicate message (conflict|id is in process)/i.test(String((e as Error)?.message ?? e));
}

export interface CasOptions {
  headers?: MsgHdrs;
  timeout?: number;
}

/**
 * Publish `data` on `subject` only if the subject's last message is still `base` (0: the subject has
 * no message yet). Returns the new message's sequence; throws CasConflict when another write got in.
 */
export async function casPublish(
  js: JetStreamClient,
  subject: string,
  data: string | Uint8Array,
  base: number,
  o: CasOptions = {},
): Promise<number> {
  const ack = await js.publish(subject, data, {
    expect: { lastSubjectSequence: base },
    ...(o.headers ? { headers: o.headers } : {}),
    ...(o.timeout ? { timeout: o.timeout } : {}),
  });
  if (ack.duplicate) throw new CasConflict(subject, base);
  return ack.seq;
}

/** `kv.update` / `kv.create` (base 0) with the guarantee above. Returns the new revision. */
export function kvCasPut(kv: KV, key: string, value: string | Uint8Array, base: number, o: CasOptions = {}): Promise<number> {
  const b = kv as Bucket;
  return casPublish(b.js, b.subjectForKey(b.encodeKey(key), true), value, base, o);
}

/** `kv.delete(key, { previousSeq: base })` with the guarantee above. */
export async function kvCasDelete(kv: KV, key: string, base: number): Promise<void> {
  const b = kv as Bucket;
  const h = natsHeaders();
  h.set('KV-Operation', 'DEL');
  await casPublish(b.js, b.subjectForKey(b.encodeKey(key), true), new Uint8Array(0), base, { headers: h });
}

/**
 * Read-modify-write of one key until it sticks: `next` gets the key's current entry (null: never
 * written; a DEL marker is passed as it is) and answers the value to write, or undefined to write
 * nothing. On a conflict it reads again and asks again, with a short random pause. Returns the new
 * revision, or undefined when `next` wrote nothing. Too much contention ends in a retryable 503.
 */
export async function kvUpdate(
  kv: KV,
  key: string,
  next: (cur: KvEntry | null) => string | undefined,
  tries = 50,
): Promise<number | undefined> {
  for (let attempt = 0; attempt < tries; attempt++) {
    const cur = await kv.get(key);
    const value = next(cur);
    if (value === undefined) return undefined;
    try {
      return await kvCasPut(kv, key, value, cur?.revision ?? 0);
    } catch (e) {
      if (!isCasConflict(e)) throw e;
      await sleep(Math.random() * Math.min(200, 5 * (attempt + 1)));
    }
  }
  throw new ApiError('service_unavailable', `${key}: too many concurrent updates; retry`);
}
