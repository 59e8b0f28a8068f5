// Nesting depth cap before jsdom parses a page. jsdom, Readability and turndown all do work that
// grows with the depth of the tree for every node (ancestor walks, textContent of every ancestor,
// recursion): 5000 nested <div>s took about 2 minutes and then overflowed the stack. Browsers cap
// the tree the parser builds (Chromium: 512 levels; an element that would go deeper is attached to
// its parent's parent instead, so it stays at the limit); here the limit is lower because the conversion, unlike layout, costs ~depth² per
// page (docs/websitepro.md: 400 levels ≈ 3-5 s, 128 levels ≈ 0.2-0.5 s). Real pages stay far below it
// (Lighthouse already warns at 32).
//
// A cheap scan over the tags gives an upper bound of the depth; only a page whose bound passes the
// limit is parsed once more with parse5 (the parser jsdom itself uses) into a tree capped the way
// Chromium caps it, and serialised for jsdom. No text is dropped: only the nesting below the limit is flattened.
import { parse, serialize, defaultTreeAdapter, type DefaultTreeAdapterMap, type TreeAdapter } from 'parse5';

/** Deepest element nesting a converted page keeps (elements counted from <html> = 1). */
export const MAX_DEPTH = 128;

const VOID = new Set([
  'area',
  'base',
  'basefont',
  'bgsound',
  'br',
  'col',
  'embed',
  'frame',
  'hr',
  'image',
  'img',
  'input',
  'keygen',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);
// their content is text up to their end tag: a "<div" inside a script is no element
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes']);
// a start tag of these closes an open one of its kind (outside tables and lists nested in them)
const CLOSES_OWN_KIND = new Set(['p', 'li', 'dt', 'dd', 'option']);

/**
 * An upper bound of the element nesting of `html`, from its tags alone: per tag name, start tags
 * minus end tags (never below zero), summed. An end tag the parser ignores can only lower a count
 * that was already too high, and elements the parser closes on its own stay counted, so the sum
 * does not fall below the depth the parser builds (up to the few elements it adds itself: html,
 * head, body, tbody, tr; hence the margin in needsCap()). Linear, one pass, no allocation per tag.
 */
export function nestingBound(html: string): number {
  const lower = html.toLowerCase();
  const open = new Map<string, number>();
  let depth = 0;
  let max = 0;
  let foreign = 0; // inside <svg>/<math>, "/>" really closes the element
  const tag = /<(\/?)([a-z][^\s/>]*)|<!--/g;
  let m: RegExpExecArray | null;
  while ((m = tag.exec(lower))) {
    if (m[0] === '<!--') {
      const end = lower.indexOf('-->', m.index + 4);
      if (end < 0) break;
      tag.lastIndex = end + 3;
      continue;
    }
    const name = m[2]!;
    if (VOID.has(name)) continue;
    const n = open.get(name) ?? 0;
    if (m[1]) {
      if (n > 0) {
        open.set(name, n - 1);
        depth--;
        if (name === 'svg' || name === 'math') foreign--;
      }
      continue;
    }
    const close = lower.indexOf('>', tag.lastIndex);
    if (close < 0) break;
    if (foreign > 0 && lower.charCodeAt(close - 1) === 47 /* / */) continue;
    if (RAW_TEXT.has(name)) {
      const end = lower.indexOf(`</${name}`, close);
      if (end < 0) break;
      tag.lastIndex = end;
      continue;
    }
    if (name === 'plaintext') break;
    if (CLOSES_OWN_KIND.has(name) && n > 0) continue;
    open.set(name, n + 1);
    if (name === 'svg' || name === 'math') foreign++;
    if (++depth > max) max = depth;
  }
  return max;
}

/** Whether a page may nest deeper than the limit (the parser adds up to 5 levels of its own). */
export const needsCap = (html: string, limit = MAX_DEPTH) => nestingBound(html) + 5 > limit;

/**
 * The page re-serialised with every element that would sit deeper than `limit` attached to its
 * parent's parent instead (as Chromium's parser does at 512), moved elements left empty dropped,
 * and whether anything was moved.
 */
export function capNesting(html: string, limit = MAX_DEPTH): { html: string; flattened: boolean } {
  if (!needsCap(html, limit)) return { html, flattened: false };
  type Map = DefaultTreeAdapterMap;
  const base = defaultTreeAdapter;
  const moved: Map['element'][] = [];
  // depth of a parent node: elements up to the document (a template's content starts again at 0)
  const depthOf = (node: Map['parentNode']): number => {
    let d = 0;
    for (let p: Map['parentNode'] | null = node; p && 'tagName' in p; p = p.parentNode) d++;
    return d;
  };
  const shallower = (parent: Map['parentNode'], node: Map['childNode']): Map['parentNode'] => {
    if (!('tagName' in node) || !('tagName' in parent) || !parent.parentNode || depthOf(parent) < limit) return parent;
    moved.push(node as Map['element']);
    return parent.parentNode;
  };
  const adapter: TreeAdapter<Map> = {
    ...base,
    appendChild(parent, node) {
      base.appendChild(shallower(parent, node), node);
    },
    insertBefore(parent, node, ref) {
      const to = shallower(parent, node);
      if (to === parent) base.insertBefore(parent, node, ref);
      else base.appendChild(to, node);
    },
  };
  const doc = parse(html, { treeAdapter: adapter });
  // A moved element gets no element children (they are moved beside it): the wrappers a deep chain
  // is made of are left holding nothing but whitespace. Thousands of empty siblings would cost
  // Readability as much as the depth did (it walks siblings with live lists), so they go.
  for (const el of moved) {
    if (el.childNodes.every((c) => 'value' in c && !/\S/.test(c.value) && c.nodeName === '#text') && el.parentNode) base.detachNode(el);
  }
  return { html: serialize(doc), flattened: moved.length > 0 };
}
