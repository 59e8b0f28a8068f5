// Page → outputs, pure and synchronous (runs inside a worker thread, see pool.ts): the target's
// media type decides which converter makes them. HTML: html/convert.ts (one jsdom parse serves
// every output); PDF: pdf.ts; JSON, text and everything else: textual.ts.
import { isPdf, convertPdf } from './pdf.ts';
import { convertOther } from './textual.ts';
import { convertHtml } from './html/convert.ts';
import { isHtmlType, sniffType } from './sniff.ts';
import { ELEMENT_OUTPUTS, unsupported, type ConvertInput, type ConvertResult } from './types.ts';

export { CONTENT_TYPES, type ConvertInput, type ConvertResult, type OutputFailure, type OutputFile, type TextOutput } from './types.ts';
export { mediaType, sniffType } from './sniff.ts';
export { countWords, readingTime } from './metadata.ts';
export { parseHtml, type ParsedPage } from './html/parse.ts';
export { needsJavaScript } from './html/detect-js.ts';
export { toText } from './html/outputs.ts';

export async function convert(input: ConvertInput): Promise<ConvertResult> {
  const mt = sniffType(input.body, input.contentType);
  if (isHtmlType(mt)) return convertHtml(input, mt);
  // links, images and selectors are an HTML page's: any other target has none of them
  const rest = { ...input, outputs: input.outputs.filter((o) => !ELEMENT_OUTPUTS.has(o)) };
  const outputs = isPdf(mt) ? await convertPdf(rest, mt) : convertOther(rest, mt);
  for (const o of input.outputs) if (ELEMENT_OUTPUTS.has(o)) outputs[o] = unsupported(mt, o);
  const target = input.controls?.targetSelectors;
  if (target?.length)
    for (const o of rest.outputs)
      if (o !== 'metadata')
        outputs[o] = { ok: false, error: 'unsupported_content', message: `targetSelectors apply to HTML pages; the target is ${mt}` };
  return { outputs };
}
