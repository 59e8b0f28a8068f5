// Decode a fetched body to text. Order: byte-order mark, the Content-Type charset, a <meta charset>
// or http-equiv in the first 1024 bytes, UTF-8 when the bytes are valid UTF-8, then statistical
// detection (chardet: Shift_JIS, EUC-JP, GB18030, windows-1251, KOI8-R, ISO-8859-x), and
// windows-1252 last (what browsers fall back to). The BOM comes first because it is unambiguous
// and browsers let it override the header too. A declared charset whose bytes do not decode (a page
// saying UTF-8 while sending Latin-1, the common "wrong charset") falls through to the next source.
import { detect } from 'chardet';

const labelOk = (label: string) => {
  try {
    return new TextDecoder(label).encoding;
  } catch {
    return null;
  }
};

export function charsetFromContentType(ct: string | undefined): string | null {
  const m = /charset\s*=\s*["']?([^"';\s]+)/i.exec(ct ?? '');
  return m ? m[1]!.toLowerCase() : null;
}

export function sniffMetaCharset(head: Uint8Array): string | null {
  const s = new TextDecoder('windows-1252').decode(head.subarray(0, 1024));
  const m = /<meta[^>]+charset\s*=\s*["']?\s*([a-z0-9_.:-]+)/i.exec(s);
  return m ? m[1]!.toLowerCase() : null;
}

function bom(b: Uint8Array): string | null {
  if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return 'utf-8';
  if (b[0] === 0xfe && b[1] === 0xff) return 'utf-16be';
  if (b[0] === 0xff && b[1] === 0xfe) return 'utf-16le';
  return null;
}

// Multi-byte legacy encodings can be judged invalid too: a Shift_JIS page declared as EUC-JP
// decodes with replacement characters, so those count as "does not decode" as well.
const CHECKED = new Set(['utf-8', 'utf-16le', 'utf-16be', 'shift_jis', 'euc-jp', 'iso-2022-jp', 'gbk', 'gb18030', 'big5', 'euc-kr']);

function tryDecode(b: Uint8Array, label: string): string | null {
  const enc = labelOk(label);
  if (!enc) return null;
  try {
    // single-byte encodings decode anything; only the checked ones can be judged invalid
    return new TextDecoder(enc, { fatal: CHECKED.has(enc) }).decode(b);
  } catch {
    return null;
  }
}

/** chardet on a sample of the bytes; null when it has no confident, decodable answer. */
function detected(b: Uint8Array): string | null {
  // markup is ASCII and dilutes the statistics; 64 KB is plenty for the language models
  const name = detect(b.subarray(0, 65536));
  if (!name) return null;
  const label = name.toLowerCase() === 'iso-8859-1' ? 'windows-1252' : name.toLowerCase();
  return labelOk(label) ? label : null;
}

export function decodeBody(body: Uint8Array, contentType: string | undefined, sniffMeta = true): { text: string; charset: string } {
  const lazy: (() => string | null)[] = [
    () => bom(body),
    () => charsetFromContentType(contentType),
    () => (sniffMeta ? sniffMetaCharset(body) : null),
    () => 'utf-8',
    () => detected(body),
  ];
  for (const next of lazy) {
    const c = next();
    if (!c) continue;
    // a <meta> claiming UTF-16 in an ASCII-compatible document is a lie the spec also ignores
    const label = c.startsWith('utf-16') && !bom(body) ? 'utf-8' : c;
    const text = tryDecode(body, label);
    if (text !== null) return { text: text.replace(/^\uFEFF/, ''), charset: labelOk(label)! };
  }
  return { text: new TextDecoder('windows-1252').decode(body), charset: 'windows-1252' };
}
