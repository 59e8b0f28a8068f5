// Page → outputs, pure and synchronous (runs inside a worker thread, see pool.ts): the target's
// media type decides which converter makes them. HTML: html/convert.ts (one jsdom parse serves
// every output); PDF: pdf.ts; JSON, text and everything else: textual.ts.
import { isPdf, convertPdf } from './pdf.ts';
import { convertOther } from './textual.ts';
import { convertHtml } from './html/convert.ts';
import { isHtmlType, sniffType } from './sniff.ts';
import type { ConvertInput, ConvertResult } from './types.ts';

export { CONTENT_TYPES, type ConvertInput, type ConvertResult, type OutputFailure, type OutputFile, type TextOutput } from './types.ts';
export { mediaType, sniffType } from './sniff.ts';
export { countWords, readingTime } from './metadata.ts';
export { parseHtml, type ParsedPage } from './html/parse.ts';
export { needsJavaScript } from './html/detect-js.ts';
export { toText } from './html/outputs.ts';

export async function convert(input: ConvertInput): Promise<ConvertResult> {
  const mt = sniffType(input.body, input.contentType);
  if (isHtmlType(mt)) return convertHtml(input, mt);
  if (isPdf(mt)) return { outputs: await convertPdf(input, mt) };
  return { outputs: convertOther(input, mt) };
}
