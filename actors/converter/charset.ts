// Decode a fetched body to text: byte-order mark, then the Content-Type charset, then a <meta>
// charset in the first 1024 bytes, then UTF-8 if the bytes are valid UTF-8, else windows-1252
// (what browsers fall back to). A declared charset whose bytes do not decode (a page saying UTF-8
// while sending Latin-1, the common "wrong charset") falls through to the next source.

const labelOk = (label: string) => {
  try {
    return new TextDecoder(label).encoding;
  } catch {
    return null;
  }
};

export function charsetFromContentType(ct: string | undefined): string | null {
  const m = /charset\s*=\s*"?([^";\s]+)/i.exec(ct ?? '');
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

function tryDecode(b: Uint8Array, label: string): string | null {
  const enc = labelOk(label);
  if (!enc) return null;
  try {
    // only UTF-8 (and UTF-16) can be judged invalid; single-byte encodings decode anything
    return new TextDecoder(enc, { fatal: enc.startsWith('utf') }).decode(b);
  } catch {
    return null;
  }
}

export function decodeBody(body: Uint8Array, contentType: string | undefined, sniffMeta = true): { text: string; charset: string } {
  const candidates = [bom(body), charsetFromContentType(contentType), sniffMeta ? sniffMetaCharset(body) : null, 'utf-8'];
  for (const c of candidates) {
    if (!c) continue;
    // a <meta> claiming UTF-16 in an ASCII-compatible document is a lie the spec also ignores
    const label = c.startsWith('utf-16') && !bom(body) ? 'utf-8' : c;
    const text = tryDecode(body, label);
    if (text !== null) return { text: text.replace(/^\uFEFF/, ''), charset: labelOk(label)! };
  }
  return { text: new TextDecoder('windows-1252').decode(body), charset: 'windows-1252' };
}
