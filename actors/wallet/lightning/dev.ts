// The development backend: makes real BOLT11 invoices signed with a local node key (persisted under
// dataDir, so invoices keep one payee across restarts) and settles them only when the operator says
// so (`npm run admin -- topup pay <id>`, or the account page's dev button). Its invoice states live
// in a KV bucket, so every wallet instance sees the same "node". Refused in production mode.
import { randomBytes, createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kvm, KvWatchInclude, type KV, type KvWatchEntry } from '@nats-io/kv';
import type { QueuedIterator } from '@nats-io/nats-core';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { BUCKETS } from '../../../shared/names.ts';
import { kvCasPut, kvUpdate } from '../../../shared/nats/cas.ts';
import { encodeInvoice } from './bolt11.ts';
import { LightningError, type BackendContext, type InvoiceBackend, type InvoiceStatus } from './types.ts';
import { withRetry } from '../../../shared/runtime.ts';

interface DevInvoice {
  paymentHash: string;
  msat: number;
  bolt11: string;
  expiresAt: number;
  state: 'open' | 'paid';
  paidAt?: number;
}

/** The dev node's secret key: created once, kept in <dataDir>/lightning/dev-node.key (hex, mode 600). */
export function devNodeKey(dataDir: string): { secretKey: Uint8Array; pubkey: string } {
  const dir = join(dataDir, 'lightning');
  const file = join(dir, 'dev-node.key');
  let hex: string;
  if (existsSync(file)) hex = readFileSync(file, 'utf8').trim();
  else {
    mkdirSync(dir, { recursive: true });
    hex = Buffer.from(secp256k1.utils.randomSecretKey()).toString('hex');
    try {
      writeFileSync(file, hex + '\n', { mode: 0o600, flag: 'wx' });
    } catch {
      hex = readFileSync(file, 'utf8').trim(); // another instance made it first
    }
  }
  const secretKey = Uint8Array.from(Buffer.from(hex, 'hex'));
  return { secretKey, pubkey: Buffer.from(secp256k1.getPublicKey(secretKey, true)).toString('hex') };
}

export async function createDevBackend(ctx: BackendContext): Promise<InvoiceBackend> {
  if (ctx.config.server.mode === 'production') throw new LightningError('the dev Lightning backend is refused in production mode');
  const key = devNodeKey(ctx.config.dataDir);
  const kvm = new Kvm(ctx.nc);
  // retried like every bucket a unit opens at its start: on a cluster just restarted, the meta
  // group may not answer a create yet (a wallet of `npm run cluster` exited on it, session 26)
  const kv: KV = await withRetry(
    'dev invoices bucket',
    () =>
      kvm.create(BUCKETS.devInvoices, { history: 1, replicas: ctx.config.nats.replicas, allow_direct: false }).catch(async (e: Error) => {
        if (!/already in use/i.test(e.message)) throw e;
        return kvm.open(BUCKETS.devInvoices);
      }),
    { log: ctx.log },
  );

  function checkHash(hash: string) {
    if (!/^[0-9a-f]{64}$/.test(hash)) throw new LightningError('malformed payment hash');
  }
  async function read(hash: string) {
    checkHash(hash);
    const e = await kv.get(hash);
    if (!e || e.operation !== 'PUT') return null;
    return { inv: e.json<DevInvoice>(), revision: e.revision };
  }

  return {
    name: 'dev',
    async createInvoice(sats, description, expirySeconds) {
      const preimage = randomBytes(32);
      const paymentHash = createHash('sha256').update(preimage).digest();
      const now = Date.now();
      const bolt11 = encodeInvoice(
        {
          network: ctx.config.wallet.lightning.devNetwork,
          msat: BigInt(sats) * 1000n,
          timestamp: Math.floor(now / 1000),
          paymentHash,
          paymentSecret: randomBytes(32),
          description,
          expirySeconds,
        },
        key.secretKey,
      );
      const inv: DevInvoice = {
        paymentHash: paymentHash.toString('hex'),
        msat: sats * 1000,
        bolt11,
        expiresAt: Math.floor(now / 1000) * 1000 + expirySeconds * 1000,
        state: 'open',
      };
      await kvCasPut(kv, inv.paymentHash, JSON.stringify(inv), 0);
      return { bolt11, paymentHash: inv.paymentHash, expiresAt: inv.expiresAt };
    },
    async lookupInvoice(hash): Promise<InvoiceStatus> {
      const r = await read(hash);
      if (!r) throw new LightningError(`no dev invoice ${hash}`, 404);
      if (r.inv.state === 'paid') return { state: 'paid', paidMsat: r.inv.msat };
      return { state: Date.now() >= r.inv.expiresAt ? 'expired' : 'open' };
    },
    async *listPaid() {
      for await (const hash of await kv.keys()) {
        const r = await read(hash).catch(() => null);
        if (r?.inv.state === 'paid') yield { paymentHash: r.inv.paymentHash, paidMsat: r.inv.msat };
      }
    },
    subscribe(onSettled) {
      let stopped = false;
      let iter: QueuedIterator<KvWatchEntry> | undefined;
      void (async () => {
        iter = await kv.watch({ include: KvWatchInclude.UpdatesOnly });
        if (stopped) return iter.stop();
        for await (const e of iter) {
          if (e.operation !== 'PUT') continue;
          const inv = e.json<DevInvoice>();
          if (inv.state === 'paid') onSettled(inv.paymentHash);
        }
      })().catch((e) => ctx.log.warn({ err: e }, 'dev lightning: watch ended'));
      return {
        stop() {
          stopped = true;
          iter?.stop();
        },
      };
    },
    async pay(hash) {
      checkHash(hash);
      const written = await kvUpdate(kv, hash, (e) => {
        if (!e || e.operation !== 'PUT') throw new LightningError(`no dev invoice ${hash}`, 404);
        const inv = e.json<DevInvoice>();
        if (inv.state === 'paid') return undefined;
        if (Date.now() >= inv.expiresAt) throw new LightningError('the invoice has expired', 410);
        return JSON.stringify({ ...inv, state: 'paid', paidAt: Date.now() } satisfies DevInvoice);
      });
      return { alreadyPaid: written === undefined };
    },
    /** The payee every dev invoice recovers to (tests check signatures against it). */
    get pubkey() {
      return key.pubkey;
    },
  } as InvoiceBackend & { pubkey: string };
}
