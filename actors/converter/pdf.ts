// A PDF target: its text (pdf.js through unpdf) for text and markdown, its document information
// for metadata. The PDF itself is the `pdf` result (index.ts); nothing here renders pages.
import type { PageMetadataDoc } from '../../shared/schemas/metadata.ts';
import { escapeHtml, htmlDocument } from './html-document.ts';
import { countWords, emptyMetadata, readingTime } from './metadata.ts';
import { file, type ConvertInput, type OutputFailure, type OutputFile, type TextOutput } from './types.ts';

export const isPdf = (mt: string) => mt === 'application/pdf' || mt === 'application/x-pdf';

export interface PdfContent {
  pages: string[];
  title: string | null;
  author: string | null;
  subject: string | null;
  keywords: string[];
  language: string | null;
  created: string | null;
  modified: string | null;
}

const str = (v: unknown) => (typeof v === 'string' && v.replace(/\s+/g, ' ').trim() ? v.replace(/\s+/g, ' ').trim() : null);

/** `D:YYYYMMDDHHmmSSOHH'mm` (PDF 32000-1, 7.9.4) → ISO 8601; null when it is not such a date. */
export function pdfDate(v: unknown): string | null {
  const m = /^(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(Z|[+-]\d{2}'?\d{2}'?)?/.exec(str(v) ?? '');
  if (!m) return null;
  const [, y, mo = '01', d = '01', h = '00', mi = '00', s = '00', tz] = m;
  const zone = !tz || tz === 'Z' ? 'Z' : `${tz.slice(0, 3)}:${tz.replace(/'/g, '').slice(3, 5) || '00'}`;
  const iso = `${y}-${mo}-${d}T${h}:${mi}:${s}${zone}`;
  return Number.isNaN(Date.parse(iso)) ? null : iso;
}

export async function readPdf(body: Uint8Array): Promise<PdfContent> {
  // loaded on the first PDF only: pdf.js is a few MB of code every conversion thread would carry
  const { getDocumentProxy, extractText, getMeta } = await import('unpdf');
  // pdf.js takes ownership of (detaches) the buffer it is given: hand it a copy
  const doc = await getDocumentProxy(new Uint8Array(body));
  try {
    const { text } = await extractText(doc, { mergePages: false });
    const { info, metadata } = await getMeta(doc);
    const i = (info ?? {}) as Record<string, unknown>;
    const xmp = (k: string) => {
      try {
        return str((metadata as { get?(k: string): unknown } | undefined)?.get?.(k));
      } catch {
        return null;
      }
    };
    return {
      pages: text.map((p) => p.replace(/[ \t]+\n/g, '\n').trim()),
      title: str(i.Title) ?? xmp('dc:title'),
      author: str(i.Author) ?? xmp('dc:creator'),
      subject: str(i.Subject) ?? xmp('dc:description'),
      keywords: (str(i.Keywords) ?? '')
        .split(/[,;]/)
        .map((k) => k.trim())
        .filter(Boolean),
      language: str(i.Language) ?? xmp('dc:language'),
      created: pdfDate(i.CreationDate),
      modified: pdfDate(i.ModDate),
    };
  } finally {
    await doc.cleanup();
    await doc.loadingTask.destroy();
  }
}

/** Metadata fields a PDF can fill. */
export function pdfMetadata(p: PdfContent): Partial<PageMetadataDoc> {
  return {
    title: p.title,
    author: p.author,
    description: p.subject,
    keywords: p.keywords,
    language: p.language,
    publishedTime: p.created,
    modifiedTime: p.modified,
  };
}

/** Paragraphs of a page: pdf.js gives one line per text line; a blank line stays a paragraph break. */
export function pdfMarkdown(p: PdfContent): string {
  const body = p.pages
    .filter(Boolean)
    .map((page) =>
      page
        .replace(/([\\`*_[\]])/g, '\\$1')
        .replace(/<(?=[A-Za-z/!?])/g, '\\<')
        .replace(/^(\s*)([#>+-]|\d+\.)(?=\s)/gm, '$1\\$2'),
    )
    .join('\n\n---\n\n');
  return `${p.title ? `# ${p.title}\n\n` : ''}${body}\n`;
}

export function pdfText(p: PdfContent): string {
  const body = p.pages.filter(Boolean).join('\n\n');
  return `${p.title && !body.startsWith(p.title) ? `${p.title}\n\n` : ''}${body}\n`;
}

/** A PDF target's outputs: metadata always (with a warning when it cannot be read), text, markdown and html from its text layer. */
export async function convertPdf(input: ConvertInput, mt: string): Promise<Partial<Record<TextOutput, OutputFile | OutputFailure>>> {
  const out: Partial<Record<TextOutput, OutputFile | OutputFailure>> = {};
  let pdf: PdfContent | null = null;
  let why = '';
  try {
    pdf = await readPdf(input.body);
  } catch (e) {
    why = (e as Error).message;
  }
  const text = pdf ? pdfText(pdf) : '';
  for (const o of input.outputs) {
    if (o === 'metadata') {
      const words = countWords(text);
      const meta = {
        ...emptyMetadata(input, mt, null),
        ...(pdf ? pdfMetadata(pdf) : {}),
        wordCount: words,
        readingTimeMinutes: readingTime(words),
        favicon: new URL('/favicon.ico', input.finalUrl).href,
      };
      if (!pdf) meta.warnings.push(`the PDF could not be read: ${why}`);
      out.metadata = file('metadata', JSON.stringify(meta, null, 2));
    } else if (!pdf) {
      out[o] = { ok: false, error: 'conversion_failed', message: `the PDF could not be read: ${why}` };
    } else if (!text.trim()) {
      // a scanned PDF has pictures of text only; there is no OCR here
      out[o] = { ok: false, error: 'unsupported_content', message: 'the PDF has no text layer (scanned pages?)' };
    } else if (o === 'text') out.text = file('text', text);
    else if (o === 'markdown') out.markdown = file('markdown', pdfMarkdown(pdf));
    else if (o === 'html')
      out.html = file(
        'html',
        htmlDocument(
          pdf.title,
          pdf.language,
          pdf.pages
            .filter(Boolean)
            .map((pg) =>
              pg
                .split(/\n{2,}/)
                .map((para) => `<p>${escapeHtml(para).replace(/\n/g, '<br>')}</p>`)
                .join('\n'),
            )
            .join('\n<hr>\n'),
        ),
      );
  }
  return out;
}
