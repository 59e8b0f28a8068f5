// Prints the settings table of the README from the config schema, so the two cannot drift.
// `node --import tsx scripts/config-doc.ts` ; test/platform/readme.test.ts checks the README holds it.
import { ConfigSchema, ENV } from '../shared/config/index.ts';

type S = { type?: string; default?: unknown; description?: string; properties?: Record<string, S>; anyOf?: S[]; const?: unknown; items?: S };

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
    rows.push(`| \`${path}\` | ${envOf.get(path) ? `\`${envOf.get(path)}\`` : ''} | ${typeOf(s)} | ${def} | ${(s.description ?? '').replaceAll('|', '\\|')} |`);
  };
  walk(ConfigSchema as unknown as S, '');
  return rows.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(configTable());
