// The HTML output's document around a body (the same frame for pages, PDFs and text targets).

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function htmlDocument(title: string | null, lang: string | null, body: string): string {
  return `<!doctype html>\n<html${lang ? ` lang="${escapeHtml(lang)}"` : ''}>\n<head>\n<meta charset="utf-8">\n<meta name="referrer" content="no-referrer">\n<title>${escapeHtml(title ?? '')}</title>\n</head>\n<body>\n<article>\n${title ? `<h1>${escapeHtml(title)}</h1>\n` : ''}${body.trim()}\n</article>\n</body>\n</html>\n`;
}
