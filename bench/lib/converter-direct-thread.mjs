// Thread of bench/lib/converter-direct.ts: jsdom + Readability + turndown (GFM), as their READMEs show.
import { parentPort, workerData } from 'node:worker_threads';
const { JSDOM } = await import('jsdom');
const { Readability } = await import('@mozilla/readability');
const { default: TurndownService } = await import('turndown');
const { gfm } = await import('@joplin/turndown-plugin-gfm');
const td = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced' });
td.use(gfm);
const { pages } = workerData;
parentPort.on('message', ({ from, n }) => {
  for (let i = 0; i < n; i++) {
    const dom = new JSDOM(pages[(from + i) % pages.length], { url: 'http://127.0.0.1/page' });
    try {
      const a = new Readability(dom.window.document).parse();
      const md = td.turndown(a?.content ?? '');
      JSON.stringify({
        title: a?.title,
        byline: a?.byline,
        excerpt: a?.excerpt,
        siteName: a?.siteName,
        lang: a?.lang,
        publishedTime: a?.publishedTime,
        md,
      });
    } catch {
      // the GFM plugin throws on some pages (issue 14); the baseline just moves on
    }
    dom.window.close();
  }
  parentPort.postMessage('done');
});
