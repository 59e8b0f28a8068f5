// `payloads convert`'s page-control flags and the websitepro body they make (docs/websitepro.md,
// "Page controls"). The API checks every value; this only shapes them.
import { readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';

export const CONVERT_OUTPUTS = ['markdown', 'text', 'metadata', 'html', 'pdf', 'links', 'images', 'rawHtml'] as const;

const many = (v: string, prev: string[] = []) => [...prev, v];
/** `@file` reads the file; anything else is the value itself. */
const fileOr = (v: string) => (v.startsWith('@') ? readFileSync(v.slice(1), 'utf8') : v);

export function addConvertOptions(cmd: Command): Command {
  for (const out of CONVERT_OUTPUTS) {
    const flag = out === 'rawHtml' ? 'raw-html' : out;
    cmd.addOption(new Option(`--${flag}`, `the ${out} output`));
  }
  return cmd
    .option('--remove <selector>', 'remove what this CSS selector matches first (repeatable)', many)
    .option('--target <selector>', 'convert only what this selector matches, in page order (repeatable)', many)
    .option('--no-main-content', 'convert the whole body, not only the main content')
    .option('--wait-for <selector>', 'render the page in a browser and wait for this selector')
    .option('--timeout <seconds>', 'how long the page may take, 1 to 60 s')
    .option('--header <name:value>', 'a request header sent to the target origin only (repeatable)', many)
    .option('--cookie <name=value>', 'a cookie sent to the target origin only (repeatable)', many)
    .option('--actions <json>', 'actions run before conversion: a JSON array, or @file')
    .option('--pdf-format <size>', 'A3, A4, A5, Letter, Legal or Tabloid')
    .option('--pdf-landscape', 'landscape pages')
    .option('--pdf-margin <lengths>', 'one length for all sides, or top,right,bottom,left (e.g. 1cm or 10mm,5mm,10mm,5mm)')
    .option('--pdf-scale <n>', '0.1 to 2')
    .option('--pdf-no-background', 'leave CSS backgrounds out')
    .option('--pdf-page-ranges <ranges>', 'e.g. 1-3,5')
    .option('--pdf-header <html>', 'header template (HTML, or @file); classes pageNumber, totalPages, date, title, url')
    .option('--pdf-footer <html>', 'footer template (HTML, or @file)');
}

function pair(v: string, sep: string, what: string): [string, string] {
  const i = v.indexOf(sep);
  if (i <= 0) throw new Error(`${what} ${JSON.stringify(v)}: expected name${sep}value`);
  return [v.slice(0, i).trim(), v.slice(i + 1).trim()];
}

/** The websitepro body of `payloads convert <url>` with these flags (commander's parsed options). */
export function convertBody(url: string, o: Record<string, unknown>): Record<string, unknown> {
  const outputs: string[] = CONVERT_OUTPUTS.filter((x) => o[x]);
  if (!outputs.length) outputs.push('markdown');
  const body: Record<string, unknown> = { url, outputs };
  if (Array.isArray(o.remove)) body.removeSelectors = o.remove;
  if (Array.isArray(o.target)) body.targetSelectors = o.target;
  if (o.mainContent === false) body.mainContent = false;
  if (typeof o.waitFor === 'string') body.waitFor = o.waitFor;
  if (o.timeout !== undefined) body.timeout = Number(o.timeout);
  if (Array.isArray(o.header)) body.headers = Object.fromEntries(o.header.map((h: string) => pair(h, ':', 'header')));
  if (Array.isArray(o.cookie)) body.cookies = o.cookie.map((c: string) => pair(c, '=', 'cookie')).map(([name, value]) => ({ name, value }));
  if (typeof o.actions === 'string') body.actions = JSON.parse(fileOr(o.actions));
  const pdf: Record<string, unknown> = {};
  if (typeof o.pdfFormat === 'string') pdf.format = o.pdfFormat;
  if (o.pdfLandscape) pdf.landscape = true;
  if (typeof o.pdfMargin === 'string') {
    const m = o.pdfMargin.split(',').map((s) => s.trim());
    const [top, right = top, bottom = top, left = right] = m;
    pdf.margin = { top, right, bottom, left };
  }
  if (o.pdfScale !== undefined) pdf.scale = Number(o.pdfScale);
  if (o.pdfNoBackground) pdf.printBackground = false;
  if (typeof o.pdfPageRanges === 'string') pdf.pageRanges = o.pdfPageRanges;
  if (typeof o.pdfHeader === 'string') pdf.headerTemplate = fileOr(o.pdfHeader);
  if (typeof o.pdfFooter === 'string') pdf.footerTemplate = fileOr(o.pdfFooter);
  if (Object.keys(pdf).length) body.pdf = pdf;
  return body;
}
