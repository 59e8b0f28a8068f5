import type { AdminCommand } from '../command.ts';
import { keysBucket, type KeyRecord } from '../../shared/keys.ts';
import { newApiKey, newId, hashKey } from '../../shared/ids.ts';

export const commands: AdminCommand[] = [
  {
    name: 'key create',
    usage: 'key create                 print a new API key for a new, empty wallet',
    async run(_args, { nc, out, retry }) {
      // made once, before the first try: a try that timed out may have stored it, and the next
      // must find that record rather than make a second key (and wallet) the operator never sees
      const key = newApiKey();
      const record: KeyRecord = { walletId: newId('w'), createdAt: Date.now(), via: 'admin' };
      await retry('the keys bucket', async () => {
        const kv = await keysBucket(nc);
        try {
          await kv.create(hashKey(key), JSON.stringify(record));
        } catch (e) {
          const stored = await kv.get(hashKey(key));
          if (stored?.operation === 'PUT' && stored.json<KeyRecord>().walletId === record.walletId) return;
          throw e;
        }
      });
      out(key);
      process.stderr.write(`wallet ${record.walletId}; the key is shown once and stored only as a hash\n`);
      return 0;
    },
  },
];
