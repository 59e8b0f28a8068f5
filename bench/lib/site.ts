// The crawl bench's target (bench/crawl.ts): a generated site of `pages` pages on 127.0.0.1, served
// by node:http. Page 0 is `/`, page i is `/p/<i>`; page i links to its parent, to `/` and to its
// children i*FANOUT+1 .. i*FANOUT+FANOUT (a tree: a breadth-first crawl from `/` reaches every page,
// in index order, within depth log10(pages)+1). Every page is article-like (~6 KB: title,
// description, headings, paragraphs, a list) and the same bytes on every request. robots.txt and
// sitemap.xml answer 404 (allow all, no sitemap): the links are the only way in.
import { createServer, type Server } from 'node:http';

export const FANOUT = 10;

export const pagePath = (i: number) => (i === 0 ? '/' : `/p/${i}`);

export function sitePage(i: number, pages: number): string {
  const links = [0, i > 0 ? Math.floor((i - 1) / FANOUT) : -1];
  for (let c = i * FANOUT + 1; c <= i * FANOUT + FANOUT && c < pages; c++) links.push(c);
  const nav = [...new Set(links.filter((n) => n >= 0))].map((n) => `<li><a href="${pagePath(n)}">Page ${n}</a></li>`).join('');
  const para = (s: number) =>
    `<p>Page ${i}, paragraph ${s}. The generated site talks about <em>subject ${(i * 7 + s) % 97}</em>, quotes <strong>someone</strong> and then ends with a sentence long enough to count as prose for the readability pass that decides what the main content of the page is.</p>`;
  const sections = Array.from(
    { length: 4 },
    (_, s) => `<section><h2>Section ${s + 1} of page ${i}</h2>${para(s * 3)}${para(s * 3 + 1)}${para(s * 3 + 2)}</section>`,
  ).join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Page ${i} of the bench site</title>
<meta name="description" content="Page ${i} of a generated site for the crawl benchmark."></head>
<body><header><nav><ul>${nav}</ul></nav></header><main><article><h1>Page ${i}</h1>${sections}</article></main>
<footer><p>Footer of page ${i}.</p></footer></body></html>`;
}

export interface Site {
  /** http://127.0.0.1:<port>/ */
  url: string;
  pages: number;
  /** Requests for pages (not robots/sitemap) since the start or the last reset. */
  hits(): Promise<number>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

export async function startSite(pages: number): Promise<Site> {
  const bodies = new Map<number, Buffer>();
  let hits = 0;
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const m = path === '/' ? ['', '0'] : /^\/p\/(\d+)$/.exec(path);
    const i = m ? Number(m[1]) : -1;
    if (i < 0 || i >= pages) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    hits++;
    let body = bodies.get(i);
    if (!body) bodies.set(i, (body = Buffer.from(sitePage(i, pages), 'utf8')));
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    pages,
    hits: async () => hits,
    reset: async () => {
      hits = 0;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * The same site in a process of its own (bench/lib/site-process.ts): a bench that times requests to the
 * service from this process must not have its clock wait behind the site's answers to the crawl
 * (one event loop: a read's time measured the site's work as well as the service's).
 */
export async function startSiteProcess(pages: number): Promise<Site> {
  const { spawnTs } = await import('./procs.ts');
  const p = spawnTs('site', 'bench/lib/site-process.ts', [String(pages)], {});
  const ask = <T>(m: string) =>
    new Promise<T>((resolve, reject) => {
      const gone = (code: number | null) => reject(new Error(`bench site exited (${code})`));
      const on = (a: { [k: string]: T }) => {
        if (!(m in a)) return;
        p.child.off('message', on);
        p.child.off('exit', gone);
        resolve(a[m] as T);
      };
      p.child.on('message', on);
      p.child.once('exit', gone);
      p.child.send(m);
    });
  const url = await ask<string>('url');
  return {
    url,
    pages,
    hits: () => ask<number>('hits'),
    reset: () => ask<true>('reset').then(() => {}),
    close: () => p.stop(),
  };
}
