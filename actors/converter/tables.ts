// Tables for readers, not browsers. Layout tables (one cell, a nested table, cells holding blocks,
// role=presentation) are flattened into the surrounding flow before any output is made; data
// tables stay tables and become GFM pipe tables in Markdown (markdown.ts), with colspan/rowspan
// expanded on a grid. Rules in docs/websitepro.md.

import { firstDescendant, hasDescendantNamed } from './elements.ts';

// element walks, not selectors: jsdom compiles each selector again for every page (elements.ts)
const BLOCK_IN_CELL = new Set([
  'p',
  'ul',
  'ol',
  'dl',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'pre',
  'blockquote',
  'figure',
  'table',
  'section',
  'article',
  'hr',
]);
const IMG = new Set(['img']);
/** `table.querySelector(':scope > caption')` */
const captionOf = (table: Element): Element | null => {
  for (let c = table.firstElementChild; c; c = c.nextElementSibling) if (c.localName === 'caption') return c;
  return null;
};

const directRows = (table: Element): Element[] => {
  const rows: Element[] = [];
  for (const child of table.children) {
    if (child.tagName === 'TR') rows.push(child);
    else if (child.tagName === 'THEAD' || child.tagName === 'TBODY' || child.tagName === 'TFOOT')
      for (const tr of child.children) if (tr.tagName === 'TR') rows.push(tr);
  }
  return rows;
};
const cellsOf = (tr: Element) => [...tr.children].filter((c) => c.tagName === 'TD' || c.tagName === 'TH');

export function isLayoutTable(table: Element): boolean {
  const role = (table.getAttribute('role') ?? '').toLowerCase();
  if (role === 'presentation' || role === 'none') return true;
  const cells = directRows(table).flatMap(cellsOf);
  if (cells.length <= 1) return true;
  return cells.some((c) => hasDescendantNamed(c, BLOCK_IN_CELL));
}

/**
 * Replace every layout table by its content: a row of a header cell and inline cells becomes one
 * paragraph (`**Born**: 10 December 1815`), any other cell its own block. Innermost tables are
 * decided first, so a data table nested in a layout table survives as a table.
 */
export function flattenLayoutTables(root: Element, found?: Element[]): void {
  // `found`: the tables under root in document order, when the caller walked the tree already
  const tables = found ?? allTables(root);
  const layout = new Set(tables.filter(isLayoutTable));
  const doc = root.ownerDocument;
  for (const table of tables.reverse()) {
    if (!layout.has(table)) continue;
    const box = doc.createElement('div');
    const caption = captionOf(table);
    if (caption && caption.textContent?.trim()) {
      const p = doc.createElement('p');
      while (caption.firstChild) p.appendChild(caption.firstChild);
      box.appendChild(p);
    }
    for (const tr of directRows(table)) {
      const cells = cellsOf(tr).filter((c) => c.textContent?.trim() || hasDescendantNamed(c, IMG));
      if (!cells.length) continue;
      const inline = cells.every((c) => !hasDescendantNamed(c, BLOCK_IN_CELL));
      if (inline && cells.length > 1) {
        const p = doc.createElement('p');
        cells.forEach((c, i) => {
          if (i) p.appendChild(doc.createTextNode(i === 1 && cells[0]!.tagName === 'TH' ? ': ' : ' — '));
          const holder = i === 0 && c.tagName === 'TH' ? p.appendChild(doc.createElement('strong')) : p;
          while (c.firstChild) holder.appendChild(c.firstChild);
        });
        box.appendChild(p);
      } else {
        for (const c of cells) {
          const d = doc.createElement('div');
          while (c.firstChild) d.appendChild(c.firstChild);
          box.appendChild(d);
        }
      }
    }
    table.replaceWith(box);
  }
}

export interface TableGrid {
  caption: Element | null;
  /** Rows of cells; a spanned position holds the spanning cell again. */
  rows: Element[][];
  /** Whether rows[0] is a header row (thead, or every cell a <th>). */
  header: boolean;
  columns: number;
}

/** The table as a rectangular grid, colspan and rowspan expanded (the spanning cell repeated). */
export function tableGrid(table: Element): TableGrid {
  const trs = directRows(table);
  const grid: Element[][] = [];
  trs.forEach((tr, r) => {
    grid[r] ??= [];
    let col = 0;
    for (const cell of cellsOf(tr)) {
      while (grid[r]![col]) col++;
      const cs = Math.min(Math.max(1, Number(cell.getAttribute('colspan')) || 1), 100);
      const rs = Math.min(Math.max(1, Number(cell.getAttribute('rowspan')) || 1), trs.length - r);
      for (let dr = 0; dr < rs; dr++) {
        grid[r + dr] ??= [];
        for (let dc = 0; dc < cs; dc++) grid[r + dr]![col + dc] = cell;
      }
      col += cs;
    }
  });
  const rows = grid.filter((row) => row && row.some(Boolean));
  const columns = Math.max(0, ...rows.map((r) => r.length));
  const first = trs[0];
  const header = !!first && (first.parentElement?.tagName === 'THEAD' || cellsOf(first).every((c) => c.tagName === 'TH'));
  return { caption: captionOf(table), rows, header, columns };
}

function allTables(root: Element): Element[] {
  const out: Element[] = [];
  firstDescendant(root, (e) => {
    if (e.localName === 'table') out.push(e);
    return false;
  });
  return out;
}
