// Prints the service endpoint table of docs/operations.md from the declarations in shared/protocol/,
// so the two cannot drift. `node --import tsx scripts/endpoints-doc.ts [--write]`;
// test/platform/endpoints-doc.test.ts checks the file holds it.
import type { TSchema } from '@sinclair/typebox';
import { SERVICE_APIS } from '../shared/protocol/services.ts';

type S = TSchema & {
  type?: string;
  properties?: Record<string, S>;
  required?: string[];
  items?: S;
  anyOf?: S[];
  const?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
};

/** A schema as a short JSON-like shape: `{walletId: string, limit?: integer 1..100}`. */
export function shape(s: S): string {
  if (s.anyOf) return s.anyOf.map(shape).join(' \\| ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.type === 'array') return `${shape(s.items ?? ({} as S))}[]`;
  if (s.type === 'object' && s.properties && Object.keys(s.properties).length) {
    const req = new Set(s.required ?? []);
    return `{${Object.entries(s.properties)
      .map(([k, v]) => `${k}${req.has(k) ? '' : '?'}: ${shape(v)}`)
      .join(', ')}}`;
  }
  if (s.type === 'object') return s.description ?? '{}';
  const range = s.minimum !== undefined || s.maximum !== undefined ? ` ${s.minimum ?? ''}..${s.maximum ?? ''}` : '';
  return `${s.type ?? 'any'}${range}`;
}

export function endpointsTable(): string {
  const rows = ['| service | subject | what | request | reply | timeout |', '|---|---|---|---|---|---|'];
  for (const api of SERVICE_APIS) {
    for (const e of api.endpoints) {
      rows.push(
        `| \`${api.service}\` | \`${e.subject}\` | ${e.summary.replaceAll('|', '\\|')} | \`${shape(e.request as S)}\` | \`${shape(e.reply as S)}\` | ${e.timeoutMs / 1000} s |`,
      );
    }
  }
  return rows.join('\n');
}

const START = '<!-- endpoints:start -->';
const END = '<!-- endpoints:end -->';

/** docs/operations.md with its endpoint table replaced by the one generated now. */
export function operationsWithTable(doc: string): string {
  const a = doc.indexOf(START);
  const b = doc.indexOf(END);
  if (a < 0 || b < a) throw new Error('docs/operations.md has no endpoints markers');
  return `${doc.slice(0, a + START.length)}\n${endpointsTable()}\n${doc.slice(b)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === '--write') {
    const { readFileSync, writeFileSync } = await import('node:fs');
    writeFileSync('docs/operations.md', operationsWithTable(readFileSync('docs/operations.md', 'utf8')));
  } else console.log(endpointsTable());
}
