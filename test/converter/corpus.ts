// The websitepro corpus (test/fixtures/websitepro, written by its generate.ts): served on 127.0.0.1
// as the pages' sites would serve them, and judged: every output as expected, the expected sentences
// in markdown and text, no navigation or cookie text, Markdown without raw tables or empty links,
// and word-bag recall and precision of the text against the page's expected main text. Used by
// test/converter/corpus.test.ts and bench/converter.ts.
import fs from 'node:fs';
import path from 'node:path';
import type http from 'node:http';
import { fixtureServer } from '../outbound/fixture-server.ts';
import type { CorpusEntry } from '../fixtures/websitepro/generate.ts';

export type { CorpusEntry };
export const CORPUS_DIR = path.join(path.dirname(new URL(import.meta.url).pathname), '../fixtures/websitepro');
export const OUTPUTS = ['metadata', 'markdown', 'text', 'html'] as const;
export type Output = (typeof OUTPUTS)[number];

export function loadCorpus(): CorpusEntry[] {
  return JSON.parse(fs.readFileSync(path.join(CORPUS_DIR, 'manifest.json'), 'utf8')) as CorpusEntry[];
}

export const pageBytes = (e: CorpusEntry) => fs.readFileSync(path.join(CORPUS_DIR, 'pages', e.file));

/** Serve every page at /<id> with its headers (gzip pages as gzip), and every file at /<file>. */
export async function serveCorpus(t: { teardown(fn: () => unknown): void }, entries = loadCorpus()) {
  const routes: Record<string, (q: http.IncomingMessage, r: http.ServerResponse) => void> = {};
  for (const e of entries) {
    const body = pageBytes(e);
    routes[`/${e.id}`] = (_q, r) => void r.writeHead(200, e.headers).end(body);
  }
  for (const f of fs.readdirSync(path.join(CORPUS_DIR, 'pages'))) {
    if (f.endsWith('.js')) {
      const body = fs.readFileSync(path.join(CORPUS_DIR, 'pages', f));
      routes[`/${f}`] = (_q, r) => void r.writeHead(200, { 'content-type': 'text/javascript' }).end(body);
    }
  }
  return fixtureServer(t, routes);
}

/** What one output became: its text, or its error code. */
export type Produced = Partial<Record<Output, { data: string } | { error: string; message?: string }>>;

export interface Verdict {
  id: string;
  pass: boolean;
  failures: string[];
  /** Word-bag recall and precision of the text output against the expected main text (null: no text expected). */
  recall: number | null;
  precision: number | null;
}

/** Markdown read as text: escapes and emphasis marks removed, whitespace collapsed. */
export function markdownAsText(md: string): string {
  return md
    .replace(/\\([\\`*_{}[\]()#+\-.!|<>~])/g, '$1')
    .replace(/(\*\*|__)/g, '')
    .replace(/\s+/g, ' ');
}
const flat = (s: string) => s.replace(/\s+/g, ' ');

/** Words; Chinese and Japanese characters count one by one (no spaces to split on). */
export function words(s: string): Map<string, number> {
  const bag = new Map<string, number>();
  for (const w of s.toLowerCase().match(/\p{Script=Han}|\p{Script=Hiragana}|\p{Script=Katakana}|[\p{L}\p{N}]+/gu) ?? [])
    bag.set(w, (bag.get(w) ?? 0) + 1);
  return bag;
}

export function overlap(got: string, want: string): { recall: number; precision: number } {
  const g = words(got),
    w = words(want);
  let common = 0,
    gn = 0,
    wn = 0;
  for (const [k, n] of w) {
    wn += n;
    common += Math.min(n, g.get(k) ?? 0);
  }
  for (const n of g.values()) gn += n;
  return { recall: wn ? common / wn : 1, precision: gn ? common / gn : 0 };
}

export function judge(e: CorpusEntry, out: Produced, rendered = true): Verdict {
  const failures: string[] = [];
  for (const o of OUTPUTS) {
    const r = out[o];
    const want = e.outputs[o];
    const got = !r ? 'missing' : 'data' in r ? 'done' : r.error;
    if (got !== want) failures.push(`${o}: ${got}${r && 'error' in r ? ` (${r.message ?? ''})` : ''}, expected ${want}`);
  }
  const text = out.text && 'data' in out.text ? out.text.data : null;
  const md = out.markdown && 'data' in out.markdown ? out.markdown.data : null;
  const html = out.html && 'data' in out.html ? out.html.data : null;
  const meta = out.metadata && 'data' in out.metadata ? (JSON.parse(out.metadata.data) as Record<string, unknown>) : null;
  const jsMissing = e.browser && !rendered;
  if (md !== null) {
    if (/<table/i.test(md)) failures.push('markdown: contains <table');
    if (/<(div|span|tr|td|th|tbody|thead)\b/i.test(md))
      failures.push(`markdown: raw HTML ${/<(div|span|tr|td|th|tbody|thead)\b/i.exec(md)![0]}`);
    if (/(^|[^!\\])\[\s*\]\(/.test(md)) failures.push('markdown: an empty link');
    if (/\]\((?!https?:|mailto:|#)[^)]/.test(md))
      failures.push(`markdown: a relative link or image ${/\]\((?!https?:|mailto:|#)[^)]*\)/.exec(md)![0]}`);
    if (e.title && !jsMissing && !md.startsWith(`# ${e.title}\n`))
      failures.push(`markdown: does not start with "# ${e.title}" but ${JSON.stringify(md.slice(0, 80))}`);
    const plain = markdownAsText(md);
    if (!jsMissing) for (const s of e.contains) if (!plain.includes(flat(s))) failures.push(`markdown: missing "${s}"`);
    for (const s of e.absent) if (plain.includes(flat(s))) failures.push(`markdown: has "${s}"`);
  }
  if (text !== null) {
    if (e.title && !jsMissing && !text.startsWith(`${e.title}\n`)) failures.push(`text: does not start with the title "${e.title}"`);
    const plain = flat(text);
    if (!jsMissing) for (const s of e.contains) if (!plain.includes(flat(s))) failures.push(`text: missing "${s}"`);
    for (const s of e.absent) if (plain.includes(flat(s))) failures.push(`text: has "${s}"`);
  }
  if (html !== null) for (const s of e.absent) if (flat(html).includes(flat(s))) failures.push(`html: has "${s}"`);
  if (meta) {
    if (e.title !== null && !jsMissing && meta.title !== e.title)
      failures.push(`metadata.title: ${JSON.stringify(meta.title)}, expected ${JSON.stringify(e.title)}`);
    for (const [k, v] of Object.entries(e.meta ?? {}))
      if (JSON.stringify(meta[k]) !== JSON.stringify(v))
        failures.push(`metadata.${k}: ${JSON.stringify(meta[k])}, expected ${JSON.stringify(v)}`);
  }
  const q = text !== null && e.expected && !jsMissing ? overlap(text, e.expected) : null;
  return { id: e.id, pass: failures.length === 0, failures, recall: q?.recall ?? null, precision: q?.precision ?? null };
}

export function summary(vs: Verdict[]) {
  const q = vs.filter((v) => v.recall !== null);
  const avg = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
  return {
    pages: vs.length,
    passed: vs.filter((v) => v.pass).length,
    passRate: vs.filter((v) => v.pass).length / vs.length,
    recall: avg(q.map((v) => v.recall!)),
    precision: avg(q.map((v) => v.precision!)),
  };
}
