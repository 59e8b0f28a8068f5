// The account page in Firefox ESR too (WebDriver BiDi): key, top-up, dev pay, new balance.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer from '../../actors/browser-pool/launchers/puppeteer.ts';
import { startTestApp } from '../helpers/app.ts';
import { ROOT } from '../../shared/config/index.ts';

const OUT = join(ROOT, 'test-output', 'account');

t.test('the account page works in Firefox', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'], config: { wallet: { keyPowBits: 10 } } });
  mkdirSync(OUT, { recursive: true });
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: process.env.FIREFOX_PATH || '/usr/bin/firefox-esr',
    headless: true,
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  await page.setViewport({ width: 1024, height: 800 });
  await page.goto(`${app.url}/account`, { waitUntil: 'load' });
  await page.click('#create-btn');
  await page.waitForFunction(() => document.getElementById('key-text')!.textContent!.startsWith('pk_'), { timeout: 60000 });
  const key = await page.$eval('#key-text', (e) => e.textContent!);
  t.equal((await app.request('GET', '/v1/balance', { key })).status, 200, 'the key made in Firefox works');
  await page.waitForSelector('#wallet:not([hidden])');
  await page.click('#topup-form button[type=submit]');
  await page.waitForFunction(() => (document.getElementById('inv-text') as HTMLTextAreaElement).value.startsWith('lnbcrt'), {
    timeout: 20000,
  });
  await page.click('#dev-pay');
  await page.waitForFunction(() => document.getElementById('balance')!.textContent === '50,000', { timeout: 20000 });
  t.equal(await page.$eval('#inv-status', (e) => e.textContent), 'paid');
  await page.screenshot({ path: join(OUT, 'firefox-paid.png') });
  t.same((await app.request('GET', '/v1/balance', { key })).json, { balance: 50_000, unit: 'payloads', eur: 5 });
});
