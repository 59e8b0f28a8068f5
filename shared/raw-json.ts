// JSON text kept as text inside a value that is serialised later: `encodeParts` (the gateway's
// answers, gateway/pipeline/reply.ts) puts its UTF-8 in as it is, made once per RawJson; any other
// JSON.stringify (an idempotent answer stored, a webhook) gets its parsed value, the same JSON. Used
// for a page set's first results, serialised once per job and reused by every read
// (shared/jobs/page-results.ts): an answer of a thousand inline results allocates no ~400 KB string
// per read, which had made the gateway's collector pause its event loop for several ms a few times
// a second (the crawl bench's job reads, docs/performance.md).
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

/** JSON.stringify's JSON, each RawJson's text in as it is: one string when it holds none, else UTF-8 parts. */
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
