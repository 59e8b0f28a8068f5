import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, ConfigError } from '../../shared/config/index.ts';
import { tempDir } from '../helpers/nats.ts';

t.test('defaults are complete and valid', async (t) => {
  const c = loadConfig({ env: {}, noDefaultFile: true });
  t.equal(c.server.port, 8080);
  t.equal(c.limits.jobsPerHour, 600);
  t.equal(c.limits.bodyBytes, 65536);
  t.equal(c.retention.websitepro, 86400);
  t.equal(c.retention.labs, 30 * 86400);
  t.same(c.outbound.allowCidrs, [], 'no private address allowed by default');
  t.equal(c.server.baseUrl, 'http://localhost:8080');
});

t.test('environment variables override files; PORT and DATA_DIR honoured', async (t) => {
  const dir = tempDir();
  const file = join(dir, 'c.json');
  writeFileSync(file, JSON.stringify({ server: { port: 9000 }, limits: { jobsPerHour: 5 } }));
  const c = loadConfig({
    env: { CONFIG_FILE: file, PORT: '9100', DATA_DIR: dir, NATS_URL: 'nats://a:4222,nats://b:4222', BROWSERS: 'chromium, firefox' },
    noDefaultFile: true,
  });
  t.equal(c.server.port, 9100);
  t.equal(c.limits.jobsPerHour, 5);
  t.equal(c.dataDir, dir);
  t.equal(c.nats.url, 'nats://a:4222,nats://b:4222');
  t.same(c.shots.browsers, ['chromium', 'firefox']);
});

t.test('a bad setting is refused with an error naming it', async (t) => {
  t.throws(() => loadConfig({ env: { PORT: 'eighty' }, noDefaultFile: true }), { name: 'ConfigError', message: /PORT.*server\.port/ });
  t.throws(() => loadConfig({ env: { PORT: '70000' }, noDefaultFile: true }), { message: /server\.port must be <= 65535/ });
  t.throws(() => loadConfig({ env: {}, noDefaultFile: true, overrides: { limits: { jobsPerHour: 0 } } }), {
    message: /limits\.jobsPerHour/,
  });
  t.throws(() => loadConfig({ env: {}, noDefaultFile: true, overrides: { pricing: { websitepro: { pdf: 'cheap' } } } }), {
    message: /pricing\.websitepro\.pdf must be integer/,
  });
  t.throws(() => loadConfig({ env: {}, noDefaultFile: true, overrides: { nope: 1 } }), { message: /additional properties \(nope\)/ });
  const dir = tempDir();
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, '{ not json');
  t.throws(() => loadConfig({ env: { CONFIG_FILE: bad }, noDefaultFile: true }), ConfigError);
});

t.test('production mode refuses development-only parts', async (t) => {
  t.throws(() => loadConfig({ env: { MODE: 'production' }, noDefaultFile: true }), { message: /dev.*refused in production/ });
  t.throws(
    () =>
      loadConfig({
        env: { MODE: 'production', LIGHTNING_BACKEND: 'lnd', RATE_PROVIDER: 'exchanges' },
        noDefaultFile: true,
        overrides: { outbound: { allowCidrs: ['10.0.0.0/8'] } },
      }),
    { message: /allowCidrs/ },
  );
  const c = loadConfig({ env: { MODE: 'production', LIGHTNING_BACKEND: 'lnd', RATE_PROVIDER: 'exchanges' }, noDefaultFile: true });
  t.equal(c.server.mode, 'production');
});

t.test('the shipped config/default.json is valid', async (t) => {
  t.doesNotThrow(() => loadConfig({ env: {} }));
});
