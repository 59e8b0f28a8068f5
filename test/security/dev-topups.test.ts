// Issue 27 item 5: with the defaults (MODE=development, the dev Lightning backend) POST
// /account/dev-pay settles any top-up for free, and only HOST=127.0.0.1 kept that to one machine.
// The gateway now refuses a non-loopback address with the dev backend unless the operator sets
// UNSAFE_DEV_TOPUPS_ON_PUBLIC_ADDRESS=1, and says at start what is on.
import t from 'tap';
import { Writable } from 'node:stream';
import pino from 'pino';
import { startTestNats } from '../helpers/nats.ts';
import { startGateway } from '../../gateway/index.ts';
import { devTopupGuard, isLoopbackHost } from '../../gateway/dev-guard.ts';
import { loadConfig } from '../../shared/config/index.ts';

const cfg = (server: Record<string, unknown>, wallet: Record<string, unknown> = {}) =>
  loadConfig({ env: {}, noDefaultFile: true, overrides: { server, wallet } });

t.test('which hosts are loopback', async (t) => {
  for (const h of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1']) t.ok(isLoopbackHost(h), h);
  for (const h of ['0.0.0.0', '::', '192.168.1.5', '10.0.0.1', 'example.com', '2001:db8::1']) t.notOk(isLoopbackHost(h), h);
});

t.test('the guard: refuse, warn or say nothing', async (t) => {
  t.match(devTopupGuard(cfg({ host: '0.0.0.0' })).refuse, /refusing to listen on 0\.0\.0\.0.*UNSAFE_DEV_TOPUPS_ON_PUBLIC_ADDRESS=1/);
  t.match(devTopupGuard(cfg({ host: '::' })).refuse, /refusing/);
  const optIn = devTopupGuard(cfg({ host: '0.0.0.0', unsafeDevTopupsOnPublicAddress: true }));
  t.notOk(optIn.refuse, 'the explicit opt-in starts');
  t.match(optIn.warn, /^UNSAFE: .*for free/, 'and says so loudly');
  t.match(devTopupGuard(cfg({ host: '127.0.0.1' })).warn, /for free; listening on loopback/, 'on loopback it starts and says so');
  t.same(
    devTopupGuard(cfg({ host: '0.0.0.0' }, { lightning: { backend: 'lnd', url: 'https://127.0.0.1:1' } })),
    {},
    'a real backend: nothing to say',
  );
  const env = loadConfig({ env: { HOST: '0.0.0.0', UNSAFE_DEV_TOPUPS_ON_PUBLIC_ADDRESS: '1' }, noDefaultFile: true });
  t.equal(env.server.unsafeDevTopupsOnPublicAddress, true, 'the environment variable sets it');
});

t.test('the gateway does not start on a public address with the dev backend', async (t) => {
  const tn = await startTestNats(t);
  const config = { ...tn.config, server: { ...tn.config.server, host: '0.0.0.0' } };
  const err = await startGateway({ nc: tn.nc, config, log: pino({ level: 'silent' }), instanceId: 'gw-dev' }).then(
    (g) => g.stop().then(() => null),
    (e: Error) => e,
  );
  t.match(err?.message, /refusing to listen on 0\.0\.0\.0/, 'refused before listening');
});

t.test('on loopback it starts and warns at start', async (t) => {
  const tn = await startTestNats(t);
  const lines: string[] = [];
  const log = pino(
    { level: 'warn' },
    new Writable({
      write(c, _e, cb) {
        lines.push(String(c));
        cb();
      },
    }),
  );
  const g = await startGateway({ nc: tn.nc, config: tn.config, log, instanceId: 'gw-dev-2' });
  t.teardown(() => g.stop());
  t.ok(
    lines.some((l) => /dev-pay settles any top-up for free/.test(l)),
    'the start says free top-ups are on',
  );
});
