// `payloads crawl` and `payloads map` (issue 42) as child processes against the running system (real
// gateway, supervisor, wallet, converter, NATS) and a small local site: crawl writes one file per
// delivered page at its page key, a progress line on stderr, the report and the money on stdout, exit
// 0; a crawl that delivers nothing exits 1; map prints the site's URLs (or map.json with --json).
import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { Command } from 'commander';
import { addPageFlags, pageControlsBody, resultPath } from '../../client/src/crawl-cli.ts';
import { runCli } from './run-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'payloads-crawl-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const page = (title: string, links: string[]) =>
  html(
    `<html><head><title>${title}</title></head><body><main><h1>${title}</h1><p>${title} is a page of the test site with some words in it.</p>${links
      .map((l) => `<a href="${l}">${l}</a>`)
      .join(' ')}</main></body></html>`,
  );

/** Every file under `d`, relative, sorted. */
const files = (d: string): string[] =>
  readdirSync(d, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(d, join(e.parentPath, e.name)))
    .sort();

t.test("every page's controls: the body's fields (--page-timeout, since --timeout is the crawl's deadline)", async (t) => {
  const parse = (args: string[]) => {
    const cmd = addPageFlags(new Command().argument('<url>').exitOverride());
    cmd.parse(['node', 'crawl', ...args]);
    return pageControlsBody(cmd.opts());
  };
  t.same(parse(['https://example.com/']), {}, 'no flag: nothing sent');
  t.same(
    parse([
      'https://example.com/',
      '--remove',
      '.ad',
      '--remove',
      'nav',
      '--target',
      'main',
      '--no-main-content',
      '--wait-for',
      '#app',
      '--page-timeout',
      '20',
      '--actions',
      '[{"type":"wait","ms":100}]',
    ]),
    {
      removeSelectors: ['.ad', 'nav'],
      targetSelectors: ['main'],
      mainContent: false,
      waitFor: '#app',
      timeout: 20,
      actions: [{ type: 'wait', ms: 100 }],
    },
  );
});

t.test('result paths: the page key and the extension of the output', async (t) => {
  t.equal(resultPath('/o', { key: 'index/markdown', filename: 'index.md' }), '/o/index.md');
  t.equal(resultPath('/o', { key: 'docs/intro/metadata', filename: 'docs_intro.metadata.json' }), '/o/docs/intro.metadata.json');
  t.equal(resultPath('/o', { key: 'docs/intro/links' }), '/o/docs/intro.links.json', 'no file name: the output decides');
  t.equal(resultPath('/o', { key: 'map', filename: 'map.json' }), '/o/map.json');
  t.throws(() => resultPath('/o', { key: '../../etc/passwd/markdown' }), /leaves/, 'never outside the folder');
});

t.test('crawl and map of a local site', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 5000 } },
  });
  const site = await fixtureServer(t, {
    '/robots.txt': (_q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n'),
    '/': page('Home', ['/docs/intro.html', '/about', '/private/secret', '/old/page']),
    '/about': page('About', ['/']),
    '/docs/intro.html': page('Intro', ['/docs/next']),
    '/docs/next': page('Next', []),
    '/old/page': page('Old', []),
    '/private/secret': page('Secret', []),
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const env = { PAYLOADS_URL: app.url, PAYLOADS_KEY: k.key };

  const out = join(dir, 'site');
  const r = await runCli(['crawl', site.url('/'), '--limit', '10', '--exclude', '/old/**', '--sitemap', 'skip', '--out', out], env);
  t.equal(r.code, 0, r.stderr);
  t.same(files(out), ['about.md', 'docs/intro.md', 'docs/next.md', 'index.md'], 'one file per delivered page, at its page key');
  t.match(readFileSync(join(out, 'docs/intro.md'), 'utf8'), /Intro is a page of the test site/, 'the converted page');
  t.notOk(existsSync(join(out, 'index.md.part')), 'nothing half-written');
  t.match(r.stderr, /^job job_\S+: crawl of up to 10 pages/m, 'the job line');
  t.match(r.stderr, /crawl job_\S+: 4 done, 0 failed of 10/, 'the progress line reaches the end');
  t.match(r.stdout, /^4 files in /m);
  t.match(r.stdout, /skipped: .*robots 1/, 'the report: robots');
  t.match(r.stdout, /skipped: .*excluded 1/, 'the report: excluded');
  const unit = (await app.request('POST', '/v1/websitepro/quote', { key: k.key, body: { url: site.url('/'), outputs: ['markdown'] } })).json
    .cost as number;
  t.match(r.stdout, new RegExp(`charged ${4 * unit} Payloads .*refunded ${6 * unit} of ${10 * unit}`), 'the money');
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 100_000 - 4 * unit, 'the wallet paid the 4 pages');

  // two outputs: each with its own extension
  const two = join(dir, 'two');
  const r2 = await runCli(['crawl', site.url('/about'), '--limit', '1', '--outputs', 'markdown,metadata', '--out', two], env);
  t.equal(r2.code, 0, r2.stderr);
  t.same(files(two), ['about.md', 'about.metadata.json']);
  t.match(JSON.parse(readFileSync(join(two, 'about.metadata.json'), 'utf8')), { title: 'About' });

  // a start URL robots.txt forbids: nothing delivered, exit 1, refunded
  const before = (await wallet.balance(app.nc, k.walletId)).balance;
  const none = await runCli(['crawl', site.url('/private/secret'), '--limit', '3', '--out', join(dir, 'none')], env);
  t.equal(none.code, 1, `nothing delivered: exit 1 (${none.stdout})`);
  t.match(none.stdout, /^0 files in /m);
  t.match(none.stdout, /^failed: robots_disallowed 1$/m, 'why the page failed');
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, before, 'all refunded');

  // bad flags: refused before any job
  const bad = await runCli(['crawl', site.url('/'), '--sitemap', 'sometimes'], env);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /sometimes/);

  // map: one URL per line, in the map's order (the start URL first)
  const m = await runCli(['map', site.url('/'), '--limit', '100', '--sitemap', 'skip'], env);
  t.equal(m.code, 0, m.stderr);
  const lines = m.stdout.trim().split('\n');
  t.equal(lines[0], site.url('/'), 'the start URL first');
  t.same(
    lines.map((l) => l.slice(site.base.length)).sort(),
    ['/', '/about', '/docs/intro.html', '/docs/next', '/old/page'].sort(),
    'every URL the site links, none robots.txt forbids',
  );
  t.match(m.stderr, /map job_\S+: 5 URLs, charged \d+ Payloads/);

  const mj = await runCli(['map', site.url('/'), '--json', '--limit', '100', '--exclude', '/old/**'], env);
  t.equal(mj.code, 0, mj.stderr);
  const map = JSON.parse(mj.stdout) as { url: string; count: number; urls: { url: string; source: string; depth: number }[] };
  t.equal(map.url, site.url('/'));
  t.equal(map.count, 4);
  t.match(map.urls[0], { url: site.url('/'), source: 'link', depth: 0 });
});
