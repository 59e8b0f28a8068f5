// Prints the settings table of docs/configuration.md from the config schema, so the two cannot drift.
// `node --import tsx scripts/config-doc.ts` prints it, `--write` puts it in docs/configuration.md;
// test/platform/config-doc.test.ts checks the document holds it.
import { ConfigSchema, ENV } from '../shared/config/index.ts';

type S = {
  type?: string;
  default?: unknown;
  description?: string;
  properties?: Record<string, S>;
  anyOf?: S[];
  const?: unknown;
  items?: S;
};

const envOf = new Map(Object.entries(ENV).map(([name, { path }]) => [path, name]));

function typeOf(s: S): string {
  if (s.anyOf) return s.anyOf.map((x) => JSON.stringify(x.const)).join(' \\| ');
  if (s.type === 'array') return `${typeOf(s.items ?? {})}[]`;
  return s.type ?? 'object';
}

export function configTable(): string {
  const rows: string[] = ['| setting | env | type | default | meaning |', '|---|---|---|---|---|'];
  const walk = (s: S, path: string) => {
    if (s.type === 'object' && s.properties) {
      for (const [k, v] of Object.entries(s.properties)) walk(v, path ? `${path}.${k}` : k);
      return;
    }
    const def = s.default === undefined ? '' : `\`${JSON.stringify(s.default)}\``;
    rows.push(
      `| \`${path}\` | ${envOf.get(path) ? `\`${envOf.get(path)}\`` : ''} | ${typeOf(s)} | ${def} | ${(s.description ?? '').replaceAll('|', '\\|')} |`,
    );
  };
  walk(ConfigSchema as unknown as S, '');
  return rows.join('\n');
}

const START = '<!-- config:start -->';
const END = '<!-- config:end -->';

export const CONFIG_DOC = 'docs/configuration.md';

/** The document with its settings table replaced by the one generated now. */
export function withTable(doc: string): string {
  const a = doc.indexOf(START);
  const b = doc.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${CONFIG_DOC} has no config markers`);
  return `${doc.slice(0, a + START.length)}\n${configTable()}\n${doc.slice(b)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === '--write') {
    const { readFileSync, writeFileSync } = await import('node:fs');
    writeFileSync(CONFIG_DOC, withTable(readFileSync(CONFIG_DOC, 'utf8')));
  } else console.log(configTable());
}
