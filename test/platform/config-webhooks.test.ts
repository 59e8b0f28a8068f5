import t from 'tap';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, deprecatedSettings, ConfigError } from '../../shared/config/index.ts';

// Webhooks serve every service, so their settings live in `webhooks.*`; the names from when only
// labs sent them (`labs.webhook*`) keep working for existing deployments, and are reported.

t.test('webhooks.* has the defaults the labs.webhook* settings had', async (t) => {
  const c = loadConfig({ env: {}, noDefaultFile: true });
  t.same(c.webhooks, { retries: 5, backoffMs: 2000, timeoutMs: 10000, signingKey: '' });
  t.same(deprecatedSettings(c), [], 'nothing deprecated used');
});

t.test('the old labs.webhook* names still set the webhooks.* settings, and are reported as deprecated', async (t) => {
  const seed = 'ab'.repeat(32);
  const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'old.json');
  writeFileSync(file, JSON.stringify({ labs: { webhookRetries: 1, webhookBackoffMs: 7, webhookTimeoutMs: 300, webhookSigningKey: seed } }));
  const c = loadConfig({ env: { CONFIG_FILE: file }, noDefaultFile: true });
  t.same(c.webhooks, { retries: 1, backoffMs: 7, timeoutMs: 300, signingKey: seed });
  t.same(deprecatedSettings(c), [
    'labs.webhookRetries (use webhooks.retries)',
    'labs.webhookBackoffMs (use webhooks.backoffMs)',
    'labs.webhookTimeoutMs (use webhooks.timeoutMs)',
    'labs.webhookSigningKey (use webhooks.signingKey)',
  ]);
});

t.test('the new name wins when both are given', async (t) => {
  const c = loadConfig({ env: {}, noDefaultFile: true, overrides: { labs: { webhookRetries: 1 }, webhooks: { retries: 9 } } });
  t.equal(c.webhooks.retries, 9);
});

t.test('an old name with a bad value is refused like the new one', async (t) => {
  t.throws(() => loadConfig({ env: {}, noDefaultFile: true, overrides: { labs: { webhookRetries: -1 } } }), ConfigError);
  t.throws(() => loadConfig({ env: {}, noDefaultFile: true, overrides: { webhooks: { retries: -1 } } }), ConfigError);
});
