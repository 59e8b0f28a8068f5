// The account page in real Chromium: make a key (proof of work in the page), use it with the API,
// top up through the dev backend, watch the balance change. Screenshots go to test-output/.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { startTestApp } from '../helpers/app.ts';
import { ROOT } from '../../shared/config/index.ts';
import { powBits } from '../../gateway/routes/account.ts';
import { audit } from '../../shared/audit.ts';

const OUT = join(ROOT, 'test-output', 'account');
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];

function solve(id: string, bits: number): string {
  for (let n = 0; ; n++) if (powBits(id, String(n)) >= bits) return String(n);
}

t.test('key creation needs a solved, unused, unexpired challenge', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'], config: { wallet: { keyPowBits: 10 } } });
  const ch = (await app.request('GET', '/account/challenge')).json;
  t.match(ch, { id: /^[0-9a-f]{40}$/, bits: 10, expiresAt: Number });
  let wrong = 0;
  while (powBits(ch.id, String(wrong)) >= 10) wrong++;
  t.equal(
    (await app.request('POST', '/account/keys', { body: { id: ch.id, nonce: String(wrong) } })).status,
    400,
    'a nonce that does not solve it',
  );
  t.equal((await app.request('POST', '/account/keys', { body: { id: 'f'.repeat(32), nonce: '1' } })).status, 400, 'an unknown challenge');
  const nonce = solve(ch.id, 10);
  const made = await app.request('POST', '/account/keys', { body: { id: ch.id, nonce } });
  t.equal(made.status, 201);
  t.match(made.json, { key: /^pk_/, walletId: /^w_/ });
  t.equal((await app.request('GET', '/v1/balance', { key: made.json.key })).status, 200, 'the key works on the API');
  const again = await app.request('POST', '/account/keys', { body: { id: ch.id, nonce } });
  t.equal(again.status, 400, 'a challenge is spent once');
  t.match(again.json.error.message, /used already/);
  const spec = (await app.request('GET', '/openapi.json')).json;
  t.notOk(
    Object.keys(spec.paths).some((p) => p.startsWith('/account')),
    'not part of the API description',
  );
  t.notOk(
    Object.keys(spec.paths).some((p) => /\/keys?(\/|$)/i.test(p)),
    'no /v1 endpoint makes keys',
  );
  const qr = await app.request('GET', '/account/qr.svg?data=lightning:lnbcrt1abc');
  t.equal(qr.status, 200);
  t.match(qr.headers.get('content-type'), /image\/svg\+xml/);
  t.match(qr.text, /<svg/);
  t.equal((await app.request('GET', '/account/qr.svg?data=javascript:alert(1)')).status, 400);

  // dev pay: only the key's own top-ups
  const other = await app.newKey();
  const top = await app.request('POST', '/v1/topups', { key: made.json.key, body: { eur: 1 } });
  t.equal(
    (await app.request('POST', '/account/dev-pay', { key: other.key, body: { topupId: top.json.topup.id } })).status,
    404,
    'another key cannot pay it',
  );
  t.equal((await app.request('POST', '/account/dev-pay', { body: { topupId: top.json.topup.id } })).status, 401);
  const paid = await app.request('POST', '/account/dev-pay', { key: made.json.key, body: { topupId: top.json.topup.id } });
  t.equal(paid.status, 200);
  t.match(paid.json, { balance: 10_000, topup: { status: 'paid' } });
});

t.test('the account page in Chromium: key, top-up, dev pay, new balance, at desktop and phone widths', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'], config: { wallet: { keyPowBits: 12 } } });
  mkdirSync(OUT, { recursive: true });
  const browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', headless: true, args: FLAGS });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('response', (r) => {
    if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) errors.push(`${r.status()} ${r.url()}`);
  });
  await page.setViewport({ width: 1280, height: 900 });
  const res = await page.goto(`${app.url}/account`, { waitUntil: 'networkidle0' });
  t.equal(res!.status(), 200);
  t.match(res!.headers()['content-security-policy'], /script-src 'self'/);
  await page.screenshot({ path: join(OUT, 'desktop-1-start.png'), fullPage: true });

  await page.click('#create-btn');
  await page.waitForFunction(() => document.getElementById('key-text')!.textContent!.startsWith('pk_'), { timeout: 60000 });
  const key = await page.$eval('#key-text', (e) => e.textContent!);
  t.match(key, /^pk_[A-Za-z0-9_-]{43}$/, 'the key is shown once in the page');
  const bal = await app.request('GET', '/v1/balance', { key });
  t.same(bal.json, { balance: 0, unit: 'payloads', eur: 0 }, 'and works on the API');
  await page.waitForSelector('#wallet:not([hidden])');

  await page.$eval('#eur', (e) => {
    (e as HTMLInputElement).value = '';
  });
  await page.type('#eur', '25');
  await page.click('#topup-form button[type=submit]');
  await page.waitForFunction(() => (document.getElementById('inv-text') as HTMLTextAreaElement).value.startsWith('lnbcrt'));
  t.equal(await page.$eval('#inv-status', (e) => e.textContent), 'pending');
  t.match(await page.$eval('#inv-open', (e) => e.getAttribute('href')), /^lightning:lnbcrt/);
  await page.waitForFunction(() => (document.getElementById('inv-qr') as HTMLImageElement).naturalWidth > 0);
  t.equal(await page.$eval('#inv-payloads', (e) => e.textContent), '262,500', '25 EUR with the 5 % bonus');
  await page.screenshot({ path: join(OUT, 'desktop-2-invoice.png'), fullPage: true });

  t.ok(await page.$eval('#dev-pay', (e) => !(e as HTMLElement).hidden), 'dev mode: a pay button');
  await page.click('#dev-pay');
  await page.waitForFunction(() => document.getElementById('inv-status')!.textContent === 'paid');
  await page.waitForFunction(() => document.getElementById('balance')!.textContent === '262,500');
  t.equal(await page.$eval('#balance-eur', (e) => e.textContent), '26.25');
  await page.waitForFunction(() => document.querySelectorAll('#tx tr td.num').length >= 2);
  t.match(await page.$eval('#tx', (e) => e.textContent), /Top-up \(incl\. 12,500 bonus\)/);
  await page.screenshot({ path: join(OUT, 'desktop-3-paid.png'), fullPage: true });
  t.same((await app.request('GET', '/v1/balance', { key })).json, { balance: 262_500, unit: 'payloads', eur: 26.25 });

  // A second top-up, paid by the operator (admin path), shown live by the page's polling.
  // (isMobile would reload the page and forget the key held in memory; the width is what the layout reacts to)
  await page.setViewport({ width: 390, height: 844 });
  await page.$eval('#eur', (e) => {
    (e as HTMLInputElement).value = '1';
  });
  await page.click('#topup-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('inv-status')!.textContent === 'pending');
  t.equal((await app.request('GET', '/v1/transactions', { key })).json.entries.length, 1, 'nothing credited before payment');
  await page.screenshot({ path: join(OUT, 'phone-1-invoice.png'), fullPage: true });
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  t.ok(scrollWidth <= 390, `no horizontal scrolling on a phone (${scrollWidth}px)`);
  const { wallet } = await import('../../shared/protocol/wallet.ts');
  const { Kvm } = await import('@nats-io/kv');
  const kv = await new Kvm(app.nc).open('topups');
  let pendingId = '';
  for await (const k of await kv.keys()) {
    const rec = (await kv.get(k))!.json<{ status: string; id: string }>();
    if (rec.status === 'pending') pendingId = rec.id;
  }
  await wallet.topupPay(app.nc, pendingId);
  await page.waitForFunction(() => document.getElementById('balance')!.textContent === '272,500', { timeout: 20000 });
  await page.screenshot({ path: join(OUT, 'phone-2-paid.png'), fullPage: true });
  t.same(errors, [], 'no script errors in the page');
  t.same((await audit(app.nc)).violations, []);
});
