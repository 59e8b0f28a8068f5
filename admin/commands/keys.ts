import type { AdminCommand } from '../command.ts';
import { createKey } from '../../shared/keys.ts';

export const commands: AdminCommand[] = [
  {
    name: 'key create',
    usage: 'key create                 print a new API key for a new, empty wallet',
    async run(_args, { nc, out }) {
      const { key, walletId } = await createKey(nc, 'admin');
      out(key);
      process.stderr.write(`wallet ${walletId}; the key is shown once and stored only as a hash\n`);
      return 0;
    },
  },
];
