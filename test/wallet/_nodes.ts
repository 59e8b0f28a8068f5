// Local servers speaking the REST APIs of LND, LNbits and Core Lightning (clnrest) closely enough
// for the wallet's backends: create, look up and list invoices, with each node's auth header, and a
// hand to mark an invoice paid or unpaid (what a real payment, or a node's own record, would do).
// The pieces they are made of (real BOLT11 invoices, JSON bodies, a listening server, a node's
// self-signed TLS certificate) are exported for tests that need a node behaving otherwise.
import http from 'node:http';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/nats.ts';
import { makeInvoice, readJson, send, listen, startClnNode } from '../helpers/lightning-node.ts';

export type Tap = { teardown(fn: () => unknown): void };

export interface FakeNode {
  /** wallet.lightning settings that point the backend at this node. */
  lightning: Record<string, unknown>;
  pay(hash: string): void;
  unpay(hash: string): void;
  /** Payment hashes in creation order. */
  hashes(): string[];
}

interface Inv {
  hash: string;
  msat: number;
  paid: boolean;
  bolt11: string;
  label: string;
  index: number;
}

export { makeInvoice, readJson, send, listen } from '../helpers/lightning-node.ts';

function store() {
  const invoices = new Map<string, Inv>();
  return {
    invoices,
    add(sats: number, description: string, expiry: number, label = '') {
      const { hash, bolt11 } = makeInvoice(sats, description, expiry);
      const inv = { hash, msat: sats * 1000, paid: false, bolt11, label, index: invoices.size + 1 };
      invoices.set(hash, inv);
      return inv;
    },
    node(lightning: Record<string, unknown>): FakeNode {
      return {
        lightning,
        pay: (h) => {
          invoices.get(h)!.paid = true;
        },
        unpay: (h) => {
          invoices.get(h)!.paid = false;
        },
        hashes: () => [...invoices.keys()],
      };
    },
  };
}

/** A self-signed certificate for 127.0.0.1, as an LND node makes its own (tls.cert). */
export function selfSignedCert(): { key: string; cert: string; certPath: string } {
  const dir = tempDir('payloads-tls-');
  const keyPath = join(dir, 'tls.key');
  const certPath = join(dir, 'tls.cert');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8'), certPath };
}

/** LND REST: TLS with its own certificate, hex macaroon header; listinvoices pages by add_index (at most 2 per page here, so paging is exercised). */
export async function fakeLnd(t: Tap): Promise<FakeNode> {
  const tls = selfSignedCert();
  const macaroon = randomBytes(32).toString('hex');
  const s = store();
  const asLnd = (i: Inv) => ({
    r_hash: Buffer.from(i.hash, 'hex').toString('base64'),
    payment_request: i.bolt11,
    value: String(i.msat / 1000),
    add_index: String(i.index),
    state: i.paid ? 'SETTLED' : 'OPEN',
    settled: i.paid,
    amt_paid_msat: i.paid ? String(i.msat) : '0',
  });
  const server = https.createServer({ key: tls.key, cert: tls.cert }, async (req, res) => {
    if (req.headers['grpc-metadata-macaroon'] !== macaroon)
      return send(res, 401, { code: 2, message: 'verification failed: signature mismatch after caveat verification', details: [] });
    const url = new URL(req.url!, 'https://x');
    if (req.method === 'POST' && url.pathname === '/v1/invoices') {
      const b = await readJson(req);
      const inv = s.add(Number(b.value), b.memo, Number(b.expiry));
      return send(res, 200, { r_hash: asLnd(inv).r_hash, payment_request: inv.bolt11, add_index: String(inv.index) });
    }
    if (req.method === 'GET' && url.pathname === '/v1/invoices') {
      const offset = Number(url.searchParams.get('index_offset') ?? 0);
      const max = Math.min(2, Number(url.searchParams.get('num_max_invoices') ?? 100));
      if (url.searchParams.get('reversed') !== 'false') return send(res, 400, { code: 3, message: 'this fixture pages forwards only' });
      const page = [...s.invoices.values()].filter((i) => i.index > offset).slice(0, max);
      return send(res, 200, {
        invoices: page.map(asLnd),
        first_index_offset: String(page[0]?.index ?? 0),
        last_index_offset: String(page.at(-1)?.index ?? 0),
      });
    }
    const m = /^\/v1\/invoice\/([0-9a-f]{64})$/.exec(url.pathname);
    if (req.method === 'GET' && m) {
      const inv = s.invoices.get(m[1]!);
      return inv ? send(res, 200, asLnd(inv)) : send(res, 404, { code: 5, message: 'unable to locate invoice', details: [] });
    }
    if (url.pathname === '/v1/invoices/subscribe') {
      res.writeHead(200);
      return;
    } // held open, never pushes: polling and reconciliation do the work
    send(res, 404, { code: 5, message: 'Not Found' });
  });
  const port = await listen(t, server);
  return s.node({ backend: 'lnd', url: `https://127.0.0.1:${port}`, macaroonHex: macaroon, tlsCertPath: tls.certPath });
}

/** LNbits: invoice key in X-Api-Key; GET /api/v1/payments?limit&offset lists newest first, incoming with amount > 0 (msat). */
export async function fakeLnbits(t: Tap): Promise<FakeNode> {
  const s = store();
  const server = http.createServer(async (req, res) => {
    if (req.headers['x-api-key'] !== 'invoice-key') return send(res, 401, { detail: 'Invalid key' });
    const url = new URL(req.url!, 'http://x');
    if (req.method === 'POST' && url.pathname === '/api/v1/payments') {
      const b = await readJson(req);
      const inv = s.add(b.amount, b.memo, b.expiry);
      return send(res, 201, { payment_hash: inv.hash, bolt11: inv.bolt11, checking_id: inv.hash });
    }
    if (req.method === 'GET' && url.pathname === '/api/v1/payments') {
      const limit = Number(url.searchParams.get('limit') ?? 1000);
      const offset = Number(url.searchParams.get('offset') ?? 0);
      // an outgoing payment of the same wallet: negative amount, never a top-up
      const out = { payment_hash: 'ff'.repeat(32), amount: -5000, status: 'success', pending: false };
      const all = [
        out,
        ...[...s.invoices.values()].reverse().map((i) => ({
          payment_hash: i.hash,
          bolt11: i.bolt11,
          amount: i.msat,
          status: i.paid ? 'success' : 'pending',
          pending: !i.paid,
        })),
      ];
      return send(res, 200, all.slice(offset, offset + limit));
    }
    const m = /^\/api\/v1\/payments\/([0-9a-f]{64})$/.exec(url.pathname);
    if (req.method === 'GET' && m) {
      const inv = s.invoices.get(m[1]!);
      if (!inv) return send(res, 404, { detail: 'Payment does not exist.' });
      return send(res, 200, { paid: inv.paid, details: { status: inv.paid ? 'success' : 'pending', amount: inv.msat } });
    }
    send(res, 404, { detail: 'Not Found' });
  });
  const port = await listen(t, server);
  return s.node({ backend: 'lnbits', url: `http://127.0.0.1:${port}/`, apiKey: 'invoice-key' });
}

/** clnrest (test/helpers/lightning-node.ts), as a FakeNode. */
export async function fakeCln(t: Tap): Promise<FakeNode> {
  const n = await startClnNode(t);
  return {
    lightning: n.lightning,
    pay: (h) => {
      n.invoices.get(h)!.status = 'paid';
    },
    unpay: (h) => {
      n.invoices.get(h)!.status = 'unpaid';
    },
    hashes: () => [...n.invoices.keys()],
  };
}
