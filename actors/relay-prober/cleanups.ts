// The throwaway keys of every labs run whose test events may still be on a relay, kept in the
// `labs_cleanups` bucket (one hour max age) until its NIP-09 clean-up was sent. A prober that
// crashes (or is stopped before its clean-up got through) leaves its entry; any prober's sweep takes
// an entry once its run can no longer be alive (`until`), finds the events of those keys on the
// relay (they carry the labs-test marker) and deletes them, through the same outbound guard.
import { randomBytes } from 'node:crypto';
import type { SecureContextOptions } from 'node:tls';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import type { KV } from '@nats-io/kv';
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';
import { isCasConflict, kvCasDelete, kvCasPut } from '../../shared/nats/cas.ts';
import { Probe, TEST_MARKER } from './probe.ts';
import { deleteTestEvents } from './checks/index.ts';
import type { CleanupKeeper } from './run.ts';

export interface CleanupEntry {
  v: 1;
  relay: string;
  /** The run's throwaway secret keys (hex): only ever used to sign test events and their deletion. */
  keys: string[];
  /** Until then the run that wrote it may be alive; after it, any prober may clean up. */
  until: number;
  by: string;
}

/** How long a clean-up taken over from a dead run may take before another prober tries again. */
const TAKEOVER_MS = 60_000;

export function startCleanups(o: {
  kv: KV;
  config: Config;
  log: Logger;
  ca?: SecureContextOptions['ca'];
  instanceId: string;
  everyMs?: number;
}) {
  const { kv, config, log } = o;
  const keyOf = new WeakMap<Probe, { key: string; revision: number }>();
  const running = new Set<Promise<unknown>>();
  // a run lives at most its module's time, then its bounded clean-up after a stop
  const runMs = config.labs.moduleTimeoutMs + 20_000 + config.outbound.connectTimeoutMs + 10_000;

  const keeper: CleanupKeeper = {
    async record(p) {
      const key = randomBytes(12).toString('hex');
      const entry: CleanupEntry = {
        v: 1,
        relay: p.url.href,
        keys: p.keys.map((k) => bytesToHex(k.sk)),
        until: Date.now() + runMs,
        by: o.instanceId,
      };
      const revision = await kvCasPut(kv, key, JSON.stringify(entry), 0);
      keyOf.set(p, { key, revision });
    },
    async done(p) {
      const k = keyOf.get(p);
      if (!k) return;
      keyOf.delete(p);
      await kvCasDelete(kv, k.key, k.revision).catch((e) => {
        if (!isCasConflict(e)) throw e;
      });
    },
    track(p) {
      running.add(p);
      void p.finally(() => running.delete(p));
    },
  };

  /** Finish one dead run's clean-up: claim it, find its events, delete them, drop the entry. */
  async function finish(key: string): Promise<void> {
    const e = await kv.get(key);
    if (!e || e.operation !== 'PUT' || !e.value.length) return;
    const entry = e.json<CleanupEntry>();
    if (entry.until > Date.now()) return;
    let revision: number;
    try {
      revision = await kvCasPut(kv, key, JSON.stringify({ ...entry, until: Date.now() + TAKEOVER_MS, by: o.instanceId }), e.revision);
    } catch (err) {
      if (isCasConflict(err)) return; // another prober took it
      throw err;
    }
    const p = new Probe(entry.relay, config, { ca: o.ca, keys: entry.keys.map((h) => hexToBytes(h)) });
    try {
      const c = await p.open({ forCleanup: true });
      const found = await p.req([{ authors: p.keys.map((k) => k.pk), [`#${TEST_MARKER[0]}`]: [TEST_MARKER[1]] }], c, {
        timeoutMs: p.timings.replyTimeoutMs,
      });
      for (const ev of found.events) if (p.keys.some((k) => k.pk === ev.pubkey) && ev.kind !== 5) p.stored.set(ev.id, ev);
      const r = await deleteTestEvents(p, c);
      log.warn(
        { relay: entry.relay, left: entry.by, found: p.stored.size, remaining: r.remaining.length },
        'labs: deleted the test events a stopped or crashed prober left',
      );
      await kvCasDelete(kv, key, revision).catch(() => {});
    } finally {
      p.stop();
    }
  }

  let sweeping: Promise<void> | null = null;
  const sweep = () =>
    (sweeping ??= (async () => {
      const keys: string[] = [];
      for await (const k of await kv.keys()) keys.push(k);
      for (const k of keys)
        await finish(k).catch((err) => log.warn({ err, key: k }, 'labs: clean-up of a dead run failed; tried again later'));
    })()
      .catch((err) => log.warn({ err }, 'labs: clean-up sweep failed'))
      .finally(() => {
        sweeping = null;
      }));
  void sweep();
  const timer = setInterval(() => void sweep(), o.everyMs ?? 60_000);
  timer.unref();

  return {
    keeper,
    sweep,
    /** Let the clean-ups of stopped runs finish (each is bounded), then stop sweeping. */
    async stop() {
      clearInterval(timer);
      await Promise.allSettled([...running, sweeping]);
    },
  };
}
