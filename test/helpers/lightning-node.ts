// Lightning nodes for the wallet tests: the pieces a fake node's REST API is made of (real BOLT11
// invoices signed by a test node key, JSON bodies, a loopback server closed at teardown) and one
// Core Lightning REST (clnrest) node with the knobs the tests turn: what it answers as an
// invoice's expiry, forgetting every invoice (a database reset), and how often it was asked.
// test/wallet/_nodes.ts builds the LND and LNbits nodes on the same pieces.
import http from 'node:http';
import type https from 'node:https';
import { randomBytes, createHash } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { encodeInvoice } from '../../actors/wallet/lightning/bolt11.ts';

type Tap = { teardown(fn: () => unknown): void };
const nodeKey = secp256k1.utils.randomSecretKey();

/** A real regtest invoice, signed by this fixture's node key, for a fresh payment hash. */
export function makeInvoice(sats: number, description: string, expiry: number) {
  const hash = createHash('sha256').update(randomBytes(32)).digest();
  const bolt11 = encodeInvoice(
    {
      network: 'bcrt',
      msat: BigInt(sats) * 1000n,
      timestamp: Math.floor(Date.now() / 1000),
      paymentHash: hash,
      paymentSecret: randomBytes(32),
      description,
      expirySeconds: expiry,
    },
    nodeKey,
  );
  return { hash: hash.toString('hex'), bolt11 };
}

/** The request's JSON body (undefined when empty). */
export async function readJson(req: http.IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
}

export const send = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** Listen on a free loopback port (closed at teardown); answers the port. */
export function listen(t: Tap, server: http.Server | https.Server): Promise<number> {
  t.teardown(
    () =>
      new Promise((r) => {
        server.closeAllConnections?.();
        server.close(() => r(undefined));
      }),
  );
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as { port: number }).port)));
}

export interface ClnInvoice {
  hash: string;
  bolt11: string;
  label: string;
  msat: number;
  status: 'unpaid' | 'paid' | 'expired';
  expiresAt: number;
  index: number;
}

export interface ClnNode {
  /** wallet.lightning settings that point the cln backend at this node. */
  lightning: { backend: 'cln'; url: string; rune: string };
  /** By payment hash, in creation order; set `status` to pay or expire one. */
  invoices: Map<string, ClnInvoice>;
  labels: Set<string>;
  /** listinvoices requests for one invoice so far. */
  lookups(): number;
  /** The expires_at (seconds) the node answers for a new invoice; default: now + its expiry. */
  expiresAt: (expirySeconds: number) => number;
  /** When true, the node knows no invoice any more (a database reset). */
  forgetful: boolean;
}

/** clnrest: Rune header, POST /v1/<method>; listinvoices by payment_hash, or by {index: created, start, limit}. */
export async function startClnNode(t: Tap): Promise<ClnNode> {
  let lookups = 0;
  const node: ClnNode = {
    lightning: { backend: 'cln', url: '', rune: 'rune-abc' },
    invoices: new Map(),
    labels: new Set(),
    lookups: () => lookups,
    expiresAt: (expiry) => Math.floor(Date.now() / 1000) + expiry,
    forgetful: false,
  };
  const asCln = (i: ClnInvoice) => ({
    label: i.label,
    payment_hash: i.hash,
    bolt11: i.bolt11,
    status: i.status,
    amount_msat: i.msat,
    created_index: i.index,
    expires_at: i.expiresAt,
    ...(i.status === 'paid' ? { amount_received_msat: i.msat, paid_at: Math.floor(Date.now() / 1000) } : {}),
  });
  const server = http.createServer(async (req, res) => {
    if (req.headers.rune !== node.lightning.rune) return send(res, 401, { code: 1501, message: 'Not authorized: Not a valid rune' });
    const b = (await readJson(req)) ?? {};
    if (req.method === 'POST' && req.url === '/v1/invoice') {
      if (node.labels.has(b.label)) return send(res, 500, { code: 900, message: 'Duplicate label' });
      node.labels.add(b.label);
      const { hash, bolt11 } = makeInvoice(b.amount_msat / 1000, b.description, b.expiry);
      const inv: ClnInvoice = {
        hash,
        bolt11,
        label: b.label,
        msat: b.amount_msat,
        status: 'unpaid',
        expiresAt: node.expiresAt(b.expiry),
        index: node.invoices.size + 1,
      };
      node.invoices.set(hash, inv);
      return send(res, 201, {
        payment_hash: hash,
        bolt11,
        expires_at: inv.expiresAt,
        payment_secret: randomBytes(32).toString('hex'),
        created_index: inv.index,
      });
    }
    if (req.method === 'POST' && req.url === '/v1/listinvoices') {
      const all = node.forgetful ? [] : [...node.invoices.values()];
      if (b.payment_hash) {
        lookups++;
        return send(res, 201, { invoices: all.filter((i) => i.hash === b.payment_hash).map(asCln) });
      }
      const list = b.index === 'created' ? all.filter((i) => i.index >= (b.start ?? 0)).slice(0, b.limit ?? all.length) : all;
      return send(res, 201, { invoices: list.map(asCln) });
    }
    send(res, 404, { code: -32601, message: 'Unknown command' });
  });
  node.lightning.url = `http://127.0.0.1:${await listen(t, server)}`;
  return node;
}
