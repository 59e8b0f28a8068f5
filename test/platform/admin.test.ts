import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestNats } from '../helpers/nats.ts';
import { keysBucket, lookupKey } from '../../shared/keys.ts';
import { hashKey } from '../../shared/ids.ts';

const run = promisify(execFile);

t.test('admin key create prints a key stored only as a hash', async (t) => {
  const { nc, server, config } = await startTestNats(t);
  const { stdout } = await run(process.execPath, ['admin/main.ts', 'key', 'create'], {
    env: { ...process.env, NATS_URL: server.url, DATA_DIR: config.dataDir },
  });
  const key = stdout.trim();
  t.match(key, /^pk_[A-Za-z0-9_-]{43}$/);
  const kv = await keysBucket(nc);
  t.ok(await lookupKey(kv, key), 'the key authenticates');
  const stored = await kv.get(hashKey(key));
  t.notMatch(stored!.string(), key, 'the plain key is not stored');
  const keys = [];
  for await (const k of await kv.keys()) keys.push(k);
  t.notOk(keys.includes(key), 'the bucket key is the hash');
});

t.test('an unknown subcommand prints usage and exits 2', async (t) => {
  const err = await run(process.execPath, ['admin/main.ts', 'frobnicate'], { env: { ...process.env } }).catch((e) => e);
  t.equal(err.code, 2);
  t.match(err.stderr, /key create/);
});
