// Core Lightning through clnrest: `Rune` header, every RPC method as POST /v1/<method>.
//   invoice {amount_msat, label, description, expiry} -> {payment_hash, bolt11, expires_at}
//   listinvoices {payment_hash}                         -> {invoices: [{status: unpaid|paid|expired, amount_received_msat}]}
//   listinvoices {index: created, start, limit}         -> pages of every invoice by created_index (v23.08+)
// (waitanyinvoice would push settlements; polling listinvoices is used instead, so a restart needs no pay_index.)
import { randomBytes } from 'node:crypto';
import { httpClient } from './http.ts';
import { LightningError, type BackendContext, type InvoiceBackend, type InvoiceStatus } from './types.ts';

const LIST_PAGE = 500;

export async function createClnBackend(ctx: BackendContext): Promise<InvoiceBackend> {
  const c = ctx.config.wallet.lightning;
  if (!c.rune) throw new LightningError('cln: wallet.lightning.rune (CLN_RUNE) is not set');
  const http = httpClient(c.url, { Rune: c.rune }, { tlsCertPath: c.tlsCertPath, timeoutMs: c.timeoutMs });
  return {
    name: 'cln',
    async createInvoice(sats, description, expirySeconds) {
      // Labels must be unique on the node.
      const label = `payloads-${Date.now()}-${randomBytes(6).toString('hex')}`;
      const r = await http.json<{ payment_hash?: string; bolt11?: string; expires_at?: number }>('POST', '/v1/invoice', {
        amount_msat: sats * 1000,
        label,
        description,
        expiry: expirySeconds,
      });
      if (!r.payment_hash || !r.bolt11) throw new LightningError('cln: answer without payment_hash or bolt11');
      return {
        bolt11: r.bolt11,
        paymentHash: r.payment_hash,
        expiresAt: r.expires_at ? r.expires_at * 1000 : Date.now() + expirySeconds * 1000,
      };
    },
    async *listPaid() {
      let start = 0;
      for (;;) {
        const r = await http.json<{
          invoices?: { payment_hash?: string; status?: string; amount_received_msat?: number; created_index?: number }[];
        }>('POST', '/v1/listinvoices', { index: 'created', start, limit: LIST_PAGE });
        const list = r.invoices ?? [];
        for (const inv of list)
          if (inv.status === 'paid' && inv.payment_hash)
            yield {
              paymentHash: inv.payment_hash,
              ...(inv.amount_received_msat !== undefined ? { paidMsat: Number(inv.amount_received_msat) } : {}),
            };
        const last = Math.max(...list.map((i) => i.created_index ?? -1));
        if (list.length < LIST_PAGE || last < start) return;
        start = last + 1;
      }
    },
    async lookupInvoice(hash): Promise<InvoiceStatus> {
      if (!/^[0-9a-f]{64}$/.test(hash)) throw new LightningError('malformed payment hash');
      const r = await http.json<{ invoices?: { status?: string; amount_received_msat?: number }[] }>('POST', '/v1/listinvoices', {
        payment_hash: hash,
      });
      const inv = r.invoices?.[0];
      if (!inv) throw new LightningError(`cln: no invoice ${hash}`, 404);
      if (inv.status === 'paid')
        return { state: 'paid', ...(inv.amount_received_msat !== undefined ? { paidMsat: Number(inv.amount_received_msat) } : {}) };
      if (inv.status === 'expired') return { state: 'expired' };
      return { state: 'open' };
    },
  };
}
