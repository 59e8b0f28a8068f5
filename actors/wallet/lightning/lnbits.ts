// LNbits: invoice key in `X-Api-Key`.
//   POST /api/v1/payments {out: false, amount, memo, expiry} -> {payment_hash, payment_request | bolt11}
//   GET  /api/v1/payments/{payment_hash}                     -> {paid: boolean, preimage, details?}
//   GET  /api/v1/payments?limit=N&offset=M                   -> [{payment_hash, amount (msat, > 0 incoming), status | pending}]
import { httpClient } from './http.ts';
import { LightningError, type BackendContext, type InvoiceBackend, type InvoiceStatus } from './types.ts';

const LIST_PAGE = 500;

interface LnbitsPayment {
  payment_hash?: string;
  amount?: number;
  status?: string;
  pending?: boolean;
}

export async function createLnbitsBackend(ctx: BackendContext): Promise<InvoiceBackend> {
  const c = ctx.config.wallet.lightning;
  if (!c.apiKey) throw new LightningError('lnbits: wallet.lightning.apiKey (LNBITS_API_KEY) is not set');
  const http = httpClient(c.url, { 'X-Api-Key': c.apiKey }, { tlsCertPath: c.tlsCertPath, timeoutMs: c.timeoutMs });
  return {
    name: 'lnbits',
    async createInvoice(sats, description, expirySeconds) {
      const r = await http.json<{ payment_hash?: string; payment_request?: string; bolt11?: string }>('POST', '/api/v1/payments', {
        out: false,
        amount: sats,
        memo: description,
        expiry: expirySeconds,
        unit: 'sat',
      });
      const bolt11 = r.bolt11 ?? r.payment_request;
      if (!r.payment_hash || !bolt11) throw new LightningError('lnbits: answer without payment_hash or bolt11');
      return { bolt11, paymentHash: r.payment_hash, expiresAt: Date.now() + expirySeconds * 1000 };
    },
    async *listPaid() {
      const seen = new Set<string>();
      for (let offset = 0; ; offset += LIST_PAGE) {
        const page = await http.json<LnbitsPayment[]>('GET', `/api/v1/payments?limit=${LIST_PAGE}&offset=${offset}`);
        if (!Array.isArray(page)) throw new LightningError('lnbits: the payment list is not an array');
        let fresh = 0;
        for (const p of page) {
          if (!p.payment_hash || seen.has(p.payment_hash)) continue;
          seen.add(p.payment_hash);
          fresh++;
          // incoming only; newer LNbits say status 'success', older pending: false
          const paid = p.status !== undefined ? p.status === 'success' : p.pending === false;
          if (paid && (p.amount ?? 0) > 0) yield { paymentHash: p.payment_hash, paidMsat: p.amount! };
        }
        // an LNbits that ignores limit/offset answers everything at once: nothing new ends the list
        if (page.length < LIST_PAGE || fresh === 0) return;
      }
    },
    async lookupInvoice(hash): Promise<InvoiceStatus> {
      if (!/^[0-9a-f]{64}$/.test(hash)) throw new LightningError('malformed payment hash');
      const r = await http.json<{ paid?: boolean; status?: string; details?: { status?: string; amount?: number } }>(
        'GET',
        `/api/v1/payments/${hash}`,
      );
      if (r.paid === true) return { state: 'paid', ...(typeof r.details?.amount === 'number' ? { paidMsat: r.details.amount } : {}) };
      const st = r.details?.status ?? r.status;
      if (st === 'failed') return { state: 'failed', reason: 'failed at the node' };
      if (st === 'expired') return { state: 'expired' };
      return { state: 'open' };
    },
  };
}
