// docs/labs.md lists every check of the catalogue with its level, and the check catalogue obeys
// its own rules (unique ids, a known level, at least the checks the spec names).
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../shared/config/index.ts';
import { CHECKS } from '../../actors/relay-prober/checks/index.ts';
import { BASIS_LEVELS } from '../../shared/schemas/labs-report.ts';
import { RULES, DEFINITIONAL } from '../../actors/relay-prober/checks/rules.ts';

const doc = readFileSync(join(ROOT, 'docs/labs.md'), 'utf8');

t.test('every check is documented with its level', async (t) => {
  for (const c of CHECKS) t.match(doc, new RegExp(`\\| \`${c.id}\` \\|[^\\n]*\\| ${c.basis.level} \\|`), c.id);
});

t.test('catalogue sanity', async (t) => {
  t.equal(new Set(CHECKS.map((c) => c.id)).size, CHECKS.length, 'unique ids');
  t.ok(CHECKS.every((c) => (BASIS_LEVELS as readonly string[]).includes(c.basis.level)));
  const ids = new Set(CHECKS.map((c) => c.id));
  for (const id of [
    'dns',
    'tcp',
    'websocket',
    'tls',
    'nip11-served',
    'nip11-cors',
    'nip11-fields',
    'req-eose',
    'publish-ok',
    'read-back',
    'live-delivery',
    'latency',
    'reconnect',
    'idle',
    'cleanup',
    'ok-format',
    'closed-prefix',
    'event-subid',
    'close-stops',
    'subid-replace',
    'subid-per-conn',
    'bad-signature',
    'bad-id',
    'json-escapes',
    'empty-tags',
    'duplicate',
    'filter-limit-zero',
    'filter-order',
    'filter-limit-live',
    'filter-nonmatching',
    'kind-replaceable',
    'kind-addressable',
    'kind-ephemeral',
    'delete-e',
    'delete-a',
    'delete-others',
    'nip40-expiration',
    'nip42-auth',
    'nip42-refusals',
    'nip45-count',
    'nip70-protected',
  ])
    t.ok(ids.has(id), id);
});

// The severity model: every level is justified by the NIP's own words, quoted in the basis.
t.test('every rule quotes the words its level comes from', async (t) => {
  const keyword: Record<string, RegExp> = {
    required: /\bMUST\b|\bmust\b/,
    recommended: /\bSHOULD\b|\bshould\b|expected|recommended/,
    optional: /\bMAY\b|\bcan also\b/,
  };
  for (const [name, r] of Object.entries(RULES)) {
    t.ok(r.quote.length > 10, `${name} has a quote`);
    const k = keyword[r.level];
    if (k && !DEFINITIONAL.has(name)) t.match(r.quote, k, `${name} (${r.level}) quotes its keyword`);
    if (r.level !== 'required') t.notMatch(r.quote, /\bMUST\b/, `${name} (${r.level}) does not quote a MUST`);
  }
  for (const c of CHECKS) t.ok(c.basis.quote, `${c.id} has a quote`);
  t.notOk(
    CHECKS.some((c) => c.basis.level === 'essential'),
    'no check uses the retired level essential',
  );
});

t.test('the severity model is written down', async (t) => {
  t.match(doc, /## Severity model/);
  for (const [name, r] of Object.entries(RULES)) t.ok(doc.includes(r.quote.slice(0, 40)), `${name}: quoted in docs/labs.md`);
});
