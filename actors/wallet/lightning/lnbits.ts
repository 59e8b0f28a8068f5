// LNbits: invoice key in `X-Api-Key`.
//   POST /api/v1/payments {out: false, amount, memo, expiry} -> {payment_hash, payment_request | bolt11}
//   GET  /api/v1/payments/{payment_hash}                     -> {paid: boolean, preimage, details?}
import { httpClient } from './http.ts';
import { LightningError, type BackendContext, type InvoiceBackend, type InvoiceStatus } from './types.ts';

export async function createLnbitsBackend(ctx: BackendContext): Promise<InvoiceBackend> {
  const c = ctx.config.wallet.lightning;
  if (!c.apiKey) throw new LightningError('lnbits: wallet.lightning.apiKey (LNBITS_API_KEY) is not set');
  const http = httpClient(c.url, { 'X-Api-Key': c.apiKey }, { tlsCertPath: c.tlsCertPath, timeoutMs: c.timeoutMs });
  return {
    name: 'lnbits',
    async createInvoice(sats, description, expirySeconds) {
      const r = await http.json<{ payment_hash?: string; payment_request?: string; bolt11?: string }>('POST', '/api/v1/payments', { out: false, amount: sats, memo: description, expiry: expirySeconds, unit: 'sat' });
      const bolt11 = r.bolt11 ?? r.payment_request;
      if (!r.payment_hash || !bolt11) throw new LightningError('lnbits: answer without payment_hash or bolt11');
      return { bolt11, paymentHash: r.payment_hash, expiresAt: Date.now() + expirySeconds * 1000 };
    },
    async lookupInvoice(hash): Promise<InvoiceStatus> {
      if (!/^[0-9a-f]{64}$/.test(hash)) throw new LightningError('malformed payment hash');
      const r = await http.json<{ paid?: boolean; status?: string; details?: { status?: string; amount?: number } }>('GET', `/api/v1/payments/${hash}`);
      if (r.paid === true) return { state: 'paid', ...(typeof r.details?.amount === 'number' ? { paidMsat: r.details.amount } : {}) };
      const st = r.details?.status ?? r.status;
      if (st === 'failed') return { state: 'failed', reason: 'failed at the node' };
      if (st === 'expired') return { state: 'expired' };
      return { state: 'open' };
    },
  };
}
