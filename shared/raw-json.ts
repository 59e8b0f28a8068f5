// JSON text kept as text inside a value that is serialised later: `stringify` (the gateway's
// answers, gateway/pipeline/reply.ts) puts it in as it is; any other JSON.stringify (an
// idempotent answer stored, a webhook) gets its parsed value, the same JSON. Used for a page set's
// first results, serialised once per job and reused by every read (shared/jobs/page-results.ts).
import { randomBytes } from 'node:crypto';

// a per-process mark no stored text can hold (a NUL and 16 random hex digits)
const MARK = `\u0000raw${randomBytes(8).toString('hex')}:`;
const MARK_RE = new RegExp(`"${JSON.stringify(MARK).slice(1, -1).replace(/\\/g, '\\\\')}(\\d+)"`, 'g');
let taken: string[] | null = null;

export class RawJson {
  readonly text: string;
  /** `text` must be one JSON value. */
  constructor(text: string) {
    this.text = text;
  }
  toJSON(): unknown {
    if (!taken) return JSON.parse(this.text);
    taken.push(this.text);
    return `${MARK}${taken.length - 1}`;
  }
}

/** JSON.stringify, with each RawJson's text put in as it is. */
export function stringify(value: unknown): string {
  const outer = taken;
  taken = [];
  try {
    const out = JSON.stringify(value);
    if (!taken.length) return out;
    const texts = taken;
    return out.replace(MARK_RE, (_, i: string) => texts[Number(i)]!);
  } finally {
    taken = outer;
  }
}
