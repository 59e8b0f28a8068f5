import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startFixtures } from './fixtures.ts';

// Production runs the actor under tsx, whose esbuild wraps named inner functions in `__name()`;
// a function passed to page.evaluate that has one breaks in the page, where that helper does not
// exist. tap's own loader does not do this, so the other tests cannot see it: this one captures
// under tsx and checks the settle rule, lazy content and the cookie banner ran there.
for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: a capture under tsx settles once and hides the banner`, async (t) => {
    const fx = await startFixtures(t);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'test/shots/tsx-capture.ts', id, fx.url('/cookies'), fx.url('/redirect/meta')],
      { timeout: 120000 },
    );
    const [cookies, meta] = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    t.notOk(cookies!.failed, String(cookies!.failed ?? ''));
    t.equal(cookies!.hops, undefined, 'one document, settled once');
    t.match(cookies!.cookieBanner, { found: true, hidden: true });
    t.equal(meta!.hops, 1, 'the meta refresh followed once');
    t.match(String(meta!.finalUrl), /\/plain$/);
  });
}
