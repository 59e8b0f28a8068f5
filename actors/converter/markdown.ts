// Main content → Markdown with turndown. GFM strikethrough, task lists and highlighted code come
// from @joplin/turndown-plugin-gfm; tables do not: its table rule keeps any table it cannot convert
// as raw HTML and crashes on cells whose table is gone, so tables are written here from a grid
// (tables.ts). Rules are listed in docs/websitepro.md.
import TurndownService from 'turndown';
import { strikethrough, taskListItems, highlightedCodeBlock } from '@joplin/turndown-plugin-gfm';
import { tableGrid } from './tables.ts';
import { hasAncestorNamed } from './elements.ts';

const CELL_TAGS = new Set(['TD', 'TH']);
const TABLE_PARTS = new Set(['TR', 'THEAD', 'TBODY', 'TFOOT', 'CAPTION', 'COLGROUP', 'COL']);
const TABLE = new Set(['table']);
/** `n.closest('table')` for a cell or table part (never a table itself), without a selector. */
const inTable = (n: Node) => hasAncestorNamed(n as Element, TABLE);

/** One cell's Markdown on one line, pipes escaped (GFM needs `\|` even inside code spans). */
const cellText = (md: string | undefined) =>
  (md ?? '')
    .replace(/\s*\n\s*/g, ' ')
    .replace(/(?<!\\)\|/g, '\\|')
    .trim();

let service: TurndownService | null = null;
/** The cells' Markdown, written by the cell rule and read by the table rule (children convert first). */
let cellMarkdown = new WeakMap<Node, string>();

function build(): TurndownService {
  const td = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-', emDelimiter: '_', hr: '---' });
  td.use([strikethrough, taskListItems, highlightedCodeBlock]);
  td.remove(['script', 'style', 'noscript', 'iframe', 'form', 'button', 'input', 'select', 'textarea', 'svg', 'template'] as never);
  // a literal "<tag" in text would be read as HTML by every Markdown renderer
  const escapeMarkdown = td.escape.bind(td);
  td.escape = (s: string) => escapeMarkdown(s).replace(/<(?=[A-Za-z/!?])/g, '\\<');
  td.addRule('link', {
    filter: (n) => n.nodeName === 'A',
    replacement: (content, n) => {
      const el = n as Element;
      const href = el.getAttribute('href');
      const text = content.trim();
      // no empty links: a link with neither text nor image says nothing
      if (!text) return '';
      if (!href || href.startsWith('#')) return content;
      const title = el.getAttribute('title');
      return `[${text.replace(/\n+/g, ' ')}](${href.replace(/[()]/g, (c) => encodeURIComponent(c))}${title ? ` "${title.replace(/"/g, '\\"')}"` : ''})`;
    },
  });
  // "- item" and "1. item" with one space (turndown pads markers to four columns), nested
  // content indented under the text
  td.addRule('listItem', {
    filter: 'li',
    replacement: (content, n) => {
      const parent = n.parentNode as Element | null;
      let prefix = '- ';
      if (parent?.nodeName === 'OL') {
        const start = Number(parent.getAttribute('start') ?? 1) || 1;
        prefix = `${start + [...parent.children].indexOf(n as Element)}. `;
      }
      const body = content
        .replace(/^\n+/, '')
        .replace(/\n+$/, '\n')
        .replace(/\n(?!$)/g, `\n${' '.repeat(prefix.length)}`);
      return prefix + body + (n.nextSibling && !body.endsWith('\n') ? '\n' : '');
    },
  });
  td.addRule('tableCell', {
    filter: (n) => CELL_TAGS.has(n.nodeName),
    replacement: (content, n) => {
      // a cell whose table was taken away (Readability does that) is just a block of text
      if (!inTable(n)) return `\n\n${content}\n\n`;
      cellMarkdown.set(n, content);
      return '';
    },
  });
  td.addRule('tablePart', {
    filter: (n) => TABLE_PARTS.has(n.nodeName) && inTable(n),
    replacement: (content, n) => {
      if (n.nodeName === 'CAPTION') cellMarkdown.set(n, content);
      return '';
    },
  });
  td.addRule('strayTablePart', { filter: (n) => TABLE_PARTS.has(n.nodeName), replacement: (content) => `\n\n${content}\n\n` });
  td.addRule('table', { filter: 'table', replacement: (_content, n) => `\n\n${pipeTable(n as Element)}\n\n` });
  return td;
}

/**
 * A GFM pipe table. A table without a header row gets an empty header rather than promoting its
 * first data row, so data is never mislabelled as column names.
 */
function pipeTable(table: Element): string {
  const g = tableGrid(table);
  const cell = (c: Element | undefined) => (c ? cellText(cellMarkdown.get(c)) : '');
  const rows = g.rows.map((r) => Array.from({ length: g.columns }, (_, i) => cell(r[i])));
  const nonEmpty = rows.filter((r) => r.some((x) => x));
  const caption = g.caption ? cellText(cellMarkdown.get(g.caption)) : '';
  if (!nonEmpty.length || !g.columns) return caption;
  const line = (r: string[]) => `| ${r.join(' | ')} |`;
  const head = g.header ? rows.shift()! : Array.from({ length: g.columns }, () => '');
  const body = rows.filter((r) => r.some((x) => x));
  const md = [line(head), line(head.map(() => '---')), ...body.map(line)].join('\n');
  return caption ? `${caption}\n\n${md}` : md;
}

export function markdownOf(root: Element): string {
  service ??= build();
  cellMarkdown = new WeakMap();
  return service.turndown(root as unknown as HTMLElement);
}
