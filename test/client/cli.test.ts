// The `payloads` CLI as a child process against the running system (gateway, wallet, supervisor,
// test workers): balance, a bad key, convert, shots with the event stream, a top-up paid through
// the dev Lightning node, and a download cut off mid-body.
import t from 'tap';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJobsApi } from '../jobs/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { runCli, startCli } from './run-cli.ts';
import { testLog } from '../helpers/nats.ts';
import { startCompareWorker } from '../../actors/browser-pool/compare.ts';

const dir = mkdtempSync(join(tmpdir(), 'payloads-cli-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('balance, a bad key, no key, the config file', async (t) => {
  const s = await startJobsApi(t);
  const w = await s.newWallet(12345);
  const env = { PAYLOADS_URL: s.url, PAYLOADS_KEY: w.key };
  const b = await runCli(['balance'], env);
  t.equal(b.code, 0, b.stderr);
  t.match(b.stdout, /^12345 Payloads \(€1\.2345\)/);
  const j = await runCli(['--json', 'balance'], env);
  t.match(JSON.parse(j.stdout), { balance: 12345 });

  const bad = await runCli(['balance'], { ...env, PAYLOADS_KEY: 'pk_not_a_key' });
  t.equal(bad.code, 2, 'the API refused: exit code 2');
  t.match(bad.stderr, /^payloads: unauthorized: unknown API key/);
  t.equal(bad.stdout, '');

  const none = await runCli(['balance'], { PAYLOADS_URL: s.url });
  t.equal(none.code, 2);
  t.match(none.stderr, /no API key: set PAYLOADS_KEY/);

  const cfg = join(dir, 'config.json');
  writeFileSync(cfg, JSON.stringify({ key: w.key, url: s.url }));
  const viaFile = await runCli(['balance'], { PAYLOADS_CONFIG: cfg });
  t.equal(viaFile.code, 0, viaFile.stderr);
  t.match(viaFile.stdout, /^12345 Payloads/);

  const down = await runCli(['balance'], { PAYLOADS_KEY: w.key, PAYLOADS_URL: 'http://127.0.0.1:1' });
  t.equal(down.code, 3, 'network: exit code 3');
  t.match(down.stderr, /payloads: network: cannot reach the API/);
});

t.test('convert: one output to a file, to stdout, a failed output exits 1', async (t) => {
  const s = await startJobsApi(t);
  const w = await s.newWallet(1000);
  const env = { PAYLOADS_URL: s.url, PAYLOADS_KEY: w.key };
  const out = join(dir, 'page.md');
  const r = await runCli(['convert', s.targetUrl, '--markdown', '--out', out], env);
  t.equal(r.code, 0, r.stderr);
  t.match(readFileSync(out, 'utf8'), /^result markdown of job job_/, 'the downloaded result');
  t.notOk(existsSync(`${out}.part`));
  const text = await runCli(['convert', s.targetUrl, '--text'], env);
  t.equal(text.code, 0, text.stderr);
  t.match(text.stdout, /^result text of job job_/);
  const failed = await runCli(['convert', `${s.targetUrl}/?behave.text=fail`, '--text', '--markdown', '--out', join(dir, 'both')], env);
  t.equal(failed.code, 1, 'a failed output: exit code 1');
  t.match(failed.stderr, /text\s*│\s*failed \(refunded\)/);
  t.ok(existsSync(join(dir, 'both', 'markdown.txt')), 'the delivered one is saved');
  t.equal(await s.balance(w.walletId), 1000 - 30 - 20 - 30, 'the failed output was refunded');
});

t.test('shots: results saved as the events announce them, a table at the end', async (t) => {
  const s = await startJobsApi(t);
  const w = await s.newWallet(1000);
  const out = join(dir, 'shots');
  const r = await runCli(
    [
      'shots',
      `${s.targetUrl}/?behave=progress`,
      '--browsers',
      'testbrowser',
      '--viewports',
      'fhd,phone',
      '--dark',
      '--light',
      '--out',
      out,
    ],
    { PAYLOADS_URL: s.url, PAYLOADS_KEY: w.key },
  );
  t.equal(r.code, 0, r.stderr);
  const files = readdirSync(out).sort();
  t.same(files, [
    'testbrowser-2_1920x1080_dark.png',
    'testbrowser-2_1920x1080_light.png',
    'testbrowser-2_390x844_dark.png',
    'testbrowser-2_390x844_light.png',
  ]);
  for (const f of files) t.same(readFileSync(join(out, f)).subarray(0, 4), Buffer.from([0x89, 0x50, 0x4e, 0x47]), `${f} is a PNG`);
  t.match(r.stdout, /testbrowser-2_390x844_dark\.png\s*│\s*done/);
  t.match(r.stderr, /job job_\w+: 4 screenshots, 200 Payloads/);
});

t.test('shots --compare: the diff summary as a table', async (t) => {
  const s = await startJobsApi(t);
  const cw = await startCompareWorker({ nc: await s.connect('compare'), config: s.config, log: testLog() });
  t.teardown(() => cw.stop());
  const w = await s.newWallet(1000);
  const out = join(dir, 'shots-compare');
  const r = await runCli(['shots', s.targetUrl, '--browsers', 'testbrowser@2,testbrowser@1', '--compare', '--out', out], {
    PAYLOADS_URL: s.url,
    PAYLOADS_KEY: w.key,
  });
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /perceptual %/);
  t.match(r.stdout, /testbrowser-2_1920x1080_light\.png\s*│\s*testbrowser-1_1920x1080_light\.png\s*│\s*0\s*│\s*0\s*│/);
  t.ok(existsSync(join(out, 'diff_testbrowser-2_vs_testbrowser-1_1920x1080_light.png')), 'the diff image saved');
});

t.test('topup: prints the invoice and its QR code, waits, reports the payment', async (t) => {
  const s = await startJobsApi(t, { wallet: { rate: { fixedEurPerBtc: 50000 } } });
  const w = await s.newWallet(0);
  const run = startCli(['topup', '5'], { PAYLOADS_URL: s.url, PAYLOADS_KEY: w.key });
  t.teardown(() => {
    run.child.kill();
  });
  let id: string | undefined;
  for (let i = 0; i < 200 && !id; i++) {
    id = /top-up (\S+)\n/.exec(run.stdout())?.[1];
    await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(id, 'the top-up id is printed');
  t.match(run.stdout(), /Pay 10000 sats \(5 EUR → 50000 Payloads\)/);
  t.match(run.stdout(), /\nlnbcrt\w+\n/, 'the BOLT11 invoice');
  t.match(run.stdout(), /[▀▄█]{10,}/, 'a QR code drawn with block characters');
  await wallet.topupPay(s.nc, id!);
  const r = await run.done;
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /paid 50000 50000\n/);
  t.equal(await s.balance(w.walletId), 50000);
});

t.test('a download cut off mid-body: exit 3, no file and no part left', async (t) => {
  // a proxy in front of the gateway that sends half of every result body, then drops the
  // connection; the gateway's base URL names the proxy, so result URLs lead through it
  let gateway = '';
  const proxy = createServer((req, res) => {
    const up = request(`${gateway}${req.url}`, { method: req.method, headers: req.headers }, (ur) => {
      if (!req.url!.includes('/results/')) {
        res.writeHead(ur.statusCode!, ur.headers);
        ur.pipe(res);
        return;
      }
      const parts: Buffer[] = [];
      ur.on('data', (d) => parts.push(d));
      ur.on('end', () => {
        const body = Buffer.concat(parts);
        res.writeHead(ur.statusCode!, ur.headers);
        res.write(body.subarray(0, Math.floor(body.length / 2)), () => setTimeout(() => res.socket?.destroy(), 50));
      });
    });
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        proxy.closeAllConnections();
        proxy.close(() => r());
      }),
  );
  const purl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  const s = await startJobsApi(t, { server: { baseUrl: purl } });
  gateway = s.url;
  const w = await s.newWallet(1000);
  const out = join(dir, 'cut.md');
  const r = await runCli(['convert', s.targetUrl, '--markdown', '--out', out], { PAYLOADS_URL: purl, PAYLOADS_KEY: w.key });
  t.equal(r.code, 3, `interrupted: exit 3 (${r.stderr})`);
  t.match(r.stderr, /payloads: interrupted: download of .* interrupted/);
  t.notOk(existsSync(out), 'no file that looks whole');
  t.notOk(existsSync(`${out}.part`), 'no partial file left');
});
