// LND over its REST proxy: macaroon in `Grpc-Metadata-macaroon` (hex), the node's TLS certificate.
//   POST /v1/invoices {value, memo, expiry}       -> {r_hash (base64), payment_request, add_index}
//   GET  /v1/invoice/{r_hash_hex}                 -> {state: OPEN|SETTLED|CANCELED|ACCEPTED, amt_paid_msat, creation_date, expiry, ...}
//   GET  /v1/invoices/subscribe                   -> newline-delimited {"result": Invoice} as invoices change
//   GET  /v1/invoices?index_offset=N&num_max_invoices=M&reversed=false
//                                                 -> {invoices: [Invoice], last_index_offset} (forward pages by add_index)
import { httpClient } from './http.ts';
import { LightningError, type BackendContext, type InvoiceBackend, type InvoiceStatus } from './types.ts';

const LIST_PAGE = 500;

interface LndInvoice {
  r_hash?: string;
  payment_request?: string;
  state?: string;
  amt_paid_msat?: string;
  settled?: boolean;
  creation_date?: string;
  expiry?: string;
}

export async function createLndBackend(ctx: BackendContext): Promise<InvoiceBackend> {
  const c = ctx.config.wallet.lightning;
  if (!c.macaroonHex) throw new LightningError('lnd: wallet.lightning.macaroonHex (LND_MACAROON) is not set');
  const http = httpClient(c.url, { 'Grpc-Metadata-macaroon': c.macaroonHex }, { tlsCertPath: c.tlsCertPath, timeoutMs: c.timeoutMs });
  const hashHex = (b64: string) => Buffer.from(b64, 'base64').toString('hex');
  return {
    name: 'lnd',
    async createInvoice(sats, description, expirySeconds) {
      const r = await http.json<{ r_hash?: string; payment_request?: string }>('POST', '/v1/invoices', {
        value: String(sats),
        memo: description,
        expiry: String(expirySeconds),
      });
      if (!r.r_hash || !r.payment_request) throw new LightningError('lnd: answer without r_hash or payment_request');
      return { bolt11: r.payment_request, paymentHash: hashHex(r.r_hash), expiresAt: Date.now() + expirySeconds * 1000 };
    },
    async lookupInvoice(hash): Promise<InvoiceStatus> {
      if (!/^[0-9a-f]{64}$/.test(hash)) throw new LightningError('malformed payment hash');
      const r = await http.json<LndInvoice>('GET', `/v1/invoice/${hash}`);
      switch (r.state) {
        case 'SETTLED':
          return { state: 'paid', paidMsat: Number(r.amt_paid_msat ?? 0) };
        case 'CANCELED': {
          // LND cancels an unpaid invoice itself once it has expired: that top-up expired, it did not fail
          const expiresAt = (Number(r.creation_date) + Number(r.expiry)) * 1000;
          if (expiresAt > 0 && Date.now() >= expiresAt) return { state: 'expired' };
          return { state: 'failed', reason: 'canceled by the node' };
        }
        case 'OPEN':
        case 'ACCEPTED':
          return { state: 'open' };
        default:
          throw new LightningError(`lnd: unknown invoice state ${String(r.state)}`);
      }
    },
    async *listPaid() {
      let offset = '0';
      for (;;) {
        const r = await http.json<{ invoices?: LndInvoice[]; last_index_offset?: string }>(
          'GET',
          `/v1/invoices?index_offset=${offset}&num_max_invoices=${LIST_PAGE}&reversed=false`,
        );
        const list = r.invoices ?? [];
        for (const inv of list)
          if (inv.state === 'SETTLED' && inv.r_hash) yield { paymentHash: hashHex(inv.r_hash), paidMsat: Number(inv.amt_paid_msat ?? 0) };
        // an empty page, or one that does not move the offset on, is the end
        if (!list.length || !r.last_index_offset || r.last_index_offset === offset) return;
        offset = r.last_index_offset;
      }
    },
    subscribe(onSettled) {
      const ac = new AbortController();
      void (async () => {
        let delay = 500;
        while (!ac.signal.aborted) {
          try {
            await http.lines(
              '/v1/invoices/subscribe',
              (line) => {
                delay = 500;
                try {
                  const inv = (JSON.parse(line) as { result?: LndInvoice }).result;
                  if (inv?.state === 'SETTLED' && inv.r_hash) onSettled(hashHex(inv.r_hash));
                } catch {
                  /* a line we do not understand: polling still covers it */
                }
              },
              ac.signal,
            );
          } catch (e) {
            if (ac.signal.aborted) return;
            ctx.log.warn({ err: (e as Error).message }, 'lnd: invoice subscription failed; retrying (polling continues)');
          }
          await new Promise((r) => setTimeout(r, delay));
          delay = Math.min(delay * 2, 30000);
        }
      })();
      return { stop: () => ac.abort() };
    },
  };
}
