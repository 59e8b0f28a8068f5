// The pipeline's target: a node:http server on 127.0.0.1 serving one article-like HTML page
// (title, description, Open Graph and Twitter tags, canonical link, headings, paragraphs, a table,
// links, images), about 30 KB, the same bytes on every request.
import { createServer, type Server } from 'node:http';
import { performance } from 'node:perf_hooks';

export function articleHtml(): string {
  const para = (i: number) =>
    `<p>Paragraph ${i} of the benchmark article. It talks about <a href="/topic/${i}">topic ${i}</a>, quotes <em>someone</em> and <strong>stresses</strong> a point, then ends with a sentence long enough to count as prose for the readability pass that decides what the main content is.</p>`;
  const sections = Array.from(
    { length: 12 },
    (_, s) =>
      `<section><h2>Section ${s + 1}</h2>${Array.from({ length: 5 }, (_, i) => para(s * 5 + i)).join('\n')}<img src="/img/${s}.png" alt="figure ${s}" width="640" height="360"></section>`,
  ).join('\n');
  const rows = Array.from({ length: 10 }, (_, i) => `<tr><td>row ${i}</td><td>${i * 3}</td><td>${i % 2 ? 'yes' : 'no'}</td></tr>`).join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Benchmark article: a page of realistic size</title>
<meta name="description" content="An article-shaped page served on 127.0.0.1 for the pipeline benchmark.">
<meta name="author" content="Bench Author"><meta name="keywords" content="bench, pipeline, converter">
<meta property="og:title" content="Benchmark article"><meta property="og:type" content="article">
<meta property="og:image" content="/img/cover.png"><meta property="og:site_name" content="Bench">
<meta name="twitter:card" content="summary_large_image"><link rel="canonical" href="/article">
<link rel="icon" href="/favicon.ico"><meta property="article:published_time" content="2026-01-02T03:04:05Z">
</head><body><header><nav><a href="/">Home</a> <a href="/blog">Blog</a> <a href="/about">About</a></nav></header>
<main><article><h1>Benchmark article</h1>${sections}
<table><thead><tr><th>name</th><th>value</th><th>flag</th></tr></thead><tbody>${rows}</tbody></table>
</article></main><footer><p>Footer text, copyright Bench.</p></footer></body></html>`;
}

export async function startPageServer(): Promise<{
  url: string;
  requests: () => number;
  lastRequestAt: () => number | undefined;
  close(): Promise<void>;
}> {
  const body = Buffer.from(articleHtml(), 'utf8');
  let n = 0;
  let last: number | undefined;
  const server: Server = createServer((_req, res) => {
    n++;
    last = performance.now();
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${a.port}/article`,
    requests: () => n,
    /** performance.now() of the last request (the pipeline's stage timeline) */
    lastRequestAt: () => last,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
