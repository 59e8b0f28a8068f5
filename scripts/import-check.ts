// The house rules for imports, checked on every file under actors/, gateway/, shared/ and admin/
// (test/platform/imports.test.ts runs it): no import cycle between files (type-only imports count:
// they still tie two files together) nor between folders, and shared/ never imports actors/ or
// gateway/ (it is the floor they stand on), and a folder with an index.ts is entered only through it.
// `node --import tsx scripts/import-check.ts` prints what breaks them and exits 1.
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';

export const CHECKED = ['actors', 'gateway', 'shared', 'admin'];
const IMPORT = /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return n === 'node_modules' ? [] : sourceFiles(p);
    return /\.(ts|mts|mjs)$/.test(n) && !n.endsWith('.d.ts') ? [p] : [];
  });
}

/** Relative imports of each file (repo-relative paths), local ones only. */
export function importGraph(root: string, folders = CHECKED): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of folders.flatMap((f) => sourceFiles(join(root, f)))) {
    const src = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    const deps: string[] = [];
    for (const m of src.matchAll(IMPORT)) {
      const spec = m[1] ?? m[2]!;
      if (!spec.startsWith('.')) continue;
      deps.push(relative(root, resolve(dirname(file), spec)));
    }
    graph.set(relative(root, file), deps);
  }
  return graph;
}

/** Strongly connected components with more than one file (or a file importing itself). */
export function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

const isWithin = (a: string, b: string) => a === b || a.startsWith(b + '/');

/**
 * The same graph between folders: A -> B when a file of A imports one of B. Folders nested in each
 * other are left out (a folder and its sub-folders are one room: gateway/ mounts gateway/routes/,
 * whose routes use gateway/route.ts).
 */
export function folderGraph(graph: Map<string, string[]>): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  for (const [file, deps] of graph) {
    const from = dirname(file);
    const set = out.get(from) ?? new Set<string>();
    out.set(from, set);
    for (const d of deps) {
      const to = dirname(d);
      if (!isWithin(from, to) && !isWithin(to, from)) set.add(to);
    }
  }
  return new Map([...out].map(([k, v]) => [k, [...v]]));
}

/** Every broken rule, in words; empty when the tree is clean. */
export function importProblems(root: string, folders = CHECKED): string[] {
  const graph = importGraph(root, folders);
  const problems = cycles(graph).map((c) => `import cycle: ${c.join(' <-> ')}`);
  for (const c of cycles(folderGraph(graph))) problems.push(`folder cycle: ${c.join('/ <-> ')}/`);
  for (const [file, deps] of graph) {
    for (const d of deps) {
      if (file.startsWith('shared/') && /^(actors|gateway)\//.test(d)) problems.push(`shared/ imports upward: ${file} -> ${d}`);
      if (file.startsWith('actors/') && d.startsWith('gateway/')) problems.push(`an actor imports the gateway: ${file} -> ${d}`);
      if (file.startsWith('gateway/') && d.startsWith('actors/')) problems.push(`the gateway imports an actor: ${file} -> ${d}`);
      if (file.split('/').length > 2 && file.startsWith('actors/') && d.startsWith('actors/') && file.split('/')[1] !== d.split('/')[1])
        problems.push(`an actor imports another: ${file} -> ${d}`);
      // a folder with an index.ts is entered through it only (from outside the folder)
      const folder = dirname(d);
      if (basename(d) !== 'index.ts' && existsSync(join(root, folder, 'index.ts')) && !isWithin(dirname(file), folder)) {
        problems.push(`imports around ${folder}/index.ts: ${file} -> ${d}`);
      }
    }
  }
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const problems = importProblems(process.cwd());
  for (const p of problems) console.error(p);
  if (problems.length) process.exit(1);
  console.log(`imports: no cycle, shared/ imports nothing above it (${importGraph(process.cwd()).size} files)`);
}
