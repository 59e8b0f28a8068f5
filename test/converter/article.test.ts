// End to end through the real actor: an article with byline, dates, tables, code, relative links
// and images under <base>, converted to all four text outputs from one fetch.
import t from 'tap';
import { Value } from '@sinclair/typebox/value';
import { PageMetadata } from '../../shared/schemas/metadata.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { startConverter } from './harness.ts';
import { ARTICLE } from './pages.ts';

t.test('article → metadata, markdown, text, html', async (t) => {
  const c = await startConverter(t);
  const s = await fixtureServer(t, { '/blog/2024/tides': html(ARTICLE) });
  const url = s.url('/blog/2024/tides');
  const out = await c.runJob(url, ['metadata', 'markdown', 'text', 'html']);
  for (const k of ['metadata', 'markdown', 'text', 'html']) t.equal(out[k]?.kind, 'done', `${k} done ${JSON.stringify(out[k])}`);
  t.equal(s.hits.filter((h) => h === '/blog/2024/tides').length, 1, 'one fetch for the whole job');

  const base = s.base;
  const meta = JSON.parse(await c.read(out.metadata!));
  t.ok(Value.Check(PageMetadata, meta), `metadata matches its schema ${JSON.stringify([...Value.Errors(PageMetadata, meta)].slice(0, 3))}`);
  t.match(meta, {
    title: 'Tides of the North Sea',
    description: 'How the tides of the North Sea work, with tables and code.',
    language: 'en-GB',
    canonical: `${base}/blog/tides`,
    finalUrl: url,
    status: 200,
    contentType: 'text/html',
    author: 'Ada Lovelace',
    publishedTime: '2024-03-01T08:00:00Z',
    modifiedTime: '2024-03-05T10:30:00Z',
    siteName: 'Coastal Notes',
    favicon: `${base}/static/icon.png`,
    image: `${base}/blog/2024/images/lead.jpg`,
    rendered: false,
    openGraph: { type: 'article', site_name: 'Coastal Notes' },
    twitter: { card: 'summary_large_image', site: '@coastal' },
    keywords: ['tides', 'sea', 'moon'],
  });
  t.same(meta.links, { total: 8, internal: 6, external: 2 });
  t.same(meta.headings.slice(0, 3), [
    { level: 1, text: 'Tides of the North Sea' },
    { level: 2, text: 'Tide tables' },
    { level: 2, text: 'Computing the tide' },
  ]);
  t.ok(meta.wordCount > 400 && meta.wordCount < 800, `wordCount ${meta.wordCount}`);
  t.equal(meta.readingTimeMinutes, Math.ceil(meta.wordCount / 230));
  t.equal(out.metadata!.kind === 'done' && out.metadata!.file?.contentType, 'application/json');

  const md = await c.read(out.markdown!);
  t.equal(out.markdown!.kind === 'done' && out.markdown!.file?.contentType, 'text/markdown; charset=utf-8');
  t.ok(md.startsWith('# Tides of the North Sea\n'), 'title is the first heading');
  t.equal(md.match(/^# /gm)?.length, 1, 'the title heading is not repeated');
  t.match(md, '| Hamburg | 06:12 | 3.6 |');
  t.match(md, '| --- | --- | --- |');
  t.match(md, '```python\ndef tide(t):\n    return 1.2');
  t.match(md, '```rust\nfn main()');
  t.match(md, '~~wrong~~');
  t.match(md, /- +\[x\] measured/);
  t.match(md, /- +\[ \] modelled/);
  t.match(md, `[relative link](${base}/blog/2024/tides/model.html)`, 'relative link resolved against <base>');
  t.match(md, `[root link](${base}/root-link)`);
  t.match(md, `[last year's note](${base}/blog/2023/older.html)`);
  t.match(md, `![Tide chart](${base}/blog/2024/images/chart.png)`);
  t.notMatch(md, 'data:image', 'no base64 blobs');
  t.notMatch(md, 'pixel.tracker', 'no tracking pixel');
  t.notMatch(md, 'javascript:');
  t.notMatch(md, 'About', 'navigation left out');
  t.notMatch(md, '© Coastal Notes', 'footer left out');

  const text = await c.read(out.text!);
  t.ok(text.startsWith('Tides of the North Sea\n\n'));
  t.match(text, /\n\nParagraph 2\. [^\n]+\n\nParagraph 3\./, 'paragraphs kept');
  t.match(text, 'def tide(t):\n    return', 'code indentation kept');
  t.notMatch(text, /<[a-z]/i, 'no markup');

  const h = await c.read(out.html!);
  t.equal(out.html!.kind === 'done' && out.html!.file?.contentType, 'text/html; charset=utf-8');
  for (const bad of [/<script/i, /onclick/i, /javascript:/i, /<iframe/i, /<form/i, /<input/i, /pixel\.tracker/, /data:image/])
    t.notMatch(h, bad, `sanitised: ${bad}`);
  t.match(h, `<a href="${base}/blog/2024/tides/model.html"`);
  t.match(h, `<img src="${base}/blog/2024/images/chart.png"`);
  t.match(h, '<table>');
});
