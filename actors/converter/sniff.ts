// The media type of a target: the declared Content-Type, or a look at the bytes when none was sent.

export const mediaType = (ct: string) => (ct.split(';')[0] ?? '').trim().toLowerCase() || 'application/octet-stream';
export const isHtmlType = (mt: string) => mt === 'text/html' || mt === 'application/xhtml+xml';
export const isJsonType = (mt: string) => mt === 'application/json' || mt.endsWith('+json');
export const isTextType = (mt: string) => mt === 'text/plain' || mt === 'text/markdown' || mt === 'text/csv';

/** When no Content-Type was sent, look at the bytes (what browsers call sniffing, kept small). */
export function sniffType(body: Uint8Array, declared: string): string {
  const mt = mediaType(declared);
  if (declared && mt !== 'application/octet-stream') return mt;
  const head = new TextDecoder('latin1').decode(body.subarray(0, 512)).trimStart().toLowerCase();
  if (head.startsWith('%pdf-')) return 'application/pdf';
  if (/^<(!doctype html|html|head|body|p|div|title)[\s>]/.test(head)) return 'text/html';
  if (head.startsWith('{') || head.startsWith('[')) return 'application/json';
  if (body[0] === 0x89 && body[1] === 0x50) return 'image/png';
  if (body[0] === 0xff && body[1] === 0xd8) return 'image/jpeg';
  return mt;
}
