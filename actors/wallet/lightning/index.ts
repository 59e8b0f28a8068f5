// The registry of invoice backends: config names one (wallet.lightning.backend), this makes it.
import type { BackendContext, InvoiceBackend } from './types.ts';
import { createDevBackend } from './dev.ts';
import { createLndBackend } from './lnd.ts';
import { createLnbitsBackend } from './lnbits.ts';
import { createClnBackend } from './cln.ts';

export * from './types.ts';

export const BACKENDS: Record<string, (ctx: BackendContext) => Promise<InvoiceBackend>> = {
  dev: createDevBackend,
  lnd: createLndBackend,
  lnbits: createLnbitsBackend,
  cln: createClnBackend,
};

export async function createBackend(ctx: BackendContext): Promise<InvoiceBackend> {
  const name = ctx.config.wallet.lightning.backend;
  const make = BACKENDS[name];
  if (!make) throw new Error(`unknown Lightning backend ${name}; known: ${Object.keys(BACKENDS).join(', ')}`);
  return make(ctx);
}
