// `payloads crawl` and `payloads map` (issue 42): a site in one websitepro job. crawl follows the
// job's event stream for a progress line on stderr (pages done/failed of the limit), then reads every
// result through the paging (GET /v1/jobs/{id}/results?after=) and writes each delivered file under
// --out at its page key (`docs/intro.md`, `docs/intro.metadata.json`), as the job's zip names them;
// at the end the crawl report (skips per reason) and the money. map prints the URLs of map.json.
import { Option, type Command } from 'commander';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';
import { PayloadsError, type Job, type PayloadsClient, type Result } from './index.ts';

export interface CrawlIo {
  out: NodeJS.WritableStream & { isTTY?: boolean };
  err: NodeJS.WritableStream & { isTTY?: boolean };
  signal: AbortSignal;
}

export interface CrawlDeps {
  io: CrawlIo;
  client: () => PayloadsClient;
  json: () => boolean | undefined;
  /** The key, for reading a result's body (map.json) without saving it. */
  key: () => string | undefined;
  /** Sets the process's exit code for a failed job. */
  fail: () => void;
}

/** The file extension of each websitepro output (as the converter names its files). */
export const OUTPUT_EXT: Record<string, string> = {
  markdown: 'md',
  text: 'txt',
  html: 'html',
  metadata: 'metadata.json',
  links: 'links.json',
  images: 'images.json',
  pdf: 'pdf',
  map: 'json',
};

/**
 * Where a page-set result goes under `dir`: `<pageKey>.<ext>`, the extension taken from the file
 * name the server gives (`docs_intro.metadata.json` → `metadata.json`), else from the output name.
 * A path that would leave `dir` is refused (page keys never hold `..`, but a client checks).
 */
export function resultPath(dir: string, r: Pick<Result, 'key' | 'filename'>): string {
  const cut = r.key.lastIndexOf('/');
  const pageKey = cut > 0 ? r.key.slice(0, cut) : r.key;
  const output = cut > 0 ? r.key.slice(cut + 1) : r.key;
  const flat = pageKey.replace(/\//g, '_');
  const fromName = r.filename?.startsWith(`${flat}.`) ? r.filename.slice(flat.length + 1) : undefined;
  const ext = fromName ?? OUTPUT_EXT[output] ?? 'bin';
  const root = resolve(dir);
  const path = resolve(root, `${pageKey}.${ext}`);
  if (!path.startsWith(root + sep)) throw new PayloadsError('bad_request', `result key ${r.key} leaves ${dir}`);
  return path;
}

interface ScopeFlags {
  limit?: number;
  maxDepth?: number;
  include: string[];
  exclude: string[];
  sitemap?: 'include' | 'skip' | 'only';
  timeout?: number;
  allowSubdomains?: boolean;
}

const collect = (v: string, prev: string[]) => [...prev, v];
const int = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new PayloadsError('bad_request', `${name} must be a whole number, not ${JSON.stringify(v)}`);
  return n;
};

function addScopeFlags(c: Command, limitHelp: string): Command {
  return c
    .option('-l, --limit <n>', limitHelp, int('--limit'))
    .option('--max-depth <n>', 'links followed from the start URL (page 0 is depth 0)', int('--max-depth'))
    .option('--include <glob>', 'only paths matching this glob (repeatable), e.g. /docs/**', collect, [])
    .option('--exclude <glob>', 'skip paths matching this glob (repeatable)', collect, [])
    .addOption(new Option('--sitemap <mode>', 'sitemaps: include (with links), skip, only').choices(['include', 'skip', 'only']))
    .option('--timeout <seconds>', 'deadline of the whole crawl (10 to 21600)', int('--timeout'))
    .option('--allow-subdomains', "also the start host's subdomains");
}

function crawlBody(o: ScopeFlags): Record<string, unknown> {
  return {
    ...(o.limit !== undefined ? { limit: o.limit } : {}),
    ...(o.maxDepth !== undefined ? { maxDepth: o.maxDepth } : {}),
    ...(o.include.length ? { includePaths: o.include } : {}),
    ...(o.exclude.length ? { excludePaths: o.exclude } : {}),
    ...(o.sitemap ? { sitemap: o.sitemap } : {}),
    ...(o.timeout !== undefined ? { timeout: o.timeout } : {}),
    ...(o.allowSubdomains ? { allowSubdomains: true } : {}),
  };
}

interface PageFlags {
  remove?: string[];
  target?: string[];
  mainContent?: boolean;
  waitFor?: string;
  pageTimeout?: string;
  actions?: string;
}

/** The controls applied to every page of a crawl (`--timeout` is the crawl's deadline here: `--page-timeout` is a page's). */
export function addPageFlags(c: Command): Command {
  return c
    .option('--remove <selector>', 'on every page, remove what this CSS selector matches first (repeatable)', collect, [])
    .option('--target <selector>', 'on every page, convert only what this selector matches (repeatable)', collect, [])
    .option('--no-main-content', 'convert the whole body of every page, not only its main content')
    .option('--wait-for <selector>', 'render every page in a browser and wait for this selector (a render result per page)')
    .option('--page-timeout <seconds>', 'how long each page may take in the browser, 1 to 60 s')
    .option('--actions <json>', 'actions run on every page before conversion: a JSON array, or @file');
}

/** The websitepro body fields of the page flags. */
export function pageControlsBody(o: PageFlags): Record<string, unknown> {
  return {
    ...(o.remove?.length ? { removeSelectors: o.remove } : {}),
    ...(o.target?.length ? { targetSelectors: o.target } : {}),
    ...(o.mainContent === false ? { mainContent: false } : {}),
    ...(o.waitFor ? { waitFor: o.waitFor } : {}),
    ...(o.pageTimeout !== undefined ? { timeout: Number(o.pageTimeout) } : {}),
    ...(o.actions ? { actions: JSON.parse(o.actions.startsWith('@') ? readFileSync(o.actions.slice(1), 'utf8') : o.actions) } : {}),
  };
}

/** Every result of a job, read a page (1,000) at a time: GET /v1/jobs/{id}/results?after=. */
export async function* allResults(c: PayloadsClient, id: string, signal?: AbortSignal): AsyncGenerator<Result> {
  let after: string | undefined;
  for (;;) {
    const { data, error, response } = await c.api
      .GET('/v1/jobs/{id}/results', { params: { path: { id }, query: after ? { after } : {} }, signal })
      .catch((e: Error) => {
        throw new PayloadsError('network', `cannot reach the API: ${e.message}`);
      });
    if (error !== undefined || !response.ok || !data) {
      const e = (error as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new PayloadsError((e?.code ?? 'internal') as PayloadsError['code'], e?.message ?? `HTTP ${response.status}`, response.status);
    }
    const page = data as { results: Result[]; next: string | null };
    yield* page.results;
    if (!page.next) return;
    after = page.next;
  }
}

const eur = (payloads: number) => `€${(payloads / 10000).toFixed(4).replace(/0{1,2}$/, '')}`;

/** The progress line: rewritten in place on a terminal, a line per change otherwise. */
function progressLine(io: CrawlIo) {
  let last = '';
  return {
    show(s: string) {
      if (s === last) return;
      last = s;
      io.err.write(io.err.isTTY ? `\r\x1b[K${s}` : `${s}\n`);
    },
    end() {
      if (io.err.isTTY && last) io.err.write('\n');
    },
  };
}

/** Follow the events until the job is finished, counting pages; falls back to polling if the stream fails. */
async function follow(c: PayloadsClient, job: Job, limit: number, io: CrawlIo): Promise<void> {
  const line = progressLine(io);
  let done = 0;
  let failed = 0;
  const show = () => line.show(`crawl ${job.id}: ${done} done, ${failed} failed of ${limit}`);
  show();
  try {
    for await (const e of c.events(job.id, { signal: io.signal })) {
      if (e.event === 'result' && Array.isArray(e.data?.results)) {
        if ((e.data.results as Result[]).some((r) => r.status === 'done')) done++;
        else failed++;
        show();
      } else if (e.event === 'job') break;
    }
  } catch (e) {
    if (io.signal.aborted || (e instanceof PayloadsError && e.code !== 'network')) throw e;
    await c.wait(job.id, {
      signal: io.signal,
      onUpdate: (j) => {
        done = j.pages?.done ?? done;
        failed = j.pages?.failed ?? failed;
        show();
      },
    });
  } finally {
    line.end();
  }
}

/** Run `fn` over the items with at most `n` at once. */
async function pool<T>(items: AsyncIterable<T>, n: number, fn: (x: T) => Promise<void>): Promise<void> {
  const running = new Set<Promise<void>>();
  for await (const x of items) {
    const p: Promise<void> = fn(x).finally(() => running.delete(p));
    running.add(p);
    if (running.size >= n) await Promise.race(running);
  }
  await Promise.all(running);
}

function report(job: Job, errors: Map<string, number>): string {
  const skipped = Object.entries(job.crawl?.skipped ?? {})
    .filter(([, s]) => s.count > 0)
    .map(([reason, s]) => `${reason} ${s.count}`);
  const p = job.pages;
  return [
    `${job.status}: ${p?.done ?? 0} results delivered, ${p?.failed ?? 0} failed, ${p?.recorded ?? 0} pages`,
    ...(errors.size ? [`failed: ${[...errors].map(([e, n]) => `${e} ${n}`).join(', ')}`] : []),
    `skipped: ${skipped.length ? skipped.join(', ') : 'none'}`,
    `charged ${job.charged} Payloads (${eur(job.charged)}), refunded ${job.refunded} of ${job.cost}`,
  ].join('\n');
}

export function addCrawlCommands(p: Command, d: CrawlDeps): void {
  const { io } = d;
  addPageFlags(
    addScopeFlags(p.command('crawl'), 'most pages converted (default 100, at most 10000); the cap charged, unused slots refunded'),
  )
    .argument('<url>', 'the start URL; its origin is crawled')
    .description("a site in one job: every page converted, files under --out at the page's key (docs/intro.md)")
    .option('--outputs <list>', 'outputs per page: markdown, text, html, metadata, links, images, pdf', (v: string) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .option('-o, --out <dir>', 'folder for the files', 'crawl')
    .action(async (url: string, o: ScopeFlags & PageFlags & { outputs?: string[]; out: string }) => {
      const c = d.client();
      const crawl = crawlBody(o);
      const body = { url, outputs: o.outputs ?? ['markdown'], crawl, ...pageControlsBody(o) };
      const { job, balance } = await c.createJob('websitepro', body as never, {
        signal: io.signal,
      });
      const limit = (crawl.limit as number | undefined) ?? 100;
      io.err.write(
        `job ${job.id}: crawl of up to ${limit} page${limit === 1 ? '' : 's'}, ${job.cost} Payloads charged (balance ${balance})\n`,
      );
      if (job.status !== 'completed' && job.status !== 'failed') await follow(c, job, limit, io);
      const { job: final } = await c.job(job.id, 0, io.signal);
      mkdirSync(o.out, { recursive: true });
      let files = 0;
      const errors = new Map<string, number>();
      await pool(allResults(c, job.id, io.signal), 4, async (r) => {
        if (r.status === 'failed') errors.set(r.error ?? 'failed', (errors.get(r.error ?? 'failed') ?? 0) + 1);
        if (r.status !== 'done' || !r.url) return;
        const path = resultPath(o.out, r);
        mkdirSync(dirname(path), { recursive: true });
        await c.download(r, path, { signal: io.signal });
        files++;
      });
      if (d.json()) io.out.write(`${JSON.stringify(final)}\n`);
      else io.out.write(`${files} files in ${o.out}\n${report(final, errors)}\n`);
      if (final.status !== 'completed' || files === 0) d.fail();
    });

  addScopeFlags(p.command('map'), 'most URLs listed (default 5000, at most 10000)')
    .argument('<url>', 'the start URL; its origin is mapped')
    .description("a site's URLs without converting them: one per line (with --json: the map.json)")
    .action(async (url: string, o: ScopeFlags) => {
      const c = d.client();
      const job = await c.createJob('websitepro', { url, outputs: ['map'], crawl: crawlBody(o) } as never, { signal: io.signal }).wait({
        signal: io.signal,
      });
      const r = job.results.find((x) => x.key === 'map');
      if (!r || r.status !== 'done' || !r.url) {
        io.err.write(`map ${job.id}: ${r?.status ?? job.status}${r?.error ? ` (${r.error}: ${r.message ?? ''})` : ''}\n`);
        d.fail();
        return;
      }
      const res = await fetch(r.url, { headers: { authorization: `Bearer ${d.key()}` }, signal: io.signal }).catch((e: Error) => {
        throw new PayloadsError('network', `cannot reach the API: ${e.message}`);
      });
      if (!res.ok) throw new PayloadsError('internal', `map.json: HTTP ${res.status}`, res.status);
      const map = (await res.json()) as { url: string; count: number; urls: { url: string }[] };
      if (d.json()) io.out.write(`${JSON.stringify(map)}\n`);
      else for (const u of map.urls) io.out.write(`${u.url}\n`);
      io.err.write(`map ${job.id}: ${map.count} URLs, charged ${job.charged} Payloads (${eur(job.charged)}), refunded ${job.refunded}\n`);
    });
}
