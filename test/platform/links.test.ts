// Every relative link in README.md and docs/**/*.md resolves: the file or folder exists and, for a
// `#anchor`, the target Markdown file has a heading with that GitHub slug (or an explicit
// `<a id>`/`<a name>`). Links in code (fenced blocks, `inline`) are not links. Links that leave the
// repository (the shared spec beside it) are checked only where that folder exists.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = process.cwd();

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? markdownFiles(p) : e.name.endsWith('.md') ? [p] : [];
  });
}

/** The text outside fenced code blocks and inline code spans. */
const prose = (md: string) => md.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[^`\n][\s\S]*?\1/g, '');

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchorsOf(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of md.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n ? `${slug}-${n}` : slug);
  }
  for (const m of md.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

const files = [path.join(ROOT, 'README.md'), ...markdownFiles(path.join(ROOT, 'docs'))];
const anchorCache = new Map<string, Set<string>>();
const anchors = (file: string) => {
  let a = anchorCache.get(file);
  if (!a) anchorCache.set(file, (a = anchorsOf(fs.readFileSync(file, 'utf8'))));
  return a;
};

t.test('every relative link in README.md and docs/ resolves, anchors included', async (t) => {
  let checked = 0,
    outside = 0;
  const broken: string[] = [];
  for (const file of files) {
    const text = prose(fs.readFileSync(file, 'utf8'));
    for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const link = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, mailto: and the like
      const [rawPath, anchor] = link.split('#') as [string, string | undefined];
      const target = rawPath ? path.resolve(path.dirname(file), decodeURIComponent(rawPath)) : file;
      const where = `${path.relative(ROOT, file)}: ${link}`;
      if (!target.startsWith(ROOT + path.sep) && target !== ROOT) {
        outside++;
        if (fs.existsSync(path.dirname(ROOT) + path.sep + 'shared') && !fs.existsSync(target)) broken.push(`${where} (no such file)`);
        continue;
      }
      checked++;
      if (!fs.existsSync(target)) broken.push(`${where} (no such file)`);
      else if (anchor && target.endsWith('.md') && !anchors(target).has(decodeURIComponent(anchor).toLowerCase()))
        broken.push(`${where} (no such heading)`);
    }
  }
  t.same(broken, [], 'broken links');
  t.ok(checked > 30, `${checked} links checked in ${files.length} files (${outside} leave the repository)`);
});

t.test('anchors are made the way GitHub makes them', async (t) => {
  const a = anchorsOf(
    '# Decisions where the spec is silent\n## HTTP\n## What `npm start` does\n## Errors beyond the spec\'s list\n## HTTP\n```\n# not a heading\n```\n<a id="own"></a>',
  );
  t.same(
    [...a].sort(),
    ['decisions-where-the-spec-is-silent', 'errors-beyond-the-specs-list', 'http', 'http-1', 'own', 'what-npm-start-does'].sort(),
  );
});

// Issue 46: docs say how things are now, in minutes of reading; how they came to be is in
// docs/notes/ (performance-history.md, testing-history.md, reliability-history.md).
t.test('present-tense docs stay short: performance.md <= 250 lines, testing.md <= 150', async (t) => {
  const lines = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8').trimEnd().split('\n').length;
  for (const [file, most] of [
    ['docs/performance.md', 250],
    ['docs/testing.md', 150],
  ] as const) {
    const n = lines(file);
    t.ok(n <= most, `${file}: ${n} lines (at most ${most}; history goes to docs/notes/)`);
  }
});

t.test('from the README, two clicks to any bench figure and the command that measured it', async (t) => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  t.match(readme, /\]\(docs\/performance\.md\)/, 'the README links docs/performance.md');
  const perf = fs.readFileSync(path.join(ROOT, 'docs/performance.md'), 'utf8');
  t.match(perf, /^Produced by `[^`]+`/m, 'the table says the command that produced it');
  t.match(perf, /\| run it alone \|/, 'each group of rows names its own command');
  t.match(perf, /HISTORY_BENCH_[A-Z_]+=\S+ .*bench\/run\.ts history/, 'the history figures name their command');
});
