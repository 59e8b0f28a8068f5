// JSON text kept as text inside a value that is serialised later: `stringify` (the gateway's
// answers, gateway/pipeline/reply.ts) puts it in as it is; any other JSON.stringify (an
// idempotent answer stored, a webhook) gets its parsed value, the same JSON. Used for a page set's
// first results, serialised once per job and reused by every read (shared/jobs/page-results.ts).
// `encodeParts` gives the answer as bytes in parts, each RawJson's UTF-8 (made once per RawJson) as
// it is: an answer of a thousand inline results allocates no ~400 KB string per read, which had
// made the gateway's collector pause its event loop for several ms a few times a second (the crawl
// bench's job reads, docs/performance.md).
import { randomBytes } from 'node:crypto';

// a per-process mark no stored text can hold (a NUL and 16 random hex digits)
const MARK = `\u0000raw${randomBytes(8).toString('hex')}:`;
const MARK_RE = new RegExp(`"${JSON.stringify(MARK).slice(1, -1).replace(/\\/g, '\\\\')}(\\d+)"`, 'g');
let taken: RawJson[] | null = null;

export class RawJson {
  readonly text: string;
  #bytes: Uint8Array | undefined;
  /** `text` must be one JSON value. */
  constructor(text: string) {
    this.text = text;
  }
  /** The text's UTF-8, made on first use and kept with this value. */
  get bytes(): Uint8Array {
    this.#bytes ??= Buffer.from(this.text, 'utf8');
    return this.#bytes;
  }
  toJSON(): unknown {
    if (!taken) return JSON.parse(this.text);
    taken.push(this);
    return `${MARK}${taken.length - 1}`;
  }
}

/** JSON.stringify's text and the RawJson values taken out of it (none: the text is the whole JSON). */
function withMarks(value: unknown): { out: string; raws: RawJson[] } {
  const outer = taken;
  taken = [];
  try {
    return { out: JSON.stringify(value), raws: taken };
  } finally {
    taken = outer;
  }
}

/** JSON.stringify, with each RawJson's text put in as it is. */
export function stringify(value: unknown): string {
  const { out, raws } = withMarks(value);
  return raws.length ? out.replace(MARK_RE, (_, i: string) => raws[Number(i)]!.text) : out;
}

/** The same JSON as `stringify`, as one string when it holds no RawJson, else as UTF-8 parts. */
export function encodeParts(value: unknown): string | Uint8Array[] {
  const { out, raws } = withMarks(value);
  if (!raws.length) return out;
  const parts: Uint8Array[] = [];
  let at = 0;
  for (const m of out.matchAll(MARK_RE)) {
    parts.push(Buffer.from(out.slice(at, m.index), 'utf8'), raws[Number(m[1])]!.bytes);
    at = m.index + m[0].length;
  }
  parts.push(Buffer.from(out.slice(at), 'utf8'));
  return parts;
}
