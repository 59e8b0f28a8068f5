// Store an object in a NATS object store in one round trip's time.
//
// The library's put (`ObjectStore.putBlob`) is three serial round trips on the path of every job: it
// reads the name's old meta (a `$JS.API.STREAM.MSG.GET`, to purge the old chunks afterwards), then
// publishes each chunk and waits for its ack, then publishes the meta and waits for that ack; each
// ack waits for an fsync. Here the chunks and the meta go out back to back on one connection
// without waiting for each other, then all the acks are awaited together. They are publishes to one
// stream from one connection, so the server stores them in the order they were sent: the chunks
// before the meta that makes them visible. There is no read of the old meta.
//
// What is stored is exactly what putBlob stores, so the library's own get/getBlob/info/list/delete
// read it unchanged: chunks on `$O.<bucket>.C.<nuid>` (at most max_chunk_size each, clamped to the
// server's max_payload, 128 KiB by default), then the meta JSON with the same fields in the same
// order on `$O.<bucket>.M.<base64url-padded name>` with `Nats-Rollup: sub` (a re-put replaces the
// name's meta), digest `SHA-256=<base64url-padded>` of the whole data.
//
// Old chunks on a re-put are NOT purged; they expire with the bucket's max age (shared/nats/
// provision.ts gives every store a TTL). Their nuid is only in the old meta: learning it costs the
// very read this function exists to avoid, and it cannot be learned afterwards (the rollup removed
// the old meta). A read sent alongside the publishes is no fix either: the server answers
// `$JS.API` requests off the connection's read loop, so it can see the new meta as well as the old
// one. A re-put is rare (a redelivered task, the converter's index rewritten by a later delivery),
// the orphan is never read (readers follow the meta's nuid), and it lives no longer than the bucket
// keeps anything written at that time. It does count in the bucket's bytes until then.
import { createHash } from 'node:crypto';
import { jetstreamManager, JsHeaders, PubHeaders, type PubAck } from '@nats-io/jetstream';
import { jetstreamOf } from './clients.ts';
import { headers, nuid, type MsgHdrs, type NatsConnection } from '@nats-io/nats-core';
import { Base64UrlPaddedCodec, type ObjectInfo, type ObjectStoreMeta } from '@nats-io/obj';

const DIGEST_TYPE = 'SHA-256=';
/** The library's default chunk size. */
const DEFAULT_CHUNK = 128 * 1024;
/**
 * At most this many chunk bytes are unacknowledged at once: a small object goes out whole, a large
 * one (PDFs of tens of MB) in a sliding window, so neither the client's outbound buffer nor the
 * server's inbound queue holds all of it.
 */
export const PUT_WINDOW_BYTES = 8 * 1024 * 1024;

export interface PutObjectOptions {
  /** Per-publish ack timeout (default: the JetStream client's, as the library's put). */
  timeout?: number;
  /** Chunk bytes in flight at most (default PUT_WINDOW_BYTES); at least one chunk is always in flight. */
  windowBytes?: number;
}

type Settled = { ok: true; ack: PubAck } | { ok: false; err: unknown };
const settle = (p: Promise<PubAck>): Promise<Settled> =>
  p.then(
    (ack) => ({ ok: true as const, ack }),
    (err: unknown) => ({ ok: false as const, err }),
  );

/**
 * Store `data` as object `meta.name` in object store `bucket` (a re-put replaces it). Resolves when
 * every chunk and the meta are acknowledged (stored, fsynced); throws if any publish fails, and then
 * no meta of this put is left pointing at missing chunks. No JetStream API request on success.
 */
export async function putObject(
  nc: NatsConnection,
  bucket: string,
  meta: ObjectStoreMeta,
  data: Uint8Array | null,
  opts: PutObjectOptions = {},
): Promise<ObjectInfo> {
  if (!/^[-\w]+$/.test(bucket)) throw new Error(`invalid bucket name: ${bucket}`);
  if (!meta.name) throw new Error('name cannot be empty');
  if (meta.options?.link) throw new Error('link cannot be set when putting the object in bucket');
  const js = jetstreamOf(nc);
  const timeout = opts.timeout ?? js.getOptions().timeout ?? 5000;
  const windowBytes = opts.windowBytes ?? PUT_WINDOW_BYTES;
  const bytes = data ?? new Uint8Array(0);
  const maxPayload = nc.info?.max_payload || 1024;
  const maxChunk = Math.min(meta.options?.max_chunk_size || DEFAULT_CHUNK, maxPayload);
  const id = nuid.next();
  const chunkSubj = `$O.${bucket}.C.${id}`;
  const metaSubj = `$O.${bucket}.M.${Base64UrlPaddedCodec.encode(meta.name)}`;
  // the library's meta, field for field and in its order (Object.assign of these, then mtime, digest, deleted)
  const info = {
    bucket,
    nuid: id,
    size: bytes.length,
    chunks: Math.ceil(bytes.length / maxChunk),
    name: meta.name,
    description: meta.description ?? '',
    options: { ...meta.options, max_chunk_size: maxChunk },
    metadata: meta.metadata,
    ...(meta.headers ? { headers: (meta.headers as MsgHdrs & { toRecord(): Record<string, string[]> }).toRecord() } : {}),
    mtime: new Date().toISOString(),
    digest: `${DIGEST_TYPE}${Base64UrlPaddedCodec.encode(createHash('sha256').update(bytes).digest())}`,
    deleted: false,
  };

  const pending: { ack: Promise<Settled>; n: number }[] = [];
  let inFlight = 0;
  let failed: Settled | null = null;
  for (let off = 0; off < bytes.length && !failed; off += maxChunk) {
    const chunk = bytes.subarray(off, off + maxChunk);
    while (pending.length && inFlight + chunk.length > windowBytes) {
      const p = pending.shift()!;
      inFlight -= p.n;
      const r = await p.ack;
      if (!r.ok) {
        failed = r;
        break;
      }
    }
    if (failed) break;
    pending.push({ ack: settle(js.publish(chunkSubj, chunk, { timeout })), n: chunk.length });
    inFlight += chunk.length;
  }

  if (failed) {
    // a chunk was refused before the meta went out: nothing points at this put's chunks
    await Promise.all(pending.map((p) => p.ack));
    await purge(nc, bucket, chunkSubj, timeout);
    throw (failed as Extract<Settled, { ok: false }>).err;
  }

  const h = headers();
  h.set(JsHeaders.RollupHdr, JsHeaders.RollupValueSubject);
  const metaAck = settle(js.publish(metaSubj, JSON.stringify(info), { headers: h, timeout }));
  const chunkAcks = await Promise.all(pending.map((p) => p.ack));
  const metaRes = await metaAck;
  const chunkErr = chunkAcks.find((r): r is Extract<Settled, { ok: false }> => !r.ok);
  if (metaRes.ok && !chunkErr) return { ...info, metadata: info.metadata ?? {}, headers: meta.headers, revision: metaRes.ack.seq };

  if (metaRes.ok) {
    // The meta is live but a chunk is missing (refused, or its ack lost): a reader would get a
    // corrupt object. Mark the name deleted as the library's delete does, only if this put's meta is
    // still the name's last (a later put of the same name must not be clobbered).
    const th = headers();
    th.set(JsHeaders.RollupHdr, JsHeaders.RollupValueSubject);
    th.set(PubHeaders.ExpectedLastSubjectSequenceHdr, `${metaRes.ack.seq}`);
    await js
      .publish(metaSubj, JSON.stringify({ ...info, deleted: true, size: 0, chunks: 0, digest: '' }), { headers: th, timeout })
      .catch(() => {});
  }
  await purge(nc, bucket, chunkSubj, timeout);
  throw chunkErr ? chunkErr.err : (metaRes as Extract<Settled, { ok: false }>).err;
}

/** Best effort, on the failure path only: drop this put's chunks (the bucket's TTL is the backstop). */
async function purge(nc: NatsConnection, bucket: string, chunkSubj: string, timeout: number): Promise<void> {
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false, timeout });
    await jsm.streams.purge(`OBJ_${bucket}`, { filter: chunkSubj });
  } catch {
    /* the stream may be gone or unreachable: the failure the caller hears about is the put's */
  }
}
