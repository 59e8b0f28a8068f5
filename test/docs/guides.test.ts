// The three worked examples that open docs/websitepro.md, docs/shots.md and docs/labs.md (curl, the
// typed client, the CLI), run as written against a real service: the gateway and the actors on a
// throwaway nats-server, real browsers, a real page on 127.0.0.1 and the labs fixture relay. Only the
// addresses are swapped (https://example.com, wss://relay.example.com, http://localhost:8080).
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startTestApp } from '../helpers/app.ts';
import { startMiniRelay } from '../labs/fixtures/mini-relay.ts';
import { ROOT } from '../../shared/config/index.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

const run = promisify(execFile);
const GUIDES = ['websitepro', 'shots', 'labs'] as const;
const KINDS = ['curl', 'client', 'cli'] as const;

/** The guide's examples, in the order they appear, and whether they come before any reference. */
function examples(service: string) {
  const doc = readFileSync(join(ROOT, `docs/${service}.md`), 'utf8');
  const first = doc.split('\n## ')[1] ?? '';
  const found = [...doc.matchAll(/<!-- example:(\w+) -->\n```\w+\n([\s\S]*?)```\n<!-- \/example -->/g)].map((m) => ({
    kind: m[1]!,
    code: m[2]!,
    inFirstSection: first.includes(m[2]!),
  }));
  return { doc, first, found };
}

t.test('each guide opens with three worked examples (curl, client, CLI) before the reference', async (t) => {
  for (const s of GUIDES) {
    const { first, found } = examples(s);
    t.match(first, /^Three worked examples\n/, `${s}: the first section is the examples`);
    t.same(
      found.map((e) => e.kind),
      [...KINDS],
      `${s}: curl, client, CLI`,
    );
    t.ok(
      found.every((e) => e.inFirstSection),
      `${s}: all in the first section`,
    );
  }
});

/** A sh block as commands: continuation lines joined, comments dropped. */
const commands = (code: string) =>
  code
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .filter((l) => l.trim() && !l.trim().startsWith('#'));

t.test('the examples work against a running service', async (t) => {
  const page = `<!doctype html><html lang="en"><head><title>Example Domain</title></head><body><div class="ad">Buy now</div>
<main><article><h1>Example Domain</h1><p>This domain is for use in illustrative examples in documents.</p>
<p><a href="https://www.iana.org/domains/example">More information...</a></p></article></main>
<div id="cookie-banner">We use cookies</div></body></html>`;
  const site = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page));
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  t.teardown(() => site.close());
  const pageUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
  const relay = await startMiniRelay({});
  t.teardown(() => relay.close());

  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter', 'browser-pool', 'relay-prober'],
    config: {
      outbound: { allowCidrs: ['127.0.0.1/32'] },
      shots: { browsers: ['chromium', 'firefox'] },
      labs: { allowedPorts: [relay.port] },
    },
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'the guides');
  const env = { ...process.env, PAYLOADS_KEY: k.key, PAYLOADS_URL: app.url, NO_COLOR: '1' };
  const local = (s: string) =>
    s
      .replaceAll('https://example.com', pageUrl)
      .replaceAll('wss://relay.example.com', relay.url)
      .replaceAll('http://localhost:8080', app.url)
      .replaceAll('npx payloads', `node ${join(ROOT, 'client/bin/payloads.mjs')}`)
      .replaceAll("'payloads-client'", `'${join(ROOT, 'client/src/index.ts')}'`);
  const tsx = fileURLToPath(import.meta.resolve('tsx'));

  for (const s of GUIDES) {
    await t.test(s, async (t) => {
      const dir = mkdtempSync(join(tmpdir(), `guide-${s}-`));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      const sh = (cmd: string) => run('bash', ['-c', cmd], { cwd: dir, env, timeout: 240_000, maxBuffer: 1 << 24 });
      const ex = Object.fromEntries(examples(s).found.map((e) => [e.kind, e.code]));

      // curl: the creation answers the finished job; the next command reads a result of it
      const [create, ...rest] = commands(local(ex.curl!));
      const created = JSON.parse((await sh(create!)).stdout);
      t.equal(created.job?.status, 'completed', `${s} curl: ${JSON.stringify(created).slice(0, 300)}`);
      t.ok(
        created.job.results.every((r: { status: string }) => r.status === 'done'),
        `${s} curl: every result delivered`,
      );
      for (let cmd of rest) {
        cmd = cmd.replaceAll('<id>', created.job.id);
        // a key that names a browser version: this machine's version
        for (const r of created.job.results as { key: string }[])
          cmd = cmd.replace(new RegExp(r.key.replace(/-\d+_/, '-\\d+_').replaceAll('.', '\\.')), r.key);
        const out = await sh(cmd);
        const file = / -o (\S+)/.exec(cmd)?.[1];
        t.ok(file ? statSync(join(dir, file)).size > 0 : out.stdout.length > 0, `${s} curl: ${cmd.slice(0, 80)}…`);
      }

      // the client, as a script of its own
      writeFileSync(join(dir, `${s}.mts`), local(ex.client!));
      const client = await run(process.execPath, ['--import', tsx, `${s}.mts`], { cwd: dir, env, timeout: 240_000 });
      t.notMatch(client.stdout, /\b(failed|undefined)\b/, `${s} client: ${client.stdout}`);

      // the CLI: exit code 0 is "delivered"
      await t.resolves(sh(commands(local(ex.cli!))[0]!), `${s} CLI exits 0`);
    });
  }
});
