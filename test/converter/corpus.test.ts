// Every page of the websitepro corpus (test/fixtures/websitepro) through the real converter actor,
// fetched over HTTP from 127.0.0.1, with browser-pool (Chromium) rendering the page that needs
// JavaScript: every output each page can have is made, the expected sentences are there and the
// furniture is not, Markdown never holds a <table>. test/converter/corpus.ts says what is judged.
import t from 'tap';
import { existsSync } from 'node:fs';
import { startConverter } from './harness.ts';
import { loadCorpus, serveCorpus, judge, summary, OUTPUTS, type Produced, type Verdict } from './corpus.ts';
import { testLog } from '../helpers/nats.ts';

const chromium = existsSync('/usr/bin/chromium');

t.test('the corpus through the converter actor', async (t) => {
  const entries = loadCorpus();
  t.ok(entries.length >= 60, `${entries.length} pages`);
  const c = await startConverter(t, {
    outbound: { allowCidrs: ['127.0.0.1/32'] },
    shots: { browsers: ['chromium'], concurrency: 1, pageTimeoutMs: 30000 },
  });
  if (chromium) {
    const { start } = await import('../../actors/browser-pool/index.ts');
    const pool = await start({ nc: c.nc, config: c.config, log: testLog(), instanceId: 'bp-corpus' });
    t.teardown(() => pool.stop());
  }
  const site = await serveCorpus(t, entries);
  const verdicts: Verdict[] = [];
  const queue = [...entries];
  // a few jobs at once, as a real converter sees them
  await Promise.all(
    Array.from({ length: 3 }, async () => {
      for (let e = queue.shift(); e; e = queue.shift()) {
        const got = await c.runJob(site.url(`/${e.id}`), [...OUTPUTS], 180000);
        const out: Produced = {};
        for (const o of OUTPUTS) {
          const r = got[o];
          if (!r) continue;
          out[o] = r.kind === 'done' ? { data: await c.read(r) } : { error: r.error ?? 'failed', message: r.message };
        }
        const v = judge(e, out, chromium);
        verdicts.push(v);
        t.ok(v.pass, `${e.id} (${e.kind})${v.pass ? '' : `: ${v.failures.join('; ')}`}`);
        if (e.browser && chromium && out.metadata && 'data' in out.metadata)
          t.equal(JSON.parse(out.metadata.data).rendered, true, `${e.id}: rendered by the browser`);
      }
    }),
  );
  const s = summary(verdicts);
  t.comment(`pass rate ${(s.passRate * 100).toFixed(1)} %, text recall ${s.recall.toFixed(3)}, precision ${s.precision.toFixed(3)}`);
  // word-bag quality over the whole corpus; a drop here means main-content extraction got worse
  t.ok(s.recall >= 0.97, `recall ${s.recall.toFixed(3)}`);
  t.ok(s.precision >= 0.95, `precision ${s.precision.toFixed(3)}`);
});
