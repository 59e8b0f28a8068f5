// Targets that are not HTML or PDF: JSON, plain text, Markdown and CSV pass through (JSON
// pretty-printed, fenced in Markdown); anything else (images, archives) has metadata only.
import { decodeBody } from './charset.ts';
import { escapeHtml, htmlDocument } from './html-document.ts';
import { countWords, emptyMetadata, readingTime } from './metadata.ts';
import { isJsonType, isTextType } from './sniff.ts';
import { file, unsupported, type ConvertInput, type OutputFailure, type OutputFile, type TextOutput } from './types.ts';

export function convertOther(input: ConvertInput, mt: string): Partial<Record<TextOutput, OutputFile | OutputFailure>> {
  const out: Partial<Record<TextOutput, OutputFile | OutputFailure>> = {};
  const textual = isJsonType(mt) || isTextType(mt);
  let text: string | null = null;
  let charset: string | null = null;
  if (textual) {
    const d = decodeBody(input.body, input.contentType, false);
    text = d.text;
    charset = d.charset;
    if (isJsonType(mt)) {
      try {
        text = JSON.stringify(JSON.parse(text), null, 2);
      } catch {
        /* not valid JSON: keep it as sent */
      }
    }
  }
  const words = text ? countWords(text) : 0;
  for (const o of input.outputs) {
    if (o === 'metadata') {
      const meta = emptyMetadata(input, mt, charset);
      meta.wordCount = words;
      meta.readingTimeMinutes = readingTime(words);
      meta.favicon = new URL('/favicon.ico', input.finalUrl).href;
      if (mt.startsWith('image/')) meta.image = input.finalUrl;
      out.metadata = file('metadata', JSON.stringify(meta, null, 2));
    } else if (text === null) {
      out[o] = unsupported(mt, o);
    } else if (o === 'text') {
      out.text = file('text', text.endsWith('\n') ? text : `${text}\n`);
    } else if (o === 'markdown') {
      const fence = '`'.repeat(Math.max(3, longestRun(text, '`') + 1));
      // JSON is code; plain text and Markdown pass through as they are; CSV stays a fenced block
      const body = isJsonType(mt)
        ? `${fence}json\n${text}\n${fence}\n`
        : mt === 'text/csv'
          ? `${fence}csv\n${text}\n${fence}\n`
          : text.endsWith('\n')
            ? text
            : `${text}\n`;
      out.markdown = file('markdown', body);
    } else if (o === 'html') {
      out.html = file('html', htmlDocument(null, null, `<pre>${escapeHtml(text)}</pre>`));
    }
  }
  return out;
}

function longestRun(s: string, ch: string): number {
  let best = 0,
    cur = 0;
  for (const c of s) {
    cur = c === ch ? cur + 1 : 0;
    best = Math.max(best, cur);
  }
  return best;
}
